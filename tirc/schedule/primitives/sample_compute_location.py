"""sample_compute_location: where to compute a block, replayed from the plan.

The candidates are TVM's: inline (-2), the root of the scope (-1), and the loops of the
block's first consumer, by index from the outermost, up to the consumers' lowest common
ancestor, skipping unit loops and stopping past the data-parallel ones, where compute_at
applies. A decision that is not a candidate falls back to the candidate before it.
Decision 1 → loop j of the consumer's `for i, j`.
"""

from __future__ import annotations

import bisect

from tirc.ir.expr import IntImm
from tirc.ir.functor import walk
from tirc.ir.stmt import IterType, SBlockRealize
from tirc.schedule.compute_location import move_block_under_loop, related_blocks
from tirc.schedule.errors import ScheduleError
from tirc.schedule.location import LocationMark
from tirc.schedule.primitives import primitive
from tirc.schedule.schedule import Schedule
from tirc.schedule.signature import Kind, Param, Signature
from tirc.schedule.sref import SRef


@primitive(
    Signature(
        "sample_compute_location",
        "SampleComputeLocation",
        inputs=(Param("block", Kind.BLOCK),),
        outputs="one",
    )
)
def sample_compute_location(
    sch: Schedule, block: SRef, decision: object = None
) -> SRef | LocationMark:
    if decision is None:
        raise ScheduleError(
            "the plan gives no decision; tirc replays plans and does not sample", block
        )
    if not isinstance(decision, int) or isinstance(decision, bool) or decision < -2:
        raise ScheduleError(
            f"the decision {decision!r} is not -2 (inline), -1 (root) or a loop index", block
        )
    indices, locations = _candidates(sch, block, decision)
    position = bisect.bisect_left(indices, decision)
    if position < len(indices) and indices[position] == decision:
        return locations[position]
    if position > 0:
        return locations[position - 1]
    return LocationMark.ROOT


def compute_locations(sch: Schedule, block: SRef) -> list[int]:
    """The decisions that name a legal location of `block` (-1, the root, first; then loop
    indices): what a sampler draws from."""
    return _candidates(sch, block, -1)[0]


def _candidates(
    sch: Schedule, block: SRef, decision: int
) -> tuple[list[int], list[SRef | LocationMark]]:
    """The legal locations of `block`, with their indices (sorted)."""
    # Whether the block can be inlined is the inlining primitive's to say; a plan's -2 came
    # from a schedule that could, so it is taken as a candidate.
    indices: list[int] = [-2] if decision == -2 else []
    locations: list[SRef | LocationMark] = [LocationMark.INLINE] if decision == -2 else []
    indices.append(-1)
    locations.append(LocationMark.ROOT)
    root = block.enclosing_block()
    if root is None:
        return indices, locations
    consumers = related_blocks(sch.state_owning(block).scope(root), block, upstream=False)
    if not consumers:
        return indices, locations
    boundary = _lowest_common_ancestor(consumers) if len(consumers) > 1 else consumers[0].parent
    loops = sch.loops_above(consumers[0])
    if boundary is None or not boundary.is_loop or all(boundary is not s for s in loops):
        return indices, locations
    count = next(i for i, s in enumerate(loops) if s is boundary) + 1
    kinds = [_loop_iter_type(loop) for loop in loops[:count]]
    last_data_parallel = max((i for i, k in enumerate(kinds) if k is IterType.SPATIAL), default=-1)
    visited_reduce = False
    for position in range(count):
        extent = loops[position].loop.extent
        if isinstance(extent, IntImm) and extent.value == 1:
            continue
        if kinds[position] is IterType.SPATIAL:
            if visited_reduce:
                break
        else:
            visited_reduce = True
            if position > last_data_parallel:
                break
        try:
            move_block_under_loop(sch, block, loops[position], True, -1, True, check_only=True)
        except ScheduleError:
            continue
        indices.append(position)
        locations.append(loops[position])
    return indices, locations


def _lowest_common_ancestor(srefs: list[SRef]) -> SRef | None:
    counts: dict[int, int] = {}
    for sref in srefs:
        node: SRef | None = sref
        while node is not None:
            counts[id(node)] = counts.get(id(node), 0) + 1
            node = node.parent
    node = srefs[0]
    while node is not None and counts.get(id(node)) != len(srefs):
        node = node.parent
    return node


def _loop_iter_type(loop: SRef) -> IterType:
    """Data-parallel when it feeds only spatial iterators, a reduction when only reduction
    ones, opaque when both or others (TVM's classification of a loop)."""
    var = loop.loop.loop_var
    spatial = reduce = other = 0

    def visit(node: object) -> None:
        nonlocal spatial, reduce, other
        if not isinstance(node, SBlockRealize):
            return
        for iter_var, value in zip(node.block.iter_vars, node.iter_values, strict=False):
            uses = _count_uses(value, var)
            if iter_var.iter_type is IterType.SPATIAL:
                spatial += uses
            elif iter_var.iter_type is IterType.REDUCE:
                reduce += uses
            else:
                other += uses

    walk(loop.loop.body, visit)
    if other or (spatial and reduce):
        return IterType.OPAQUE
    return IterType.REDUCE if reduce else IterType.SPATIAL


def _count_uses(expr: object, var: object) -> int:
    found = 0

    def visit(node: object) -> None:
        nonlocal found
        if node is var:
            found += 1

    walk(expr, visit)
    return found

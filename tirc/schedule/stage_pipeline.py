"""The stage-pipeline precondition of the primitives that move or merge computation
(compute_at, reverse_compute_at, compute_inline, reverse_compute_inline, rfactor).

A scope is a stage pipeline when no block overwrites what an earlier one reads (no
write-after-read dependence) and every block's producers cover what it reads from them: the
region a consumer reads, relaxed over the loops below its lowest common ancestor with the
producer, lies inside the region the producer writes, relaxed the same way. The cover is
refused only where the bounds are constants that prove a gap; a symbolic bound we cannot
compare is let through.
"""

from __future__ import annotations

from tirc.ir.buffer import BufferRegion
from tirc.ir.expr import IntImm
from tirc.schedule.errors import ScheduleError
from tirc.schedule.region_bound import relax_block_region
from tirc.schedule.schedule import describe
from tirc.schedule.scope import BlockScope, DepKind
from tirc.schedule.sref import SRef
from tirc.schedule.state import ScheduleState


def stage_pipeline_root(state: ScheduleState, block: SRef) -> SRef:
    """The block's scope root, which must be a stage pipeline."""
    root = block.enclosing_block()
    if root is None:
        raise ScheduleError("the primitive does not operate on the root block", block)
    scope = state.scope(root)
    for deps in scope.deps_by_dst.values():
        for dep in deps:
            if dep.kind is DepKind.WAR:
                raise ScheduleError(
                    f"the scope {describe(root)} is not a stage pipeline: {describe(dep.dst)} "
                    f"overwrites what {describe(dep.src)} reads (a write-after-read dependence)",
                    root,
                )
    _check_region_cover(scope, root)
    return root


def _check_region_cover(scope: BlockScope, root: SRef) -> None:
    for consumer in scope.blocks:
        producers = [d.src for d in scope.deps_to(consumer) if d.kind is DepKind.RAW]
        for read in consumer.block.reads:
            writers = [p for p in producers if _written(p, read)]
            if len(writers) != 1:
                continue  # several producers: their union is not an interval to compare
            producer = writers[0]
            write = _written(producer, read)
            assert write is not None
            lca = _lowest_common_ancestor(consumer, producer)
            consumed = relax_block_region(read, consumer, lca)
            produced = relax_block_region(write, producer, lca)
            gap = _provable_gap(consumed, produced)
            if gap is not None:
                dim, want, have = gap
                raise ScheduleError(
                    f"the scope {describe(root)} is not a stage pipeline: {describe(consumer)} "
                    f"reads [{want[0]}, {want[1]}) of {read.buffer.name} along dimension {dim}, "
                    f"but its producer {describe(producer)} writes only [{have[0]}, {have[1]}) "
                    "there (the producer's region does not cover the consumer's)",
                    consumer,
                    producer,
                )


def _written(producer: SRef, read: BufferRegion) -> BufferRegion | None:
    return next((w for w in producer.block.writes if w.buffer is read.buffer), None)


def _lowest_common_ancestor(a: SRef, b: SRef) -> SRef | None:
    above_a = {id(node) for node in a.ancestors()}
    node = b.parent
    while node is not None and id(node) not in above_a:
        node = node.parent
    return node


def _provable_gap(
    consumed: BufferRegion, produced: BufferRegion
) -> tuple[int, tuple[int, int], tuple[int, int]] | None:
    """(dimension, consumed [lo, hi), produced [lo, hi)) where constant bounds show the
    consumed range passing the produced one; None when covered or not provably uncovered."""
    for dim, (want, have) in enumerate(zip(consumed.region, produced.region, strict=True)):
        ends = [
            end.value
            for end in (want.min, want.extent, have.min, have.extent)
            if isinstance(end, IntImm)
        ]
        if len(ends) != 4:
            continue
        lo, extent, have_lo, have_extent = ends
        if lo < have_lo or lo + extent > have_lo + have_extent:
            return dim, (lo, lo + extent), (have_lo, have_lo + have_extent)
    return None

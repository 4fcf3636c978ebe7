"""rolling_buffer: an intermediate buffer computed tile by tile under a loop keeps only the
window one tile needs along one axis, used circularly (`index % window`); a tile skips the
elements the previous tile along that axis already computed.

The rolling axis is the outermost loop `v` that a dimension of the producer's region per tile
starts at as `v * stride` (or `v`, or `v * stride // d`) with a window wider than the stride;
the overlap `window - stride` is what the next tile reuses; a dimension that starts at
anything else but a constant (`h + r`) is refused, as TVM does. Each block of the scope has its
iterator at the rolling axis' position made opaque (TVM's rule).

    B = alloc((10, 16))                          B = alloc((6, 16))
    for t in range(2):                           for t in range(2):
        for ax0 in range(6):                         for ax0 in range(6):
            B[t * 4 + ax0, ...] = ...      →             T.where(t < 1 or 2 <= ax0)
        ... B[t * 4 + i + r, ...] ...                    B[(t * 4 + ax0) % 6, ...] = ...
                                                     ... B[(t * 4 + i + r) % 6, ...] ...
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

from tirc.analysis.arith import Analyzer
from tirc.analysis.region_bound import estimate_region
from tirc.analysis.regions import infer_access_regions
from tirc.ir import expr as E
from tirc.ir import stmt as S
from tirc.ir.buffer import Buffer, BufferRegion, Range
from tirc.ir.dtype import BOOL
from tirc.ir.expr import IntImm, PrimExpr, Var, is_true
from tirc.ir.functor import Mutator
from tirc.ir.stmt import IterType, SBlock, SBlockRealize
from tirc.ir.substitute import substitute
from tirc.schedule.errors import ScheduleError
from tirc.schedule.inline import data_buffers
from tirc.schedule.primitives import primitive
from tirc.schedule.properties import realize_of
from tirc.schedule.schedule import Schedule, describe
from tirc.schedule.scope import DepKind
from tirc.schedule.signature import Kind, Param, Signature
from tirc.schedule.sref import SRef
from tirc.schedule.state import ScheduleState
from tirc.text import script


@dataclass(frozen=True)
class _Axis:
    """What one buffer dimension's per-tile region says: the loop its start follows and how
    many elements consecutive tiles share (only dimensions with a positive overlap)."""

    var: Var
    overlap: int


@dataclass(frozen=True)
class _Rolling:
    old: Buffer
    new: Buffer
    axis: int
    window: int
    overlaps: dict[int, _Axis]  # by buffer dimension


@primitive(
    Signature(
        "rolling_buffer",
        "RollingBuffer",
        inputs=(Param("block", Kind.BLOCK),),
        attrs=(Param("write_buffer_index", Kind.INT),),
        outputs="none",
        doc="Keep only a sliding window of a tiled intermediate buffer, used circularly.",
    )
)
def rolling_buffer(sch: Schedule, block: SRef, write_buffer_index: int) -> None:
    state = sch.state_owning(block)
    if not block.is_block:
        raise ScheduleError(f"rolling_buffer takes a block, not {describe(block)}", block)
    region = _written_region(block, int(write_buffer_index))
    _check_not_output(state, block)
    owner = _allocating_block(block, region.buffer)
    scope_root = block.enclosing_block()
    assert scope_root is not None, "a block below the root has a scope"
    _check_only_raw(state, block)
    lca = _lowest_common_ancestor(block, state.scope(scope_root).consumers(block))
    if lca is None or not lca.is_loop:
        raise ScheduleError(
            f"{describe(block)} must be tiled so that it and the consumers of "
            f"{region.buffer.name} share a loop (compute it at a loop of its consumer first)",
            block,
        )
    rolling = _match_rolling(block, region, lca)
    new_owner, reuse = _rewrite(state, owner, block, region, rolling)
    state.replace(owner, new_owner, reuse)


# -- legality -------------------------------------------------------------------------------


def _written_region(block: SRef, index: int) -> BufferRegion:
    writes = block.block.writes
    if not 0 <= index < len(writes):
        raise ScheduleError(
            f"{describe(block)} writes {len(writes)} buffer(s): write_buffer_index must be in "
            f"[0, {len(writes)}), not {index}",
            block,
        )
    return writes[index]


def _check_not_output(state: ScheduleState, block: SRef) -> None:
    params = {id(buffer) for _, buffer in state.func.buffer_map}
    for region in block.block.writes:
        if id(region.buffer) in params:
            raise ScheduleError(
                f"{describe(block)} is an output block: it writes {region.buffer.name}, a "
                "parameter of the function",
                block,
            )


def _allocating_block(block: SRef, buffer: Buffer) -> SRef:
    node = block.enclosing_block()
    while node is not None:
        if any(b is buffer for b in node.block.alloc_buffers):
            return node
        node = node.enclosing_block()
    raise ScheduleError(
        f"{buffer.name} is not allocated by a block around {describe(block)}: only an "
        "intermediate buffer can roll",
        block,
    )


def _check_only_raw(state: ScheduleState, block: SRef) -> None:
    enclosing = block.enclosing_block()
    assert enclosing is not None  # the function's root block encloses every other block
    scope = state.scope(enclosing)
    for dependency in scope.deps_from(block) + scope.deps_to(block):
        if dependency.kind is not DepKind.RAW:
            other = dependency.dst if dependency.src is block else dependency.src
            raise ScheduleError(
                f"{describe(block)} has a {dependency.kind.value} dependence with "
                f"{describe(other)}: a rolling buffer needs a producer whose only dependences "
                "are its consumers reading what it wrote",
                block,
                other,
            )


def _lowest_common_ancestor(block: SRef, others: list[SRef]) -> SRef | None:
    chain = [block, *block.ancestors()]
    for other in others:
        above = {id(node) for node in [other, *other.ancestors()]}
        chain = [node for node in chain if id(node) in above]
    return chain[0] if chain else None


def _match_rolling(block: SRef, region: BufferRegion, lca: SRef) -> _Rolling:
    tile = _region_per_tile(block, region, lca)
    overlaps: dict[int, _Axis] = {}
    for dim, item in enumerate(tile.region):
        if not isinstance(item.min, IntImm) and _rolling_start(item.min) is None:
            raise ScheduleError(
                f"the region of {region.buffer.name} that {describe(block)} writes per tile "
                f"starts at {_text(item.min)} along dimension {dim}, neither a constant nor "
                "`loop * stride` (or `loop`, `loop * stride // d`): how tiles overlap there is "
                "unknown",
                block,
            )
        found = _rolling_pattern(item)
        if found is not None and found.overlap > 0:
            overlaps[dim] = found
    axis = None
    for node in reversed(block.ancestors()):  # outermost loop first
        if node.is_loop:
            dims = [dim for dim, found in overlaps.items() if found.var is node.loop.loop_var]
            if dims:
                axis = dims[0]
                break
    if axis is None:
        shown = ", ".join(f"{_text(r.min)}:+{_text(r.extent)}" for r in tile.region)
        raise ScheduleError(
            f"the region of {region.buffer.name} that {describe(block)} writes per tile, "
            f"[{shown}], has no dimension that starts at `loop * stride` with a window wider "
            "than the stride: there is nothing to roll",
            block,
        )
    window = tile.region[axis].extent
    assert isinstance(window, IntImm)
    shape = list(region.buffer.shape)
    shape[axis] = window
    new = dataclasses.replace(region.buffer, shape=tuple(shape))
    return _Rolling(region.buffer, new, axis, window.value, overlaps)


def _region_per_tile(block: SRef, region: BufferRegion, lca: SRef) -> BufferRegion:
    """The written region through the bindings, relaxed over the loops below `lca`."""
    realize = realize_of(block)
    binding = dict(zip((iv.var for iv in block.block.iter_vars), realize.iter_values, strict=True))
    domains = {}
    node = block.parent
    while node is not None and node is not lca and node.is_loop:
        domains[node.loop.loop_var] = Range(node.loop.min, node.loop.extent)
        node = node.parent
    return estimate_region(substitute(region, binding), domains, IntImm(1, BOOL))


def _rolling_pattern(item: Range) -> _Axis | None:
    """`v * s // d`, `v * s`, `s * v` or `v` as the start, with a constant window."""
    start = _rolling_start(item.min)
    if start is None or not isinstance(item.extent, IntImm):
        return None
    var, stride = start
    return _Axis(var, item.extent.value - stride)


def _rolling_start(start: PrimExpr) -> tuple[Var, int] | None:
    """(v, stride) of a start `v * s // d` (stride ceil(s / d)), `v * s`, `s * v` or `v`."""
    if isinstance(start, E.FloorDiv) and isinstance(start.b, IntImm):
        product = _var_times_const(start.a)
        if product is None:
            return None
        return product[0], math.ceil(product[1] / start.b.value)
    if isinstance(start, Var):
        return start, 1
    return _var_times_const(start)


def _var_times_const(expr: PrimExpr) -> tuple[Var, int] | None:
    if isinstance(expr, E.Mul):
        if isinstance(expr.a, Var) and isinstance(expr.b, IntImm):
            return expr.a, expr.b.value
        if isinstance(expr.b, Var) and isinstance(expr.a, IntImm):
            return expr.b, expr.a.value
    return None


# -- rewrite ---------------------------------------------------------------------------------


def _rewrite(
    state: ScheduleState, owner: SRef, block: SRef, region: BufferRegion, rolling: _Rolling
) -> tuple[SBlock, dict[SBlock, SBlock]]:
    guard = _skip_overlap(block, region, rolling)
    buffers = data_buffers(state.func, owner)
    buffers[rolling.new.data] = rolling.new
    rewriter = _Roller(rolling, block.block, guard, buffers)
    new_owner: SBlock = rewriter.visit_SBlock(owner.block, is_owner=True)
    return new_owner, rewriter.reuse


def _skip_overlap(block: SRef, region: BufferRegion, rolling: _Rolling) -> PrimExpr:
    """`v < 1 or overlap <= position in the tile`, per dimension with an overlap: the first
    tile computes everything, the others only what the previous tile did not."""
    realize = realize_of(block)
    binding = dict(zip((iv.var for iv in block.block.iter_vars), realize.iter_values, strict=True))
    analyzer = Analyzer()
    condition = realize.predicate
    for dim, found in sorted(rolling.overlaps.items()):
        index = substitute(region.region[dim].min, binding)
        dtype = found.var.dtype
        position = analyzer.simplify(substitute(index, {found.var: IntImm(0, dtype)}))
        test = E.Or(E.LT(found.var, IntImm(1, dtype)), E.LE(IntImm(found.overlap, dtype), position))
        condition = test if is_true(condition) else E.And(condition, test)
    return analyzer.simplify(condition)


class _Roller(Mutator):
    """Folds the buffer along the rolling axis in every access, region and allocation below
    the allocating block, makes each block's iterator at that position opaque, and guards the
    producer."""

    def __init__(
        self, rolling: _Rolling, producer: SBlock, guard: PrimExpr, buffers: dict[Var, Buffer]
    ):
        self.rolling = rolling
        self.producer = producer
        self.guard = guard
        self.buffers = buffers
        self.reuse: dict[SBlock, SBlock] = {}

    def fold(self, indices: tuple[PrimExpr, ...]) -> tuple[PrimExpr, ...]:
        axis, window = self.rolling.axis, self.rolling.window
        index = indices[axis]
        folded = E.FloorMod(index, IntImm(window, index.dtype))
        return indices[:axis] + (folded,) + indices[axis + 1 :]

    def visit_BufferLoad(self, node: E.BufferLoad) -> PrimExpr:
        node = self.generic_visit(node)
        if node.buffer is not self.rolling.old:
            return node
        return dataclasses.replace(node, buffer=self.rolling.new, indices=self.fold(node.indices))

    def visit_BufferStore(self, node: S.BufferStore) -> S.Stmt:
        node = self.generic_visit(node)
        if node.buffer is not self.rolling.old:
            return node
        return dataclasses.replace(node, buffer=self.rolling.new, indices=self.fold(node.indices))

    def visit_SBlockRealize(self, node: SBlockRealize) -> SBlockRealize:
        new: SBlockRealize = self.generic_visit(node)
        if node.block is self.producer:
            new = dataclasses.replace(new, predicate=self.guard)
        return new

    def visit_SBlock(self, node: SBlock, is_owner: bool = False) -> SBlock:
        visited: SBlock = self.generic_visit(node)
        new = visited
        if is_owner:
            allocated = tuple(
                self.rolling.new if b is self.rolling.old else b for b in new.alloc_buffers
            )
            new = dataclasses.replace(new, alloc_buffers=allocated)
        else:
            axis = self.rolling.axis
            if axis < len(new.iter_vars) and new.iter_vars[axis].iter_type is not IterType.OPAQUE:
                iter_vars = list(new.iter_vars)
                iter_vars[axis] = dataclasses.replace(iter_vars[axis], iter_type=IterType.OPAQUE)
                new = dataclasses.replace(new, iter_vars=tuple(iter_vars))
        touched = any(r.buffer is self.rolling.old for r in node.reads + node.writes)
        if touched:  # the regions of the block as visited, before the changes above
            reads, writes = infer_access_regions(visited, self.buffers)
            new = dataclasses.replace(
                new,
                reads=self.regions(visited.reads, reads),
                writes=self.regions(visited.writes, writes),
            )
        if new is not node:
            self.reuse[node] = new
        return new

    def regions(
        self, declared: tuple[BufferRegion, ...], inferred: tuple[BufferRegion, ...]
    ) -> tuple[BufferRegion, ...]:
        """The declared regions, with the rolled buffer's taken from the folded body."""
        found = next((r for r in inferred if r.buffer is self.rolling.new), None)
        result = []
        for region in declared:
            if region.buffer is not self.rolling.old:
                result.append(region)
            elif found is not None:
                result.append(found)
            else:
                ranges = list(region.region)
                axis = self.rolling.axis
                start = ranges[axis].min
                folded = E.FloorMod(start, IntImm(self.rolling.window, start.dtype))
                ranges[axis] = Range(folded, ranges[axis].extent)
                result.append(BufferRegion(self.rolling.new, tuple(ranges)))
        return tuple(result)


def _text(expr: PrimExpr) -> str:
    return script(expr)

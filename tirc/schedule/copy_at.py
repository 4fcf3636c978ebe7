"""What read_at and write_at share: a copy block between a buffer and a cache of it in
another storage scope, placed in a loop's body, as TVM 0.27 places it. It covers what every
block under the loop that reads (read_at) or writes (write_at) the buffer accesses in one
iteration of the loop, each region relaxed as an interval over the loops between its block
and the loop (and the thread loops above that share the cache: a shared cache spans threadIdx
and vthread loops). Where that passes the buffer's bounds (a padding block's `X[vw - 1]`,
guarded by its condition), the copy is cut to the buffer: TVM 0.27 copies from outside it.
A read copy goes before the first child of the loop's body that reads the buffer, and every
child from there on reads the cache instead (no child may write the buffer before that); a
write copy goes after the last child that writes it, and every child up to there writes the
cache (no child may read the buffer after that).

The copy block is named after the cache (`A_shared`), annotated `auto_copy`, and iterates
over the loops (up to and including the chosen one) its region depends on, in the order the
region mentions them; its body copies the region element by element.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Callable
from typing import Any

from tirc.analysis.arith import Analyzer
from tirc.analysis.region_bound import clamp_to_buffer, relax_regions
from tirc.ir import dtype as dt
from tirc.ir import expr as E
from tirc.ir.arith import arithmetic, match_types
from tirc.ir.buffer import Buffer, BufferRegion, Range
from tirc.ir.expr import BufferLoad, IntImm, PrimExpr, Var
from tirc.ir.functor import Mutator, Visitor, walk
from tirc.ir.stmt import (
    Attrs,
    BufferStore,
    For,
    IterType,
    IterVar,
    SBlock,
    SBlockRealize,
    SeqStmt,
    Stmt,
)
from tirc.ir.substitute import substitute
from tirc.schedule.block_region import loop_domains
from tirc.schedule.buffer_access import AccessKind, nth_buffer
from tirc.schedule.errors import ScheduleError
from tirc.schedule.rebind import serial_loop
from tirc.schedule.schedule import Schedule, describe
from tirc.schedule.sref import SRef
from tirc.schedule.stage_pipeline import stage_pipeline_root
from tirc.schedule.state import ScheduleState
from tirc.schedule.storage_scope import check_storage_scope, with_scope


class Direction(enum.Enum):
    READ = "read"  # copy in before the loop's body
    WRITE = "write"  # copy out after it


def copy_at(
    sch: Schedule,
    loop: SRef,
    block: SRef,
    buffer_index: int,
    storage_scope: str,
    direction: Direction,
) -> SRef:
    state = sch.state_owning(block)
    check_storage_scope(storage_scope, block)
    scope = block.enclosing_block()
    assert scope is not None, "the root block is under no loop"
    if not any(node is loop for node in block.ancestors()) or _scope_of(loop) is not scope:
        raise ScheduleError(
            f"{describe(loop)} is not a loop around {describe(block)} in its scope", loop, block
        )
    kind = AccessKind.READ if direction is Direction.READ else AccessKind.WRITE
    buffer = nth_buffer(block, buffer_index, kind)
    body = loop.loop.body
    children = list(body.stmts) if isinstance(body, SeqStmt) else [body]
    accesses = [_Accesses(state, loop, buffer, storage_scope, child) for child in children]
    reads = [i for i, access in enumerate(accesses) if access.reads]
    writes = [i for i, access in enumerate(accesses) if access.writes]
    if direction is Direction.READ:
        if writes and writes[-1] >= reads[0]:
            raise ScheduleError(
                f"{buffer.name} is written in the body of {describe(loop)} at or before its "
                "first read there: read_at copies it in before the first read",
                loop,
                block,
            )
        position, redirected = reads[0], range(reads[0], len(children))
    else:
        if reads and reads[-1] > writes[-1]:
            raise ScheduleError(
                f"{buffer.name} is read in the body of {describe(loop)} after its last write "
                "there: write_at copies it out after the last write",
                loop,
                block,
            )
        position, redirected = writes[-1] + 1, range(writes[-1] + 1)
    regions = [region for access in accesses for region in access.regions(direction)]
    stage_pipeline_root(state, block)
    cache = with_scope(buffer, storage_scope)
    region, loops = clamp_to_buffer(_union(buffer, regions)), _outer_loops(loop, scope)
    _check_bound_by_loops(region, loops, loop)
    copy = _copy_nest(region, cache, loops, direction)
    redirect = _Redirect(buffer, cache)
    children = [
        redirect.visit(child) if i in redirected else child for i, child in enumerate(children)
    ]
    children.insert(position, copy)
    new_loop = dataclasses.replace(loop.loop, body=SeqStmt(tuple(children)))
    root = scope.block
    replaced = _Swap(loop.loop, new_loop).visit(root)
    new_root = dataclasses.replace(replaced, alloc_buffers=root.alloc_buffers + (cache,))
    state.replace(scope, new_root, dict(redirect.blocks))
    return state.get_sref(_first_block(copy))


class _Accesses(Visitor):
    """Whether the outermost blocks of one child of the loop's body read and write the
    buffer, and the regions they access, each relaxed over the loops between the block and
    the loop (and the thread loops above that share the cache), as intervals."""

    def __init__(self, state: ScheduleState, loop: SRef, buffer: Buffer, scope: str, child: Stmt):
        self.state, self.loop, self.buffer, self.scope = state, loop, buffer, scope
        self.reads = self.writes = False
        self.read_regions: list[BufferRegion] = []
        self.write_regions: list[BufferRegion] = []
        self.visit(child)

    def regions(self, direction: Direction) -> list[BufferRegion]:
        return self.read_regions if direction is Direction.READ else self.write_regions

    def visit_SBlockRealize(self, node: SBlockRealize) -> None:
        block = node.block
        binding = dict(zip((iv.var for iv in block.iter_vars), node.iter_values, strict=True))
        sref = self.state.get_sref(block)
        domains = loop_domains(sref.parent, self.loop, self.scope)
        for regions, found in (
            (block.reads, self.read_regions),
            (block.writes, self.write_regions),
        ):
            for region in regions:
                if region.buffer is self.buffer:
                    found.extend(relax_regions((substitute(region, binding),), domains))
        self.reads = self.reads or any(r.buffer is self.buffer for r in block.reads)
        self.writes = self.writes or any(w.buffer is self.buffer for w in block.writes)


def _check_bound_by_loops(region: BufferRegion, loops: list[For], loop: SRef) -> None:
    """The copy iterates over the loops its region depends on: any other variable there (a
    shape, an iterator of a block above) has no loop to take it from."""
    bound = {node.loop_var for node in loops}
    free: list[Var] = []
    walk(region.region, lambda node: free.append(node) if isinstance(node, Var) else None)
    for var in free:
        if var not in bound:
            raise ScheduleError(
                f"the region of {region.buffer.name} to copy at {describe(loop)} depends on "
                f"{var.name}, which is not a loop from its scope down to {describe(loop)}",
                loop,
            )


def _union(buffer: Buffer, regions: list[BufferRegion]) -> BufferRegion:
    """Per dimension the smallest interval holding every region's."""
    analyzer = Analyzer()
    ranges = []
    for dim in range(len(buffer.shape)):
        items = [region.region[dim] for region in regions]
        low, high = items[0].min, _end(items[0])
        for item in items[1:]:
            low = _pick(analyzer, low, item.min, E.LE, E.Min)
            high = _pick(analyzer, high, _end(item), E.GE, E.Max)
        ranges.append(Range(analyzer.simplify(low), analyzer.simplify(arithmetic("-", high, low))))
    return BufferRegion(buffer, tuple(ranges))


def _end(item: Range) -> PrimExpr:
    return arithmetic("+", item.min, item.extent)


def _pick(
    analyzer: Analyzer,
    a: PrimExpr,
    b: PrimExpr,
    keeps: Callable[[PrimExpr, PrimExpr], PrimExpr],
    both: Callable[[PrimExpr, PrimExpr], PrimExpr],
) -> PrimExpr:
    """`a` where `keeps(a, b)` holds, `b` where the reverse does, else `both(a, b)`."""
    a, b = match_types(a, b)
    if analyzer.can_prove(keeps(a, b)):
        return a
    if analyzer.can_prove(keeps(b, a)):
        return b
    return both(a, b)


def _scope_of(loop: SRef) -> SRef | None:
    node = loop.parent
    while node is not None and node.is_loop:
        node = node.parent
    return node


def _outer_loops(loop: SRef, scope: SRef) -> list[For]:
    """The loops from the scope down to `loop`, outermost first."""
    found: list[For] = []
    node: SRef | None = loop
    while node is not None and node is not scope:
        if node.is_loop:
            found.append(node.loop)
        node = node.parent
    return list(reversed(found))


def _copy_nest(region: BufferRegion, cache: Buffer, loops: list[For], direction: Direction) -> Stmt:
    by_var = {node.loop_var: node for node in loops}
    used: list[Var] = []

    def look(node: object) -> None:
        if isinstance(node, Var) and node in by_var and node not in used:
            used.append(node)

    for item in region.region:
        walk(item.min, look)
        walk(item.extent, look)
    block_vars = [Var(f"v{position}", var.dtype) for position, var in enumerate(used)]
    renamed = substitute(region, dict(zip(used, block_vars, strict=True)))
    # a constant extent makes an int32 copy loop, cast where the buffer is indexed in int64,
    # as TVM builds it (`for ax in T.grid(2048)`: `v0 + T.Cast("int64", ax)`)
    extents = [_int32_if_constant(item.extent) for item in renamed.region]
    axes = [Var(f"ax{position}", extent.dtype) for position, extent in enumerate(extents)]
    indices = tuple(
        arithmetic(
            "+", item.min, axis if axis.dtype == item.min.dtype else E.Cast(item.min.dtype, axis)
        )
        for item, axis in zip(renamed.region, axes, strict=True)
    )
    source, target = (
        (region.buffer, cache) if direction is Direction.READ else (cache, region.buffer)
    )
    body: Stmt = BufferStore(target, BufferLoad(source, indices), indices)
    for axis, extent in reversed(list(zip(axes, extents, strict=True))):
        body = serial_loop(axis, extent, body)
    iter_vars = tuple(
        IterVar(var, Range(by_var[loop_var].min, by_var[loop_var].extent), IterType.SPATIAL)
        for var, loop_var in zip(block_vars, used, strict=True)
    )
    block = SBlock(
        cache.name,
        iter_vars,
        (BufferRegion(source, renamed.region),),
        (BufferRegion(target, renamed.region),),
        body,
        annotations=Attrs((("auto_copy", True),)),
    )
    return SBlockRealize(tuple(used), IntImm(1, dt.BOOL), block)


def _int32_if_constant(extent: PrimExpr) -> PrimExpr:
    if isinstance(extent, IntImm) and extent.dtype != dt.INT32 and extent.value < 2**31:
        return IntImm(extent.value, dt.INT32)
    return extent


def _child_index(loop: SRef, block: SRef) -> int:
    """The position, in the loop's body, of the statement that holds the block."""

    node = block
    while node.parent is not loop:
        assert node.parent is not None
        node = node.parent
    body = loop.loop.body
    if not isinstance(body, SeqStmt):
        return 0
    for index, child in enumerate(body.stmts):
        if child is node.stmt or (isinstance(child, SBlockRealize) and child.block is node.stmt):
            return index
    raise AssertionError("the block's ancestor is a child of the loop")


def _first_block(stmt: Stmt) -> SBlock:
    found: list[SBlock] = []
    walk(stmt, lambda node: found.append(node) if isinstance(node, SBlock) else None)
    return found[0]


class _Redirect(Mutator):
    """Accesses to `old` (bodies, inits, regions) go to `new` instead; `blocks` maps each
    block rewritten to its new self."""

    def __init__(self, old: Buffer, new: Buffer):
        self.old, self.new = old, new
        self.blocks: dict[SBlock, SBlock] = {}

    def visit_SBlock(self, node: SBlock) -> SBlock:
        new: SBlock = self.generic_visit(node)
        self.blocks[node] = new
        return new

    def visit_BufferLoad(self, node: BufferLoad) -> PrimExpr:
        new: BufferLoad = self.generic_visit(node)
        return dataclasses.replace(new, buffer=self.new) if new.buffer is self.old else new

    def visit_BufferStore(self, node: BufferStore) -> Stmt:
        new: BufferStore = self.generic_visit(node)
        return dataclasses.replace(new, buffer=self.new) if new.buffer is self.old else new

    def visit_BufferRegion(self, node: BufferRegion) -> BufferRegion:
        new: BufferRegion = self.generic_visit(node)
        return dataclasses.replace(new, buffer=self.new) if new.buffer is self.old else new


class _Swap(Mutator):
    def __init__(self, old: For | SBlock, new: For | SBlock):
        self.old, self.new = old, new

    def visit(self, node: Any) -> Any:
        return self.new if node is self.old else super().visit(node)

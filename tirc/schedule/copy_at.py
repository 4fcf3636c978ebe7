"""What read_at and write_at share: a copy block between a buffer and a cache of it in
another storage scope, placed in a loop's body and covering what one block under the loop
accesses over one iteration of it and over the thread loops above that share the cache (a
shared cache spans threadIdx and vthread loops); the block then accesses the cache. A read
copy goes right before the loop's child that holds the block, a write copy right after.

The copy block is named after the cache (`A_shared`), annotated `auto_copy`, and iterates
over the loops (up to and including the chosen one) its region depends on, in the order the
region mentions them; its body copies the region element by element.
"""

from __future__ import annotations

import dataclasses
import enum

from tirc.ir import dtype as dt
from tirc.ir import expr as E
from tirc.ir.arith import arithmetic
from tirc.ir.buffer import Buffer, BufferRegion, Range
from tirc.ir.expr import BufferLoad, IntImm, PrimExpr, Var
from tirc.ir.functor import Mutator, walk
from tirc.ir.stmt import (
    Attrs,
    BufferStore,
    For,
    IterType,
    IterVar,
    SBlock,
    SBlockRealize,
    Stmt,
)
from tirc.ir.substitute import substitute
from tirc.schedule.buffer_access import AccessKind, nth_buffer, region_of
from tirc.schedule.cache_stage import with_stage_inserted
from tirc.schedule.errors import ScheduleError
from tirc.schedule.rebind import serial_loop
from tirc.schedule.region_bound import relax_block_region
from tirc.schedule.schedule import Schedule, describe
from tirc.schedule.sref import SRef
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
    regions = block.block.reads if kind is AccessKind.READ else block.block.writes
    region = region_of(regions, buffer)
    assert region is not None
    # the copy serves every thread that shares the cache: relax the thread loops it spans
    relaxed = relax_block_region(region, block, loop, scope=storage_scope)
    for item in relaxed.region:
        if not isinstance(item.extent, IntImm):
            raise ScheduleError(
                f"the region of {buffer.name} that {describe(block)} accesses in one iteration "
                f"of {describe(loop)} has a non-constant extent",
                loop,
                block,
            )
    cache = with_scope(buffer, storage_scope)
    copy = _copy_nest(relaxed, cache, _outer_loops(loop, scope), direction)
    new_block = _Redirect(buffer, cache).visit(block.block)
    # right before (after) the loop's child that holds the block, after (before) any copies
    # placed there earlier
    child = _child_index(loop, block)
    position = child if direction is Direction.READ else child + 1
    new_loop = with_stage_inserted(_Swap(block.block, new_block).visit(loop.loop), position, copy)
    root = scope.block
    replaced = _Swap(loop.loop, new_loop).visit(root)
    new_root = dataclasses.replace(replaced, alloc_buffers=root.alloc_buffers + (cache,))
    state.replace(scope, new_root, {block.block: new_block})
    return state.get_sref(_first_block(copy))


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
    from tirc.ir.stmt import SeqStmt

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
    """The block's accesses to `old` (body, init, regions) go to `new` instead."""

    def __init__(self, old: Buffer, new: Buffer):
        self.old, self.new = old, new

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

    def visit_For(self, node: For) -> For:
        if node is self.old:
            return self.new  # type: ignore[return-value]
        return self.generic_visit(node)

    def visit_SBlock(self, node: SBlock) -> SBlock:
        if node is self.old:
            return self.new  # type: ignore[return-value]
        return self.generic_visit(node)

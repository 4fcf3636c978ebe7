"""What reindex_cache_read and reindex_cache_write share: a cache whose layout an index map
of the block's iterators gives, copied by a stage that runs over the block's own iterators
(and the loops that bind them below the insertion point).

The block must access the buffer at a single point; each block iterator must appear in both
the original indices and the mapped ones, or in neither.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from tirc.analysis.arith import Analyzer
from tirc.diagnostics import DiagnosticError
from tirc.ir.buffer import Buffer, BufferRegion, Range
from tirc.ir.dtype import BOOL
from tirc.ir.expr import BufferLoad, IntImm, PointerType, PrimExpr, Var
from tirc.ir.functor import walk
from tirc.ir.stmt import (
    BufferStore,
    For,
    ForKind,
    IterType,
    IterVar,
    SBlock,
    SBlockRealize,
    Stmt,
    domain_of,
)
from tirc.ir.substitute import substitute
from tirc.schedule.errors import ScheduleError
from tirc.schedule.index_map import IndexMapError, parse_index_map
from tirc.schedule.properties import realize_of
from tirc.schedule.schedule import describe
from tirc.schedule.sref import SRef


@dataclass
class ReindexLayout:
    indices: tuple[PrimExpr, ...]  # the cache's indices, over the block's iterators
    shape: tuple[PrimExpr, ...]
    iter_vars: list[IterVar]  # the block iterators the stage runs over
    bindings: list[PrimExpr]
    loops: list[For]  # the loops those bindings use, outermost first


def _names(exprs: object) -> set[Var]:
    found: set[Var] = set()
    walk(exprs, lambda node: found.add(node) if isinstance(node, Var) else None)
    return found


def check_single_point(block: SRef, region: BufferRegion, primitive_name: str) -> None:
    for axis in region.region:
        if not (isinstance(axis.extent, IntImm) and axis.extent.value == 1):
            raise ScheduleError(
                f"{describe(block)} accesses a region of {region.buffer.name}, not a single "
                f"point, which {primitive_name} requires",
                block,
            )


def reindex_layout(
    block: SRef, location: SRef, index_map: str, region: BufferRegion, primitive_name: str
) -> ReindexLayout:
    node = block.block
    dtype = node.iter_vars[0].var.dtype if node.iter_vars else None
    try:
        mapping = parse_index_map(index_map, dtype_hint=dtype)
        analyzer = Analyzer()
        indices = mapping.map([iv.var for iv in node.iter_vars], analyzer)
        shape = mapping.map_shape([domain_of(iv).extent for iv in node.iter_vars])
    except (DiagnosticError, IndexMapError) as error:
        raise ScheduleError(
            f"the index map does not apply to {describe(block)}: {error}", block
        ) from None
    in_new = _names(indices)
    in_old = _names(tuple(axis.min for axis in region.region))
    realize = realize_of(block)
    iter_vars, bindings = [], []
    for iter_var, binding in zip(node.iter_vars, realize.iter_values, strict=True):
        if (iter_var.var in in_new) != (iter_var.var in in_old):
            where = "the buffer's indices" if iter_var.var in in_old else "the mapped indices"
            raise ScheduleError(
                f"{primitive_name}: the iterator {iter_var.var.name} of {describe(block)} "
                f"appears in {where} but not in the other",
                block,
            )
        if iter_var.var in in_new:
            iter_vars.append(iter_var)
            bindings.append(binding)
    used = _names(tuple(bindings))
    loops = []
    node_ref = block.parent
    while node_ref is not None and node_ref.is_loop and node_ref is not location:
        if node_ref.loop.loop_var in used:
            loops.append(node_ref.loop)
        node_ref = node_ref.parent
    return ReindexLayout(indices, shape, iter_vars, bindings, list(reversed(loops)))


def reindex_cache_buffer(buffer: Buffer, layout: ReindexLayout, scope: str) -> Buffer:
    data = Var(f"{buffer.data.name}_{scope}", buffer.data.dtype, PointerType(buffer.dtype, scope))
    return dataclasses.replace(buffer, name=f"{buffer.name}_{scope}", data=data, shape=layout.shape)


def make_reindex_stage(
    layout: ReindexLayout,
    region: BufferRegion,
    read_buffer: Buffer,
    write_buffer: Buffer,
    is_cache_read: bool,
    scope: str,
) -> tuple[SBlock, Stmt]:
    """The copy between the original buffer (at the block's indices) and the cache (at the
    mapped ones), over copies of the block's iterators and loops."""
    renamed: dict[Var, PrimExpr] = {}
    loop_vars = []
    for loop in layout.loops:
        var = Var(loop.loop_var.name, loop.loop_var.dtype)
        renamed[loop.loop_var] = var
        loop_vars.append(var)
    iter_vars, values = [], []
    for iter_var, binding in zip(layout.iter_vars, layout.bindings, strict=True):
        var = Var(iter_var.var.name, iter_var.var.dtype)
        iter_vars.append(IterVar(var, iter_var.dom, IterType.SPATIAL))
        values.append(substitute(binding, renamed))
        renamed[iter_var.var] = var
    old = [substitute(axis.min, renamed) for axis in region.region]
    new = [substitute(index, renamed) for index in layout.indices]
    read_indices, write_indices = (old, new) if is_cache_read else (new, old)
    block = SBlock(
        name=f"{region.buffer.name}_{scope}",
        iter_vars=tuple(iter_vars),
        reads=(_points(read_buffer, read_indices),),
        writes=(_points(write_buffer, write_indices),),
        body=BufferStore(
            write_buffer, BufferLoad(read_buffer, tuple(read_indices)), tuple(write_indices)
        ),
    )
    stmt: Stmt = SBlockRealize(tuple(values), IntImm(1, BOOL), block)
    for var, loop in reversed(list(zip(loop_vars, layout.loops, strict=True))):
        stmt = For(var, loop.min, loop.extent, ForKind.SERIAL, stmt)
    return block, stmt


def _points(buffer: Buffer, indices: list[PrimExpr]) -> BufferRegion:
    return BufferRegion(buffer, tuple(Range(index, IntImm(1, index.dtype)) for index in indices))

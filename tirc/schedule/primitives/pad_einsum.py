"""pad_einsum: round each iterator of an einsum block up to a multiple of its padding, running
it over padded copies of the buffers whose shape grows.

An einsum block, as TVM reads it from the block's declared regions, accesses each buffer once
(none both read and written: a reduction's output is not among its reads) at one element whose
indices are block iterators, constants or an enclosing block's variables (the einsum is then
only padded where that changes nothing: tirc refuses where TVM copies back elements the block
never wrote, as it does for an output written at a constant index of a wider dimension);
its body may be anything, a nested block included. A padded input `A` is filled first by a
block `A_pad` (zero outside `A`), and a padded output is copied back by a block `C_pad`
after it; both are allocated in the scope block. The loops bound to padded iterators get
the new extents; an iterator bound to anything but a loop variable (a constant, a fused
index) only has its domain grown.

    for i, k in T.grid(127, 64):        for i0, i1 in T.grid(128, 64):  # block "A_pad"
        C[vi] += A[vi, vk]        →         A_pad[v0, v1] = T.if_then_else(v0 < 127, A[v0, v1], 0)
    (padding [32, 1])                   for i, k in T.grid(128, 64): C_pad[vi] += A_pad[vi, vk]
                                        for i0 in range(127): C[v0] = C_pad[v0]  # "C_pad"
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tirc.analysis.arith import Analyzer
from tirc.ir import expr as E
from tirc.ir.buffer import Buffer, BufferRegion, Range, make_buffer
from tirc.ir.dtype import BOOL
from tirc.ir.expr import BufferLoad, FloatImm, IntImm, PrimExpr, Var
from tirc.ir.functor import Mutator
from tirc.ir.stmt import (
    BufferStore,
    For,
    IterType,
    IterVar,
    SBlock,
    SBlockRealize,
    SeqStmt,
    Stmt,
    domain_of,
    seq,
)
from tirc.schedule.errors import ScheduleError
from tirc.schedule.primitives import primitive
from tirc.schedule.properties import realize_of
from tirc.schedule.rebind import const_value, serial_loop
from tirc.schedule.schedule import Schedule, describe
from tirc.schedule.signature import Kind, Param, Signature
from tirc.schedule.sref import SRef
from tirc.schedule.stage_pipeline import stage_pipeline_root
from tirc.schedule.state import ScheduleState
from tirc.text import script


@dataclass
class _Einsum:
    inputs: list[Buffer]
    outputs: list[Buffer]
    indices: dict[int, tuple[PrimExpr, ...]]  # id(buffer) -> its index (iterators, constants)


@primitive(
    Signature(
        "pad_einsum",
        "PadEinsum",
        inputs=(Param("block", Kind.BLOCK),),
        attrs=(Param("padding", Kind.INTS),),
        doc="Pad an einsum block's iterators to multiples of the padding.",
    )
)
def pad_einsum(sch: Schedule, block: SRef, padding: list[int]) -> None:
    state = sch.state_owning(block)
    node = block.block
    stage_pipeline_root(state, block)
    factors = _check_padding(padding, node, block)
    einsum = _extract(node, block)
    realize = realize_of(block)
    loops = Schedule.loops_above(block)
    extents = _padded_extents(node, factors)
    changed = {
        id(iv.var): extent
        for iv, extent in zip(node.iter_vars, extents, strict=True)
        if extent is not None
    }
    if not changed:
        return  # every iterator is already a multiple of its padding: nothing to do
    _check_no_outer_index(einsum, node, block)
    loop_of = _bound_loops(realize, loops, node, changed, block)
    scope = block.enclosing_block()
    assert scope is not None
    _rewrite(state, scope, block, realize, einsum, changed, loop_of)


def _check_padding(padding: list[int], node: SBlock, block: SRef) -> list[int]:
    values = [const_value(item) for item in padding]
    positive = [value for value in values if value is not None and value > 0]
    if len(values) != len(node.iter_vars) or len(positive) != len(values):
        given = ", ".join(str(item) for item in padding)
        raise ScheduleError(
            f"the padding of {describe(block)} must be {len(node.iter_vars)} positive integers, "
            f"one per iterator; got ({given})",
            block,
        )
    return positive


def _extract(node: SBlock, block: SRef) -> _Einsum:
    """The einsum form of the block, read from its declared regions as TVM does (the body may
    be anything, a nested block included), or a refusal saying what breaks it."""
    einsum = _Einsum([], [], {})
    for regions, found in ((node.reads, einsum.inputs), (node.writes, einsum.outputs)):
        for region in regions:
            starts = tuple(item.min for item in region.region)
            single = all(const_value(item.extent) == 1 for item in region.region)
            if id(region.buffer) in einsum.indices or not single or not _plain(starts):
                raise ScheduleError(
                    f"{describe(block)} is not an einsum: each buffer it reads or writes must be "
                    "accessed once (not both read and written), at one element whose indices "
                    "are variables (block iterators) or constants",
                    block,
                )
            einsum.indices[id(region.buffer)] = starts
            found.append(region.buffer)
    return einsum


def _check_no_outer_index(einsum: _Einsum, node: SBlock, block: SRef) -> None:
    """A buffer indexed by an enclosing block's variable is only partly the block's: its
    padded copy, made in the block around, would be copied back whole from elements the
    block never wrote (TVM does so and overwrites the output with them). tirc refuses."""
    iterators = {id(iv.var) for iv in node.iter_vars}
    for indices in einsum.indices.values():
        for index in indices:
            if isinstance(index, Var) and id(index) not in iterators:
                raise ScheduleError(
                    f"cannot pad {describe(block)}: it indexes a buffer with {index.name}, a "
                    "variable of an enclosing block, so its padded buffers would be copied "
                    "back whole from elements it does not write",
                    block,
                )


def _plain(indices: tuple[PrimExpr, ...]) -> bool:
    """Every index a constant or a variable: the block's iterator, or one of an enclosing block
    (`B[vi, vj, vk]` inside a block over vi, vj), which is fixed in the block and, like a
    constant, keeps its dimension unpadded, as TVM reads it."""
    return all(isinstance(index, (IntImm, Var)) for index in indices)


def _padded_extents(node: SBlock, factors: list[int]) -> list[PrimExpr | None]:
    """The new extent of each iterator, None where it is already a multiple."""
    analyzer = Analyzer()
    result: list[PrimExpr | None] = []
    for iter_var, factor in zip(node.iter_vars, factors, strict=True):
        assert iter_var.dom is not None
        extent = iter_var.dom.extent
        dtype = extent.dtype
        step = IntImm(factor, dtype)
        rounded = analyzer.simplify(
            E.Mul(E.FloorDiv(E.Add(extent, IntImm(factor - 1, dtype)), step), step)
        )
        result.append(None if analyzer.can_prove_equal(rounded, extent) else rounded)
    return result


def _bound_loops(
    realize: SBlockRealize,
    loops: list[SRef],
    node: SBlock,
    changed: dict[int, PrimExpr],
    block: SRef,
) -> dict[int, SRef]:
    """The loop each padded iterator is bound to, where its binding is a loop's variable (the
    loop must start at 0). An iterator bound to anything else (a constant, a fused
    `i_k_fused // 7`) has no loop of its own to grow: as in TVM, only its domain is padded
    (`T.axis.spatial(1, 0)` becomes `T.axis.spatial(8, 0)`)."""
    by_var = {id(loop.loop.loop_var): loop for loop in loops}
    result: dict[int, SRef] = {}
    for iter_var, value in zip(node.iter_vars, realize.iter_values, strict=True):
        if id(iter_var.var) not in changed or id(value) not in by_var:
            continue
        loop = by_var[id(value)]
        if not isinstance(loop.loop.min, IntImm) or loop.loop.min.value != 0:
            raise ScheduleError(
                f"the iterator {iter_var.var.name} of {describe(block)} is padded, so the loop "
                "it is bound to must start at 0",
                block,
            )
        result[id(value)] = loop
    return result


# -- the rewrite -----------------------------------------------------------------------------


def _rewrite(
    state: ScheduleState,
    scope: SRef,
    block: SRef,
    realize: SBlockRealize,
    einsum: _Einsum,
    changed: dict[int, PrimExpr],
    loop_of: dict[int, SRef],
) -> None:
    node = block.block
    domains = {id(iv.var): iv for iv in node.iter_vars}

    def new_shape(buffer: Buffer) -> tuple[PrimExpr, ...] | None:
        indices = einsum.indices[id(buffer)]
        shape = tuple(
            changed.get(id(index), extent) if id(index) in domains else extent
            for index, extent in zip(indices, buffer.shape, strict=True)
        )
        grown = any(a is not b for a, b in zip(shape, buffer.shape, strict=True))
        return shape if grown else None

    replaced: dict[int, Buffer] = {}
    prologue: list[Stmt] = []
    epilogue: list[Stmt] = []
    allocated: list[Buffer] = []
    for buffer in einsum.inputs:
        shape = new_shape(buffer)
        if shape is not None:
            padded = _padded_buffer(buffer, shape)
            replaced[id(buffer)] = padded
            allocated.append(padded)
            prologue.append(_fill_block(buffer, padded))
    for buffer in einsum.outputs:
        shape = new_shape(buffer)
        if shape is not None:
            _check_whole_output(buffer, einsum.indices[id(buffer)], block)
            padded = _padded_buffer(buffer, shape)
            replaced[id(buffer)] = padded
            allocated.append(padded)
            epilogue.append(_copy_back_block(buffer, padded))
    loop_extents = {var_id: changed[_iterator_of(node, realize, var_id)] for var_id in loop_of}
    rewriter = _PadRewrite(replaced, loop_extents, changed)
    top = _top_statement(block, scope, realize)
    scope_block = scope.block
    body: Stmt = _InsertAround(top, prologue, rewriter.visit(top), epilogue).visit(scope_block.body)
    new_scope = dataclasses.replace(
        scope_block, body=body, alloc_buffers=scope_block.alloc_buffers + tuple(allocated)
    )
    state.replace(scope, new_scope, rewriter.blocks)


def _check_whole_output(buffer: Buffer, indices: tuple[PrimExpr, ...], block: SRef) -> None:
    """A padded output is copied back whole: refused where the block writes one place of a
    dimension wider than that (`C[vi, 1]` of a C of 3 columns), whose other places the copy
    would overwrite with elements the block never wrote (TVM 0.27 reads its one-column copy
    past its end there)."""
    for index, extent in zip(indices, buffer.shape, strict=True):
        if isinstance(index, IntImm) and const_value(extent) != 1:
            raise ScheduleError(
                f"cannot pad {describe(block)}: it writes {buffer.name} at the constant index "
                f"{index.value} of a dimension of {script(extent)}, so its padded copy would be "
                "copied back whole over elements it does not write",
                block,
            )


def _top_statement(block: SRef, scope: SRef, realize: SBlockRealize) -> Stmt:
    """The statement of the scope's body that holds the block (its outermost loop, or its
    realize): TVM rewrites it whole, with the blocks beside the einsum under its loops."""
    node = block
    while node.parent is not None and node.parent is not scope:
        node = node.parent
    if node is block:
        return realize
    return node.loop if node.is_loop else realize_of(node)


def _iterator_of(node: SBlock, realize: SBlockRealize, loop_var_id: int) -> int:
    for iter_var, value in zip(node.iter_vars, realize.iter_values, strict=True):
        if id(value) == loop_var_id:
            return id(iter_var.var)
    raise AssertionError("a padded loop binds no iterator")


def _padded_buffer(buffer: Buffer, shape: tuple[PrimExpr, ...]) -> Buffer:
    return make_buffer(f"{buffer.name}_pad", shape, buffer.dtype, buffer.scope)


def _grid(
    shape: tuple[PrimExpr, ...], build: Callable[[list[Var], tuple[IterVar, ...]], SBlock]
) -> Stmt:
    """A spatial block over `shape` (loops i0.., iterators v0..) whose body `build(vars)` makes."""
    loop_vars = [Var(f"i{k}", extent.dtype) for k, extent in enumerate(shape)]
    block_vars = [Var(f"v{k}", extent.dtype) for k, extent in enumerate(shape)]
    iter_vars = tuple(
        IterVar(var, Range(IntImm(0, var.dtype), extent), IterType.SPATIAL)
        for var, extent in zip(block_vars, shape, strict=True)
    )
    made = build(block_vars, iter_vars)
    stmt: Stmt = SBlockRealize(tuple(loop_vars), IntImm(1, BOOL), made)
    for var, extent in reversed(list(zip(loop_vars, shape, strict=True))):
        stmt = serial_loop(var, extent, stmt)
    return stmt


def _fill_block(source: Buffer, padded: Buffer) -> Stmt:
    """`padded[v] = T.if_then_else(v < shape on grown dims, source[v], 0)`, named `padded`."""

    def build(vars_: list[Var], iter_vars: tuple[IterVar, ...]) -> SBlock:
        condition: PrimExpr | None = None
        for var, old, new in zip(vars_, source.shape, padded.shape, strict=True):
            if old is not new:
                test = E.LT(var, old)
                condition = test if condition is None else E.And(condition, test)
        assert condition is not None
        indices = tuple(vars_)
        zero = _zero(source)
        value = E.Call(source.dtype, "if_then_else", (condition, BufferLoad(source, indices), zero))
        store = BufferStore(padded, value, indices)
        return SBlock(
            padded.name, iter_vars, (_point(source, vars_),), (_point(padded, vars_),), store
        )

    return _grid(padded.shape, build)


def _copy_back_block(target: Buffer, padded: Buffer) -> Stmt:
    """`target[v] = padded[v]` over the target's shape, named `padded`."""

    def build(vars_: list[Var], iter_vars: tuple[IterVar, ...]) -> SBlock:
        indices = tuple(vars_)
        store = BufferStore(target, BufferLoad(padded, indices), indices)
        return SBlock(
            padded.name, iter_vars, (_point(padded, vars_),), (_point(target, vars_),), store
        )

    return _grid(target.shape, build)


def _zero(buffer: Buffer) -> PrimExpr:
    if buffer.dtype.is_float:
        return FloatImm(0.0, buffer.dtype)
    return IntImm(0, buffer.dtype)


def _point(buffer: Buffer, vars_: list[Var]) -> BufferRegion:
    return BufferRegion(buffer, tuple(Range(var, IntImm(1, var.dtype)) for var in vars_))


class _BufferSwap(Mutator):
    """Loads, stores and declared regions of the swapped buffers use their padded copies."""

    def __init__(self, replaced: dict[int, Buffer]):
        self.replaced = replaced

    def visit_BufferLoad(self, node: BufferLoad) -> BufferLoad:
        new: BufferLoad = self.generic_visit(node)
        buffer = self.replaced.get(id(new.buffer))
        return new if buffer is None else dataclasses.replace(new, buffer=buffer)

    def visit_BufferStore(self, node: BufferStore) -> BufferStore:
        new: BufferStore = self.generic_visit(node)
        buffer = self.replaced.get(id(new.buffer))
        return new if buffer is None else dataclasses.replace(new, buffer=buffer)

    def visit_BufferRegion(self, node: BufferRegion) -> BufferRegion:
        buffer = self.replaced.get(id(node.buffer))
        return node if buffer is None else dataclasses.replace(node, buffer=buffer)


class _PadRewrite(_BufferSwap):
    """The statement holding the einsum, rewritten whole as TVM does: the loops bound to padded
    iterators and the padded iterators' domains grow, and every access to a padded buffer in
    it, in any block, uses the padded copy. `blocks` maps each rebuilt block to its new one."""

    def __init__(
        self,
        replaced: dict[int, Buffer],
        loop_extents: dict[int, PrimExpr],
        iter_extents: dict[int, PrimExpr],
    ):
        super().__init__(replaced)
        self.loop_extents, self.iter_extents = loop_extents, iter_extents
        self.blocks: dict[SBlock, SBlock] = {}

    def visit_For(self, node: For) -> For:
        new: For = self.generic_visit(node)
        extent = self.loop_extents.get(id(node.loop_var))
        return new if extent is None else dataclasses.replace(new, extent=extent)

    def visit_SBlock(self, node: SBlock) -> SBlock:
        new: SBlock = self.generic_visit(node)
        if any(id(iv.var) in self.iter_extents for iv in new.iter_vars):
            iter_vars = tuple(
                dataclasses.replace(iv, dom=Range(domain_of(iv).min, self.iter_extents[id(iv.var)]))
                if id(iv.var) in self.iter_extents
                else iv
                for iv in new.iter_vars
            )
            new = dataclasses.replace(new, iter_vars=iter_vars)
        if new is not node:
            self.blocks[node] = new
        return new


class _InsertAround(Mutator):
    """Puts `before + [nest] + after` where `outer` was, without entering loops or blocks."""

    def __init__(self, outer: Stmt, before: list[Stmt], nest: Stmt, after: list[Stmt]):
        self.outer, self.before, self.nest, self.after = outer, before, nest, after

    def visit(self, node: Any) -> Any:
        if node is self.outer:
            return seq(*self.before, self.nest, *self.after)
        if isinstance(node, (For, SBlock)):
            return node
        return super().visit(node)

    def visit_SeqStmt(self, node: SeqStmt) -> Stmt:
        items = [self.visit(item) for item in node.stmts]
        return seq(*items)

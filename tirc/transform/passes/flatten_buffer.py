"""flatten-buffer: every N-d buffer becomes a 1-d one and every access gets one linear index.

Expects tir (no blocks); leaves flat tir. Parameters are viewed flat through a `DeclBuffer`
at the top of the body (`A_1 = A.view(N)`), allocations are rebuilt flat, and an index is
`sum(index_k * stride_k) + elem_offset`, simplified:

    A: T.Buffer((4, 8))              A_1 = A.view(32)
    A[i, j] = 0.0            ->      A_1[i * 8 + j] = 0.0
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from tirc.analysis.arith.analyzer import Analyzer
from tirc.ir import expr as E
from tirc.ir import stmt as S
from tirc.ir.arith import match_types
from tirc.ir.buffer import Buffer
from tirc.ir.function import PrimFunc
from tirc.ir.functor import Mutator
from tirc.transform.pass_base import Dialect, FunctionPass
from tirc.transform.passes.lower_match_buffer import strides_of


def flat_buffer(buffer: Buffer, analyzer: Analyzer) -> Buffer:
    """The 1-d buffer over the same memory: its size is the product of the shape."""
    size: E.PrimExpr = E.IntImm(1, buffer.index_dtype)
    for extent in buffer.shape:
        size = (
            E.Mul(size, extent)
            if size.dtype == extent.dtype
            else E.Mul(size, E.Cast(size.dtype, extent))
        )
    if buffer.strides:  # the memory spans the largest stride times its extent
        size = E.Mul(buffer.strides[0], buffer.shape[0])
    return dataclasses.replace(
        buffer, shape=(analyzer.simplify(size),), strides=(), elem_offset=None, axis_separators=()
    )


def linear_index(buffer: Buffer, indices: tuple[E.PrimExpr, ...], analyzer: Analyzer) -> E.PrimExpr:
    """The one index of `buffer[indices]` into its flat form, vector lanes kept.

    Operands of different integer types meet as in any arithmetic (`match_types`): the wider
    type wins, unsigned at equal width, so a uint32 index into an int64-shaped buffer is cast
    to int64 and an int32 loop variable times an int64 stride too.
    """
    if not indices:
        return E.IntImm(0, buffer.index_dtype)
    lanes = max(index.dtype.lanes for index in indices)
    total: E.PrimExpr | None = None
    for index, stride in zip(indices, strides_of(buffer), strict=False):
        term = index if E.is_const_int(stride, 1) else _mul(index, stride)
        total = term if total is None else _add(total, term)
    assert total is not None
    if buffer.elem_offset is not None and not E.is_const_int(buffer.elem_offset, 0):
        total = _add(total, buffer.elem_offset)
    if lanes == 1:
        return analyzer.simplify(total)
    if isinstance(total, E.Ramp):
        return E.Ramp(analyzer.simplify(total.base), analyzer.simplify(total.stride), total.lanes)
    return total


def _add(a: E.PrimExpr, b: E.PrimExpr) -> E.PrimExpr:
    """a + b, keeping a Ramp a Ramp when the other side is scalar."""
    if isinstance(a, E.Ramp) and b.dtype.is_scalar:
        return _ramp(_add(a.base, b), a.stride, a.lanes)
    if isinstance(b, E.Ramp) and a.dtype.is_scalar:
        return _ramp(_add(a, b.base), b.stride, b.lanes)
    if isinstance(a, E.Ramp) and isinstance(b, E.Ramp) and a.lanes == b.lanes:
        return _ramp(_add(a.base, b.base), _add(a.stride, b.stride), a.lanes)
    return E.Add(*match_types(a, b))


def _mul(a: E.PrimExpr, stride: E.PrimExpr) -> E.PrimExpr:
    if isinstance(a, E.Ramp):
        return _ramp(_mul(a.base, stride), _mul(a.stride, stride), a.lanes)
    return E.Mul(*match_types(a, stride))


def _ramp(base: E.PrimExpr, stride: E.PrimExpr, lanes: int) -> E.Ramp:
    base, stride = match_types(base, stride)
    return E.Ramp(base, stride, lanes)


class _Flattener(Mutator):
    def __init__(self, views: dict[int, Buffer], analyzer: Analyzer):
        self.flat = views  # id(original buffer) -> its flat form
        self.originals: dict[int, Buffer] = {}
        self.analyzer = analyzer

    def flat_of(self, buffer: Buffer) -> Buffer:
        done = self.flat.get(id(buffer))
        if done is None:
            done = (
                buffer
                if buffer.ndim == 1 and not buffer.strides and buffer.elem_offset is None
                else flat_buffer(buffer, self.analyzer)
            )
            self.flat[id(buffer)] = done
        return done

    def visit_AllocBuffer(self, node: S.AllocBuffer) -> S.Stmt:
        flat = self.flat_of(node.buffer)
        return node if flat is node.buffer else dataclasses.replace(node, buffer=flat)

    def visit_DeclBuffer(self, node: S.DeclBuffer) -> S.Stmt:
        flat = self.flat_of(node.buffer)
        data = self.visit(node.data) if node.data is not None else None
        if flat is node.buffer and data is node.data:
            return node
        return dataclasses.replace(node, buffer=flat, data=data)

    def visit_BufferLoad(self, node: E.BufferLoad) -> E.PrimExpr:
        indices = self.visit(node.indices)
        flat = self.flat_of(node.buffer)
        if flat is node.buffer and indices is node.indices and len(indices) <= 1:
            return node
        index = linear_index(node.buffer, indices, self.analyzer)
        return E.BufferLoad(flat, (index,), self.visit(node.predicate), span=node.span)

    def visit_BufferStore(self, node: S.BufferStore) -> S.Stmt:
        indices = self.visit(node.indices)
        value = self.visit(node.value)
        flat = self.flat_of(node.buffer)
        if (
            flat is node.buffer
            and indices is node.indices
            and value is node.value
            and len(indices) <= 1
        ):
            return node
        index = linear_index(node.buffer, indices, self.analyzer)
        return dataclasses.replace(node, buffer=flat, value=value, indices=(index,))


@dataclass(frozen=True)
class FlattenBuffer(FunctionPass):
    name = "flatten-buffer"
    expects = Dialect.TIR
    leaves = Dialect.FLAT

    def run_function(self, func: PrimFunc) -> PrimFunc:
        analyzer = Analyzer()
        views: dict[int, Buffer] = {}
        declarations: list[S.Stmt] = []
        for _, buffer in func.buffer_map:
            view = flat_buffer(buffer, analyzer)
            views[id(buffer)] = view
            declarations.append(S.DeclBuffer(view, buffer.data))
        body = _Flattener(views, analyzer).visit(func.body)
        if not declarations and body is func.body:
            return func
        return dataclasses.replace(func, body=S.seq(*declarations, body))

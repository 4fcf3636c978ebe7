"""inject-double-buffer: a buffer allocated in a loop body and written under
`T.attr(B.data, "double_buffer_scope", 1)` gets two slots, so that the write for the next
iteration overlaps the reads of this one.

Expects flat tir; leaves flat tir. The loop body must be: the allocations (one of them B, of
constant size, one-dimensional), the `double_buffer_scope` attribute around the producer, then
the consumers. Iteration j uses slot j % 2; the producer of iteration 0 is peeled in front of
the loop and the consumers of the last iteration behind it. Anything else keeps its loop, with
the attribute dropped.

    for i in range(8):                                   B = T.alloc_shared((16,))
        B = T.alloc_shared((8,))                         B[tx] = A[tx]
        with T.attr(B.data, "double_buffer_scope", 1):   for i in range(7):
            B[tx] = A[i * 8 + tx]                  ->        B[(i + 1) % 2 * 8 + tx] = A[...]
        C[i * 8 + tx] = B[7 - tx]                            C[i * 8 + tx] = B[i % 2 * 8 + 7 - tx]
                                                         C[56 + tx] = B[15 - tx]
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from tirc.analysis.arith.analyzer import Analyzer
from tirc.ir import expr as E
from tirc.ir import stmt as S
from tirc.ir.buffer import Buffer, Range
from tirc.ir.function import PrimFunc
from tirc.ir.functor import Mutator
from tirc.transform.fresh_copy import fresh_copy
from tirc.transform.pass_base import Dialect, FunctionPass

SCOPE = "double_buffer_scope"


def _is_scope(stmt: S.Stmt) -> bool:
    return isinstance(stmt, S.AttrStmt) and stmt.key == SCOPE


class _Slots(Mutator):
    """Accesses of the doubled buffer moved to the slot of `slot`."""

    def __init__(self, old: Buffer, new: Buffer, base: PrimExpr) -> None:
        self.old, self.new, self.base = old, new, base

    def moved(self, indices: tuple[PrimExpr, ...]) -> tuple[PrimExpr, ...]:
        (index,) = indices
        dtype = index.dtype
        base = self.base if self.base.dtype == dtype.element else E.Cast(dtype.element, self.base)
        if dtype.lanes > 1:
            base = E.Broadcast(base, dtype.lanes)
        return (E.Add(base, index),)

    def visit_BufferLoad(self, node: E.BufferLoad) -> E.PrimExpr:
        node = self.generic_visit(node)
        if node.buffer.data is not self.old.data:
            return node
        return dataclasses.replace(node, buffer=self.new, indices=self.moved(node.indices))

    def visit_BufferStore(self, node: S.BufferStore) -> S.Stmt:
        node = self.generic_visit(node)
        if node.buffer.data is not self.old.data:
            return node
        return dataclasses.replace(node, buffer=self.new, indices=self.moved(node.indices))


class _Simplify(Mutator):
    """Folds the constants the peeled copies leave in buffer indices."""

    def __init__(self) -> None:
        self.analyzer = Analyzer()

    def visit_BufferLoad(self, node: E.BufferLoad) -> E.PrimExpr:
        node = self.generic_visit(node)
        return dataclasses.replace(node, indices=tuple(map(self.analyzer.simplify, node.indices)))

    def visit_BufferStore(self, node: S.BufferStore) -> S.Stmt:
        node = self.generic_visit(node)
        return dataclasses.replace(node, indices=tuple(map(self.analyzer.simplify, node.indices)))


PrimExpr = E.PrimExpr


def _strip(stmt: S.Stmt) -> S.Stmt:
    """The statement without `double_buffer_scope` attributes."""

    class _Strip(Mutator):
        def visit_AttrStmt(self, node: S.AttrStmt) -> S.Stmt:
            visited: S.AttrStmt = self.generic_visit(node)
            return visited.body if visited.key == SCOPE else visited

    result: S.Stmt = _Strip().visit(stmt)
    return result


def double_buffer(loop: S.For, analyzer: Analyzer) -> S.Stmt | None:
    """The loop with its double-buffered producer peeled, or None when it does not have the
    form this pass handles."""
    stmts = loop.body.stmts if isinstance(loop.body, S.SeqStmt) else (loop.body,)
    position = next((k for k, stmt in enumerate(stmts) if _is_scope(stmt)), None)
    if position is None or loop.kind is not S.ForKind.SERIAL:
        return None
    allocs, scope, consumers = stmts[:position], stmts[position], stmts[position + 1 :]
    assert isinstance(scope, S.AttrStmt)
    if not all(isinstance(stmt, S.AllocBuffer) for stmt in allocs):
        return None
    target = next(
        (a.buffer for a in allocs if isinstance(a, S.AllocBuffer) and a.buffer.data is scope.node),
        None,
    )
    if target is None or len(target.shape) != 1 or not isinstance(target.shape[0], E.IntImm):
        return None
    if target.strides or target.elem_offset is not None:
        return None
    dtype = loop.loop_var.dtype
    one = E.IntImm(1, dtype)
    if not analyzer.can_prove(E.GE(loop.extent, one)):
        return None
    size = target.shape[0]
    data = E.Var(target.data.name, target.data.dtype, target.data.pointer, span=target.data.span)
    doubled = dataclasses.replace(target, data=data, shape=(E.IntImm(2 * size.value, size.dtype),))
    slot = E.Mul(E.FloorMod(loop.loop_var, E.IntImm(2, dtype)), E.IntImm(size.value, dtype))
    slots = _Slots(target, doubled, slot)
    producer = slots.visit(_strip(scope.body))
    consumer = slots.visit(_strip(S.seq(*consumers))) if consumers else None
    hoisted = [
        S.AllocBuffer(doubled, a.annotations, span=a.span) if a.buffer is target else a
        for a in allocs
        if isinstance(a, S.AllocBuffer)
    ]

    def at(stmt: S.Stmt, iteration: PrimExpr) -> S.Stmt:
        copy = fresh_copy(stmt, {loop.loop_var: analyzer.simplify(iteration)})
        result: S.Stmt = _Simplify().visit(copy)
        return result

    var = E.Var(loop.loop_var.name, dtype)
    body = [at(producer, E.Add(loop.min, E.Add(var, one)))]
    if consumer is not None:
        body.append(at(consumer, E.Add(loop.min, var)))
    steady = S.For(
        var,
        E.IntImm(0, dtype),
        analyzer.simplify(E.Sub(loop.extent, one)),
        loop.kind,
        S.seq(*body),
        annotations=loop.annotations,
        span=loop.span,
    )
    last = E.Sub(E.Add(loop.min, loop.extent), one)
    tail = [at(consumer, last)] if consumer is not None else []
    return S.seq(*hoisted, at(producer, loop.min), steady, *tail)


class _Injector(Mutator):
    def __init__(self) -> None:
        self.analyzer = Analyzer()

    def visit_For(self, node: S.For) -> S.Stmt:
        self.analyzer.bind(node.loop_var, Range(node.min, node.extent))
        loop: S.For = self.generic_visit(node)
        result = double_buffer(loop, self.analyzer)
        return result if result is not None else loop


@dataclass(frozen=True)
class InjectDoubleBuffer(FunctionPass):
    name = "inject-double-buffer"
    expects = Dialect.FLAT
    leaves = Dialect.FLAT

    def run_function(self, func: PrimFunc) -> PrimFunc:
        body = _strip(_Injector().visit(func.body))
        return func if body is func.body else dataclasses.replace(func, body=body)

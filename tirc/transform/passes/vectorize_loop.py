"""vectorize-loop: a vectorized loop with a constant extent becomes one vector statement per
statement of its body, the loop variable a `T.Ramp`, loop-invariant values `T.Broadcast`.

Expects tir; leaves tir without vectorized loops. Where the body is not a sequence of stores
with vector indices over pure elementwise expressions (a nested loop, an `if`, an
allocation, a store of a vector value to one location), the loop becomes serial, which
computes the same:

    for j in T.vectorized(4):              A_1[T.Ramp(i * 4, 1, 4)] = (
        A_1[i * 4 + j] = B_1[i * 4 + j] * 2.0    ->  B_1[T.Ramp(i * 4, 1, 4)] * T.Broadcast(2.0, 4))
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass

from tirc.ir import expr as E
from tirc.ir import intrinsics
from tirc.ir import stmt as S
from tirc.ir.function import PrimFunc
from tirc.ir.functor import Mutator
from tirc.transform.pass_base import Dialect, FunctionPass


class NotVectorizable(Exception):
    """The body has something without a vector form; the loop stays scalar."""


def _lanes(expr: E.PrimExpr) -> int:
    return expr.dtype.lanes  # type: ignore[attr-defined]


def _widen(expr: E.PrimExpr, lanes: int) -> E.PrimExpr:
    if _lanes(expr) == lanes:
        return expr
    if _lanes(expr) != 1:
        raise NotVectorizable
    return E.Broadcast(expr, lanes)


class _Vectorizer:
    def __init__(self, var: E.Var, start: E.PrimExpr, lanes: int):
        self.var, self.lanes = var, lanes
        self.ramp = E.Ramp(start, E.IntImm(1, var.dtype), lanes)

    def expr(self, node: E.PrimExpr) -> E.PrimExpr:
        rule = _EXPR_RULES.get(type(node))
        if rule is None:
            raise NotVectorizable
        return rule(self, node)

    def stmt(self, node: S.Stmt) -> S.Stmt:
        if isinstance(node, S.SeqStmt):
            return S.SeqStmt(tuple(self.stmt(s) for s in node.stmts), span=node.span)
        if isinstance(node, S.BufferStore) and node.predicate is None:
            indices = tuple(self.expr(i) for i in node.indices)
            value = self.expr(node.value)
            if all(_lanes(i) == 1 for i in indices):
                raise NotVectorizable  # every lane would store to one place
            if len(indices) != 1 and any(_lanes(i) != 1 for i in indices[:-1]):
                raise NotVectorizable
            return dataclasses.replace(node, indices=indices, value=_widen(value, self.lanes))
        raise NotVectorizable


def _leaf(v: _Vectorizer, node: E.PrimExpr) -> E.PrimExpr:
    return v.ramp if node is v.var else node


def _binary(v: _Vectorizer, node: E.PrimExpr) -> E.PrimExpr:
    a, b = v.expr(node.a), v.expr(node.b)  # type: ignore[attr-defined]
    if a is node.a and b is node.b:  # type: ignore[attr-defined]
        return node
    kind = type(node)
    if kind in (E.Add, E.Sub) and E.is_const_int(b, 0):
        return a
    if kind is E.Add and E.is_const_int(a, 0):
        return b
    if kind in (E.Add, E.Sub):
        if isinstance(a, E.Ramp) and _lanes(b) == 1:
            return E.Ramp(_fold(kind, a.base, b), a.stride, a.lanes)
        if isinstance(b, E.Ramp) and _lanes(a) == 1 and kind is E.Add:
            return E.Ramp(_fold(E.Add, a, b.base), b.stride, b.lanes)
        if isinstance(a, E.Ramp) and isinstance(b, E.Ramp):
            return E.Ramp(kind(a.base, b.base), kind(a.stride, b.stride), a.lanes)
    if kind is E.Mul:
        if isinstance(a, E.Ramp) and _lanes(b) == 1:
            return E.Ramp(E.Mul(a.base, b), E.Mul(a.stride, b), a.lanes)
        if isinstance(b, E.Ramp) and _lanes(a) == 1:
            return E.Ramp(E.Mul(a, b.base), E.Mul(a, b.stride), b.lanes)
    return kind(_widen(a, v.lanes), _widen(b, v.lanes))  # type: ignore[arg-type,call-arg]


def _fold(kind: type, a: E.PrimExpr, b: E.PrimExpr) -> E.PrimExpr:
    """a + b or a - b, without adding a literal zero."""
    if E.is_const_int(b, 0):
        return a
    if kind is E.Add and E.is_const_int(a, 0):
        return b
    return kind(a, b)


def _not(v: _Vectorizer, node: E.Not) -> E.PrimExpr:
    a = v.expr(node.a)
    return node if a is node.a else E.Not(a)


def _select(v: _Vectorizer, node: E.Select) -> E.PrimExpr:
    parts = [v.expr(node.condition), v.expr(node.true_value), v.expr(node.false_value)]
    if all(
        p is q
        for p, q in zip(parts, (node.condition, node.true_value, node.false_value), strict=False)
    ):
        return node
    return E.Select(*(_widen(p, v.lanes) for p in parts))


def _cast(v: _Vectorizer, node: E.Cast) -> E.PrimExpr:
    value = v.expr(node.value)
    if value is node.value:
        return node
    return E.Cast(node.dtype.with_lanes(_lanes(value)), value)


def _call(v: _Vectorizer, node: E.Call) -> E.PrimExpr:
    args = tuple(v.expr(a) if isinstance(a, E.PrimExpr) else a for a in node.args)
    if all(a is b for a, b in zip(args, node.args, strict=False)):
        return node
    intrinsic = intrinsics.lookup(node.op)
    elementwise = (
        intrinsic is not None
        and intrinsic.effect is intrinsics.Effect.PURE
        and intrinsic.result in (intrinsics.Result.FIRST_ARG, intrinsics.Result.BOOL)
        and node.op not in ("assume", "likely")
    )
    if not elementwise or not all(isinstance(a, E.PrimExpr) for a in args):
        raise NotVectorizable
    return E.Call(node.dtype.with_lanes(v.lanes), node.op, tuple(_widen(a, v.lanes) for a in args))  # type: ignore[arg-type]


def _load(v: _Vectorizer, node: E.BufferLoad) -> E.PrimExpr:
    if node.predicate is not None:
        raise NotVectorizable
    indices = tuple(v.expr(i) for i in node.indices)
    if all(a is b for a, b in zip(indices, node.indices, strict=False)):
        return node
    if any(_lanes(i) != 1 for i in indices[:-1]):
        raise NotVectorizable
    if _lanes(indices[-1]) == 1:  # a loop-dependent but scalar index cannot happen; be safe
        raise NotVectorizable
    return E.BufferLoad(node.buffer, indices, span=node.span)


_EXPR_RULES: dict[type, Callable[[_Vectorizer, E.PrimExpr], E.PrimExpr]] = {
    E.Var: _leaf,
    E.IntImm: _leaf,
    E.FloatImm: _leaf,
    E.StringImm: _leaf,
    E.Not: _not,  # type: ignore[dict-item]
    E.Select: _select,  # type: ignore[dict-item]
    E.Cast: _cast,  # type: ignore[dict-item]
    E.Call: _call,  # type: ignore[dict-item]
    E.BufferLoad: _load,  # type: ignore[dict-item]
    **{kind: _binary for kind in (*E.BINARY_OPS, *E.COMPARE_OPS, E.And, E.Or)},
}


class _Loops(Mutator):
    def visit_For(self, node: S.For) -> S.Stmt:
        loop: S.For = self.generic_visit(node)  # type: ignore[assignment]
        if loop.kind is not S.ForKind.VECTORIZED:
            return loop
        serial = dataclasses.replace(loop, kind=S.ForKind.SERIAL)
        if not isinstance(loop.extent, E.IntImm) or loop.extent.value < 1:
            return serial
        try:
            return _Vectorizer(loop.loop_var, loop.min, loop.extent.value).stmt(loop.body)
        except NotVectorizable:
            return serial


@dataclass(frozen=True)
class VectorizeLoop(FunctionPass):
    name = "vectorize-loop"
    expects = Dialect.TIR
    leaves = Dialect.TIR
    enable: bool = True  # false: every vectorized loop becomes serial

    def run_function(self, func: PrimFunc) -> PrimFunc:
        if not self.enable:
            body = _Serial().visit(func.body)
        else:
            body = _Loops().visit(func.body)
        return func if body is func.body else dataclasses.replace(func, body=body)


class _Serial(Mutator):
    def visit_For(self, node: S.For) -> S.Stmt:
        loop: S.For = self.generic_visit(node)  # type: ignore[assignment]
        if loop.kind is S.ForKind.VECTORIZED:
            return dataclasses.replace(loop, kind=S.ForKind.SERIAL)
        return loop

"""vectorize-loop: a vectorized loop with a constant extent becomes vector statements, the loop
variable a `T.Ramp`, loop-invariant values `T.Broadcast`.

Expects tir; leaves tir without vectorized loops. The body is rewritten statement by
statement: stores with vector indices over elementwise expressions become vector stores;
an `if` (or `T.if_then_else`) whose condition does not depend on the lane stays a scalar
`if` around vector code; loops inside keep their scalar iteration and get a vector body; a
`Bind` of a lane-dependent value binds a vector variable. A statement with no vector form
(a lane-dependent condition, a store of a vector value to one location, a call with effects)
becomes a serial loop over the lanes on its own, as TVM 0.27 does; a body with allocations
becomes serial as a whole:

    for j in T.vectorized(4):              if k == 0:
        if k == 0:                             A_1[T.Ramp(i * 4, 1, 4)] = T.Broadcast(0.0, 4)
            A_1[i * 4 + j] = 0.0     ->    for j_s in range(4):
        if i * 4 + j < 30:                     if i * 4 + j_s < 30:
            A_1[i * 4 + j] = 1.0                   A_1[i * 4 + j_s] = 1.0
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from tirc.ir import expr as E
from tirc.ir import intrinsics
from tirc.ir import stmt as S
from tirc.ir.function import PrimFunc
from tirc.ir.functor import Dispatch, Mutator
from tirc.ir.substitute import substitute
from tirc.transform.pass_base import Dialect, FunctionPass


class NotVectorizable(Exception):
    """An expression or statement has no vector form; that statement runs lane by lane."""


class _SerialLoop(Exception):
    """The body cannot be split into vector and per-lane statements; the loop stays serial."""


def _lanes(expr: E.PrimExpr) -> int:
    return expr.dtype.lanes


def _widen(expr: E.PrimExpr, lanes: int) -> E.PrimExpr:
    if _lanes(expr) == lanes:
        return expr
    if _lanes(expr) != 1:
        raise NotVectorizable
    return E.Broadcast(expr, lanes)


class _Vectorizer:
    def __init__(self, var: E.Var, start: E.PrimExpr, lanes: int):
        self.var, self.start, self.lanes = var, start, lanes
        self.ramp = E.Ramp(start, E.IntImm(1, var.dtype), lanes)
        self.vector_vars: dict[E.Var, E.Var] = {}  # Binds of lane-dependent values

    def expr(self, node: E.PrimExpr) -> E.PrimExpr:
        rule = EXPR_RULES.get(type(node))
        if rule is None:
            raise NotVectorizable
        return rule(self, node)

    def scalar(self, node: E.PrimExpr) -> E.PrimExpr:
        """`node`, which must not depend on the lane."""
        result = self.expr(node)
        if result is not node and _lanes(result) != 1:
            raise NotVectorizable
        return result

    def stmt(self, node: S.Stmt) -> S.Stmt:
        try:
            rule = STMT_RULES.get(type(node))
            if rule is None:
                raise NotVectorizable
            return rule(self, node)
        except NotVectorizable:
            return self.per_lane(node)

    def per_lane(self, node: S.Stmt) -> S.Stmt:
        """`node` in a serial loop over the lanes."""
        if self.vector_vars or isinstance(node, (S.AllocBuffer, S.DeclBuffer, S.Bind)):
            raise _SerialLoop  # a definition must stay visible to the statements after it
        lane = E.Var(f"{self.var.name}_s", self.var.dtype)
        value = lane if E.is_const_int(self.start, 0) else E.Add(lane, self.start)
        body = substitute(node, {self.var: value})
        extent = E.IntImm(self.lanes, self.var.dtype)
        return S.For(lane, E.IntImm(0, self.var.dtype), extent, S.ForKind.SERIAL, body)


STMT_RULES: Dispatch[_Vectorizer, [], S.Stmt] = Dispatch("vectorize-loop")


@STMT_RULES.register(S.SeqStmt)
def _seq_stmt(v: _Vectorizer, node: S.SeqStmt) -> S.Stmt:
    return S.SeqStmt(tuple(v.stmt(s) for s in node.stmts), span=node.span)


@STMT_RULES.register(S.BufferStore)
def _store(v: _Vectorizer, node: S.BufferStore) -> S.Stmt:
    if node.predicate is not None:
        raise NotVectorizable
    indices = tuple(v.expr(i) for i in node.indices)
    value = v.expr(node.value)
    if all(_lanes(i) == 1 for i in indices):
        raise NotVectorizable  # every lane would store to one place
    if len(indices) != 1 and any(_lanes(i) != 1 for i in indices[:-1]):
        raise NotVectorizable
    return dataclasses.replace(node, indices=indices, value=_widen(value, v.lanes))


@STMT_RULES.register(S.IfThenElse)
def _if(v: _Vectorizer, node: S.IfThenElse) -> S.Stmt:
    condition = v.scalar(node.condition)  # a lane-dependent condition: per lane
    then = v.stmt(node.then_case)
    other = None if node.else_case is None else v.stmt(node.else_case)
    return dataclasses.replace(node, condition=condition, then_case=then, else_case=other)


@STMT_RULES.register(S.For)
def _for(v: _Vectorizer, node: S.For) -> S.Stmt:
    if node.kind not in (S.ForKind.SERIAL, S.ForKind.UNROLLED) or node.step is not None:
        raise NotVectorizable
    start, extent = v.scalar(node.min), v.scalar(node.extent)
    return dataclasses.replace(node, min=start, extent=extent, body=v.stmt(node.body))


@STMT_RULES.register(S.Bind)
def _bind(v: _Vectorizer, node: S.Bind) -> S.Stmt:
    value = v.expr(node.value)
    if value is node.value:
        return node
    var = node.var
    if _lanes(value) != _lanes(var):
        var = E.Var(var.name, value.dtype, var.pointer, var.is_size_var, span=var.span)
        v.vector_vars[node.var] = var
    return dataclasses.replace(node, var=var, value=value)


EXPR_RULES: Dispatch[_Vectorizer, [], E.PrimExpr] = Dispatch("vectorize-loop")


@EXPR_RULES.register(E.Var, E.IntImm, E.FloatImm, E.StringImm)
def _leaf(v: _Vectorizer, node: E.PrimExpr) -> E.PrimExpr:
    if node is v.var:
        return v.ramp
    return v.vector_vars.get(node, node) if isinstance(node, E.Var) else node


@EXPR_RULES.register(E.BinaryOp, E.CompareOp, E.LogicalOp)
def _binary(v: _Vectorizer, node: E.BinaryOp | E.CompareOp | E.LogicalOp) -> E.PrimExpr:
    a, b = v.expr(node.a), v.expr(node.b)
    if a is node.a and b is node.b:
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
    return kind(_widen(a, v.lanes), _widen(b, v.lanes))


def _fold(kind: type, a: E.PrimExpr, b: E.PrimExpr) -> E.PrimExpr:
    """a + b or a - b, without adding a literal zero."""
    if E.is_const_int(b, 0):
        return a
    if kind is E.Add and E.is_const_int(a, 0):
        return b
    return kind(a, b)


@EXPR_RULES.register(E.Not)
def _not(v: _Vectorizer, node: E.Not) -> E.PrimExpr:
    a = v.expr(node.a)
    return node if a is node.a else E.Not(a)


@EXPR_RULES.register(E.Select)
def _select(v: _Vectorizer, node: E.Select) -> E.PrimExpr:
    parts = [v.expr(node.condition), v.expr(node.true_value), v.expr(node.false_value)]
    if all(
        p is q
        for p, q in zip(parts, (node.condition, node.true_value, node.false_value), strict=False)
    ):
        return node
    return E.Select(*(_widen(p, v.lanes) for p in parts))


@EXPR_RULES.register(E.Cast)
def _cast(v: _Vectorizer, node: E.Cast) -> E.PrimExpr:
    value = v.expr(node.value)
    if value is node.value:
        return node
    return E.Cast(node.dtype.with_lanes(_lanes(value)), value)


@EXPR_RULES.register(E.Call)
def _call(v: _Vectorizer, node: E.Call) -> E.PrimExpr:
    if node.op == "if_then_else":
        return _if_then_else(v, node)
    args = tuple(v.expr(a) if isinstance(a, E.PrimExpr) else a for a in node.args)
    if all(a is b for a, b in zip(args, node.args, strict=False)):
        return node
    intrinsic = intrinsics.lookup(node.op)
    elementwise = (
        intrinsic is not None
        and intrinsic.effect is intrinsics.Effect.PURE
        and intrinsic.result in (intrinsics.Result.FIRST_ARG, intrinsics.Result.BOOL)
        and node.op not in ("assume", "likely")
    ) or node.op == "reinterpret"  # a bit cast lane by lane, as TVM 0.27 vectorizes it
    if not elementwise or not E.are_exprs(args):
        raise NotVectorizable
    return E.Call(node.dtype.with_lanes(v.lanes), node.op, tuple(_widen(a, v.lanes) for a in args))


def _if_then_else(v: _Vectorizer, node: E.Call) -> E.PrimExpr:
    """A scalar condition selects between vector branches; a lane-dependent one would evaluate
    both branches in some lane, so that statement runs per lane."""
    if not E.are_exprs(node.args):
        raise NotVectorizable
    condition, then, other = node.args
    new_condition = v.scalar(condition)
    new_then, new_other = v.expr(then), v.expr(other)
    if new_condition is condition and new_then is then and new_other is other:
        return node
    lanes = max(_lanes(new_then), _lanes(new_other))
    branches = (_widen(new_then, lanes), _widen(new_other, lanes))
    return E.Call(node.dtype.with_lanes(lanes), node.op, (new_condition, *branches))


@EXPR_RULES.register(E.BufferLoad)
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


class _Loops(Mutator):
    def visit_For(self, node: S.For) -> S.Stmt:
        loop: S.For = self.generic_visit(node)
        if loop.kind is not S.ForKind.VECTORIZED:
            return loop
        serial = dataclasses.replace(loop, kind=S.ForKind.SERIAL)
        if not isinstance(loop.extent, E.IntImm) or loop.extent.value < 1:
            return serial
        try:
            return _Vectorizer(loop.loop_var, loop.min, loop.extent.value).stmt(loop.body)
        except _SerialLoop:
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
        loop: S.For = self.generic_visit(node)
        if loop.kind is S.ForKind.VECTORIZED:
            return dataclasses.replace(loop, kind=S.ForKind.SERIAL)
        return loop

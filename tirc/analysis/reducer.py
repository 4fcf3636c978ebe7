"""Commutative reducers, and recognising one in a reduction block's init and update.

A reducer combines running values `x` with new values `y` (sum: `x + y`; argmax over
(index, value) pairs: two Selects) and has an identity. A block's update matches a reducer
when its init stores the identity and its stored values are the combiner with `x` the loads
of the stored buffers, `y` anything; the `y` parts are what rfactor moves elsewhere.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from tirc.ir import expr as E
from tirc.ir.buffer import Buffer
from tirc.ir.dtype import DataType
from tirc.ir.expr import BufferLoad, FloatImm, IntImm, PrimExpr, Var
from tirc.ir.functor import child_fields
from tirc.ir.node import Node

Combine = Callable[[Sequence[PrimExpr], Sequence[PrimExpr]], list[PrimExpr]]


@dataclass(frozen=True)
class Reducer:
    name: str
    combine: Combine  # (x, y) -> the combined values
    identity: Callable[[Sequence[DataType]], list[PrimExpr]]
    arity: int = 1


def lowest(dtype: DataType) -> PrimExpr:
    if dtype.is_float:
        return FloatImm(-_float_max(dtype), dtype)
    if dtype.is_uint:
        return IntImm(0, dtype)
    return IntImm(-(1 << (dtype.bits - 1)), dtype)


def highest(dtype: DataType) -> PrimExpr:
    if dtype.is_float:
        return FloatImm(_float_max(dtype), dtype)
    if dtype.is_uint:
        return IntImm((1 << dtype.bits) - 1, dtype)
    return IntImm((1 << (dtype.bits - 1)) - 1, dtype)


def _float_max(dtype: DataType) -> float:
    return {16: 65504.0, 32: 3.4028234663852886e38}.get(
        dtype.bits, math.inf if dtype.bits > 64 else 1.7976931348623157e308
    )


def _arg(better: Callable[[PrimExpr, PrimExpr], PrimExpr], tie_break: bool) -> Combine:
    """argmax/argmin over (index, value): keep the running pair unless the new one is
    better (with `tie_break`, an equal value with a smaller index also wins)."""

    def combine(x: Sequence[PrimExpr], y: Sequence[PrimExpr]) -> list[PrimExpr]:
        if tie_break:
            keep_index = E.Or(better(x[1], y[1]), E.And(E.EQ(x[1], y[1]), E.LT(x[0], y[0])))
            return [E.Select(keep_index, x[0], y[0]), E.Select(better(x[1], y[1]), x[1], y[1])]
        keep = better(x[1], y[1])
        return [E.Select(keep, x[0], y[0]), E.Select(keep, x[1], y[1])]

    return combine


# TVM's list, in its order: the first match wins.
REDUCERS: tuple[Reducer, ...] = (
    Reducer("sum", lambda x, y: [E.Add(x[0], y[0])], lambda t: [E.const(0, t[0])]),
    Reducer("product", lambda x, y: [E.Mul(x[0], y[0])], lambda t: [E.const(1, t[0])]),
    Reducer("min", lambda x, y: [E.Min(x[0], y[0])], lambda t: [highest(t[0])]),
    Reducer("max", lambda x, y: [E.Max(x[0], y[0])], lambda t: [lowest(t[0])]),
    Reducer("argmax", _arg(E.GE, False), lambda t: [E.const(-1, t[0]), lowest(t[1])], 2),
    Reducer("argmin", _arg(E.LE, False), lambda t: [E.const(-1, t[0]), highest(t[1])], 2),
    Reducer("argmax", _arg(E.GT, True), lambda t: [E.const(-1, t[0]), lowest(t[1])], 2),
    Reducer("argmin", _arg(E.LT, True), lambda t: [E.const(-1, t[0]), highest(t[1])], 2),
)


@dataclass
class Match:
    reducer: Reducer
    lhs: list[PrimExpr]  # the loads of the stored buffers
    rhs: list[PrimExpr]  # the new values combined into them


def match_reducer(
    inits: Sequence[PrimExpr], values: Sequence[PrimExpr], loads: Sequence[BufferLoad]
) -> Match | None:
    """The reducer whose identity is `inits` and whose combiner gives `values` with `x`
    the `loads` (one per stored buffer)."""
    dtypes = [value.dtype for value in values]
    for reducer in REDUCERS:
        if reducer.arity != len(values):
            continue
        if not all(same(a, b) for a, b in zip(reducer.identity(dtypes), inits, strict=True)):
            continue
        x = [Var(f"x{i}", t) for i, t in enumerate(dtypes)]
        y = [Var(f"y{i}", t) for i, t in enumerate(dtypes)]
        bound: dict[Var, PrimExpr] = {}
        holes = set(x) | set(y)
        patterns = reducer.combine(x, y)
        if not all(_match(p, v, holes, bound) for p, v in zip(patterns, values, strict=True)):
            continue
        if not all(var in bound for var in holes):
            continue
        if all(same(bound[var], load) for var, load in zip(x, loads, strict=True)):
            return Match(reducer, [bound[v] for v in x], [bound[v] for v in y])
    return None


def _match(pattern: object, expr: object, holes: set[Var], bound: dict[Var, PrimExpr]) -> bool:
    if isinstance(pattern, Var) and pattern in holes:
        if pattern in bound:
            return same(bound[pattern], expr)
        if not isinstance(expr, PrimExpr) or expr.dtype != pattern.dtype:
            return False
        bound[pattern] = expr
        return True
    return _equal(pattern, expr, lambda a, b: _match(a, b, holes, bound))


def same(a: object, b: object) -> bool:
    """Deep equality with variables and buffers compared by identity (free variables are
    not renamed, unlike structural equality)."""
    return _equal(a, b, same)


def _equal(a: object, b: object, recurse: Callable[[object, object], bool]) -> bool:
    if isinstance(a, (Var, Buffer)) or isinstance(b, (Var, Buffer)):
        return a is b
    if isinstance(a, tuple) and isinstance(b, tuple):
        return len(a) == len(b) and all(recurse(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, Node) and isinstance(b, Node):
        if type(a) is not type(b):
            return False
        if isinstance(a, (IntImm, FloatImm)) and isinstance(b, (IntImm, FloatImm)):
            return a.value == b.value and a.dtype == b.dtype
        return all(recurse(getattr(a, f), getattr(b, f)) for f in child_fields(type(a)))
    return a == b

"""TVM's spelling of integer comparisons after simplification.

TVM's simplifier writes `a >= b` as `b <= a` and `a > b` as `b < a`, and moves a constant
added to one side of a comparison with a constant onto that constant:

    x - 3 >= 0 and x - 3 < 200     ->     3 <= x and x < 203
    x + 2 <= 5                     ->     x <= 3
    x > 3                          ->     3 < x
    12 - x < 10                    ->     2 < x

Comparisons of non-integer operands and comparisons with no constant side other than the
flip are left alone (`x - k >= 0` becomes `0 <= x - k`). `normal_comparisons` rewrites every
comparison inside a boolean expression built with and / or / not.
"""

from __future__ import annotations

from tirc.analysis.arith.canonical import from_sum, to_sum
from tirc.ir import expr as E
from tirc.ir.expr import IntImm, PrimExpr

_FLIPPED: dict[type, type] = {E.GE: E.LE, E.GT: E.LT}


def normal_comparisons(expr: PrimExpr) -> PrimExpr:
    """`expr` with each integer comparison in TVM's normal form (see the module)."""
    if isinstance(expr, (E.And, E.Or)):
        a, b = normal_comparisons(expr.a), normal_comparisons(expr.b)
        if a is expr.a and b is expr.b:
            return expr
        return type(expr)(a, b)
    if isinstance(expr, E.Not):
        a = normal_comparisons(expr.a)
        return expr if a is expr.a else E.Not(a)
    if isinstance(expr, E.CompareOp):
        return _comparison(expr)
    return expr


def _comparison(node: E.CompareOp) -> PrimExpr:
    dtype = node.a.dtype
    if not (dtype.is_integer and dtype.is_scalar):
        return node
    kind, a, b = type(node), node.a, node.b
    if kind in _FLIPPED:
        kind, a, b = _FLIPPED[kind], b, a
    if kind in (E.LT, E.LE):
        a, b = _move_constant(a, b)
    if kind is type(node) and a is node.a and b is node.b:
        return node
    return kind(a, b)


def _move_constant(a: PrimExpr, b: PrimExpr) -> tuple[PrimExpr, PrimExpr]:
    """`x + c1 < c2` -> `x < c2 - c1` and `c2 < x + c1` -> `c2 - c1 < x`; a negated
    variable changes sides: `c1 - x < c2` -> `c1 - c2 < x`."""
    if isinstance(b, IntImm) and not isinstance(a, IntImm):
        rest, offset = _split_constant(a)
        if offset:
            negated = _negated(rest)
            if negated is not None:
                return IntImm(offset - b.value, b.dtype), negated
            return rest, IntImm(b.value - offset, b.dtype)
    elif isinstance(a, IntImm) and not isinstance(b, IntImm):
        rest, offset = _split_constant(b)
        if offset:
            negated = _negated(rest)
            if negated is not None:
                return negated, IntImm(offset - a.value, a.dtype)
            return IntImm(a.value - offset, a.dtype), rest
    return a, b


def _negated(expr: PrimExpr) -> PrimExpr | None:
    """`x` where `expr` is `0 - x` (or `x * -1`), else None."""
    if isinstance(expr, E.Mul) and isinstance(expr.b, IntImm) and expr.b.value == -1:
        return expr.a
    if isinstance(expr, E.Sub) and isinstance(expr.a, IntImm) and expr.a.value == 0:
        return expr.b
    return None


def _split_constant(expr: PrimExpr) -> tuple[PrimExpr, int]:
    """`expr` as `rest + offset` when it is a sum with a constant term, else (expr, 0)."""
    if not isinstance(expr, (E.Add, E.Sub)):
        return expr, 0
    total = to_sum(expr)
    if total.const == 0 or total.is_const:
        return expr, 0
    offset = total.const
    total.const = 0
    return from_sum(total), offset

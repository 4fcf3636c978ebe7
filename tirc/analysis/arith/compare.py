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

import math

from tirc.analysis.arith.analyzer import Analyzer
from tirc.ir import expr as E
from tirc.ir.canonical import Sum, from_sum, to_sum
from tirc.ir.dtype import BOOL
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


def less_than(value: PrimExpr, limit: PrimExpr, analyzer: Analyzer) -> PrimExpr:
    """`value < limit` as TVM's rewrite simplifier leaves it, for a limit built of min, max
    and sums (the upper bound compute_at checks a regenerated binding against):

        x < min(a, b) + 1      ->  x < a + 1 and x < b + 1
        x < max(a, b)          ->  x < a or x < b
        y * 4 + r < q * 4      ->  y - q < 0              (r in [0, 4))
        x < max(a, 1)          ->  x < a or x == 0        (x >= 0)

    The whole is true where the analyzer proves it (symbolic bounds included); a part is
    dropped only where constant bounds prove it, as TVM's simplifier does."""
    if analyzer.can_prove(E.LT(value, limit), symbolic=True):
        return IntImm(1, BOOL)
    limit = _push_constant(limit, 0, analyzer)
    return _split_less_than(value, limit, analyzer)


def _push_constant(limit: PrimExpr, offset: int, analyzer: Analyzer) -> PrimExpr:
    """`limit + offset` with the constant pushed into min and max: min(a, b) + 1 is
    min(a + 1, b + 1)."""
    if isinstance(limit, (E.Min, E.Max)):
        return type(limit)(
            _push_constant(limit.a, offset, analyzer), _push_constant(limit.b, offset, analyzer)
        )
    if (
        isinstance(limit, E.Add)
        and isinstance(limit.b, IntImm)
        and isinstance(limit.a, (E.Min, E.Max))
    ):
        return _push_constant(limit.a, offset + limit.b.value, analyzer)
    total = to_sum(limit)
    total.const += offset
    return analyzer.simplify(from_sum(total))


def _split_less_than(
    value: PrimExpr, limit: PrimExpr, analyzer: Analyzer, in_max: bool = False
) -> PrimExpr:
    if isinstance(limit, (E.Min, E.Max)):
        in_max = in_max or isinstance(limit, E.Max)
        a = _split_less_than(value, limit.a, analyzer, in_max)
        b = _split_less_than(value, limit.b, analyzer, in_max)
        if isinstance(limit, E.Min):
            return _conjoin(a, b)
        return _disjoin(a, b)
    test: PrimExpr = E.LT(value, limit)
    if analyzer.can_prove(test):  # constant bounds only: TVM's simplifier proves no more
        return IntImm(1, test.dtype)
    if isinstance(limit, IntImm):
        # TVM spells the `x <= 0` branch of `x <= max(a, 0)` as `x == 0`; a plain `x < 1`
        # stays as it is
        nonnegative = analyzer.can_prove(E.GE(value, IntImm(0, value.dtype)))
        if in_max and limit.value == 1 and nonnegative:
            return E.EQ(value, IntImm(0, value.dtype))
        return test
    factored = _factored_difference(value, limit, analyzer)
    return test if factored is None else E.LT(factored, IntImm(0, value.dtype))


def _factored_difference(value: PrimExpr, limit: PrimExpr, analyzer: Analyzer) -> PrimExpr | None:
    """`d` where `value - limit` is `g * d + r` with `r` in [0, g) for g > 1 the common
    factor of its scaled terms (so that `value < limit` is `d < 0`); None where there is
    none."""
    total = to_sum(value)
    total.add(to_sum(limit), -1)
    terms = list(total.terms.values())
    factor = 0
    for _, coeff in terms:
        if abs(coeff) != 1:
            factor = math.gcd(factor, coeff)
    if factor <= 1:
        return None
    dtype = value.dtype
    quotient, remainder = Sum(dtype), Sum(dtype)
    for atom, coeff in terms:
        if coeff % factor == 0:
            quotient.add_term(atom, coeff // factor)
        else:
            remainder.add_term(atom, coeff)
    if quotient.is_const:
        return None
    quotient.const = total.const // factor
    remainder.const = total.const % factor
    rest = analyzer.simplify(from_sum(remainder))
    if not (
        analyzer.can_prove(E.GE(rest, IntImm(0, dtype)))
        and analyzer.can_prove(E.LT(rest, IntImm(factor, dtype)))
    ):
        return None
    return from_sum(quotient)


def _conjoin(a: PrimExpr, b: PrimExpr) -> PrimExpr:
    if isinstance(a, IntImm):
        return b if a.value else a
    if isinstance(b, IntImm):
        return a if b.value else b
    return E.And(a, b)


def _disjoin(a: PrimExpr, b: PrimExpr) -> PrimExpr:
    if isinstance(a, IntImm):
        return a if a.value else b
    if isinstance(b, IntImm):
        return b if b.value else a
    return E.Or(a, b)

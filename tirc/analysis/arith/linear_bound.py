"""Linear bounds of integer expressions over non-negative variables, for proofs the interval
simplifier cannot make: floor division rounds, and its error is bounded.

    lower((16 * q + 63) // 64 * 4) = q              (q >= 0; `(x + 63) // 64 >= x / 64`)
    proves (16 * q + 63) // 64 * 4 >= q

Each expression gets a linear form in its atoms (variables, and the sub-expressions named in
`atoms`) with rational coefficients that bounds it from below or above for every value of
non-negative atoms. A form that cannot be bounded (min of two forms from below, an unknown
operator) gives None, and nothing is proven.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from fractions import Fraction

from tirc.ir import expr as E
from tirc.ir.expr import IntImm, PrimExpr, Var
from tirc.ir.structural import expr_key

Form = dict[Hashable, Fraction]  # atom key -> coefficient; None -> the constant


def at_least(a: PrimExpr, b: PrimExpr, atoms: Sequence[PrimExpr] = ()) -> bool:
    """Whether `a >= b` for every value of the (non-negative) variables and `atoms`."""
    keys = {expr_key(atom) for atom in atoms}
    difference = _bound(E.Sub(a, b), keys, lower=True)
    if difference is None:
        return False
    return all(value >= 0 for value in difference.values())


def _bound(expr: PrimExpr, atoms: set[Hashable], lower: bool) -> Form | None:
    key = expr_key(expr)
    if key in atoms or isinstance(expr, Var):
        return {key: Fraction(1)}
    if isinstance(expr, IntImm):
        return {None: Fraction(expr.value)}
    if isinstance(expr, E.Add):
        return _sum(_bound(expr.a, atoms, lower), _bound(expr.b, atoms, lower), 1)
    if isinstance(expr, E.Sub):
        return _sum(_bound(expr.a, atoms, lower), _bound(expr.b, atoms, not lower), -1)
    if isinstance(expr, E.Mul):
        for factor, other in ((expr.b, expr.a), (expr.a, expr.b)):
            if isinstance(factor, IntImm):
                inner = _bound(other, atoms, lower if factor.value >= 0 else not lower)
                return None if inner is None else _scale(inner, Fraction(factor.value))
        return None
    if isinstance(expr, E.FloorDiv) and isinstance(expr.b, IntImm) and expr.b.value > 0:
        divisor = expr.b.value
        inner = _bound(expr.a, atoms, lower)
        if inner is None:
            return None
        result = _scale(inner, Fraction(1, divisor))
        if lower:  # x // d >= (x - (d - 1)) / d
            result[None] = result.get(None, Fraction(0)) - Fraction(divisor - 1, divisor)
        return result
    if isinstance(expr, E.FloorMod) and isinstance(expr.b, IntImm) and expr.b.value > 0:
        return {None: Fraction(0 if lower else expr.b.value - 1)}
    if isinstance(expr, (E.Min, E.Max)) and (isinstance(expr, E.Max) == lower):
        # max(a, b) >= a, min(a, b) <= a: either side bounds it; take the first that does
        return _bound(expr.a, atoms, lower) or _bound(expr.b, atoms, lower)
    return None


def _sum(a: Form | None, b: Form | None, sign: int) -> Form | None:
    if a is None or b is None:
        return None
    result = dict(a)
    for key, value in b.items():
        result[key] = result.get(key, Fraction(0)) + sign * value
    return result


def _scale(form: Form, factor: Fraction) -> Form:
    return {key: value * factor for key, value in form.items()}

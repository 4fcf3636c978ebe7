"""Integer expressions as affine forms `sum(coefficient * var) + constant`, seen through the
variables (block iteration variables, Binds) that stand for affine expressions of others.

Used to split a flattened buffer offset into one term per variable, so that the part that
depends only on outer loops is computed outside the inner ones. Exact only where nothing
wraps around, which the caller checks.
"""

from __future__ import annotations

from collections.abc import Callable

from tirc.interp.threads.context import Context
from tirc.ir.expr import Add, IntImm, Mul, PrimExpr, Sub, Var
from tirc.ir.functor import Dispatch

Affine = tuple[dict[Var, int], int]


def affine_form(ctx: Context, expr: PrimExpr) -> Affine | None:
    rule = _RULES.get(type(expr))
    if rule is None or not expr.dtype.is_integer or expr.dtype.is_vector:
        return None
    return rule(ctx, expr)


_RULES: Dispatch[Context, [], Affine | None] = Dispatch("affine form")


@_RULES.register(IntImm)
def _int(ctx: Context, expr: IntImm) -> Affine | None:
    return {}, expr.value


@_RULES.register(Var)
def _var(ctx: Context, expr: Var) -> Affine | None:
    known = ctx.affine.get(expr)
    if known is not None:
        return dict(known[0]), known[1]
    if expr in ctx.constants:
        return {}, int(ctx.names[expr])
    return {expr: 1}, 0


def _combine(sign: int) -> Callable[[Context, PrimExpr], Affine | None]:
    def rule(ctx: Context, expr: PrimExpr) -> Affine | None:
        assert isinstance(expr, Add | Sub)
        a = affine_form(ctx, expr.a)
        b = affine_form(ctx, expr.b)
        if a is None or b is None:
            return None
        terms = dict(a[0])
        for var, coefficient in b[0].items():
            terms[var] = terms.get(var, 0) + sign * coefficient
        return {v: c for v, c in terms.items() if c}, a[1] + sign * b[1]

    return rule


@_RULES.register(Mul)
def _mul(ctx: Context, expr: Mul) -> Affine | None:
    a = affine_form(ctx, expr.a)
    b = affine_form(ctx, expr.b)
    if a is None or b is None:
        return None
    if not a[0]:
        a, b = b, a
    if b[0]:
        return None  # a product of two variables is not affine
    factor = b[1]
    return {v: c * factor for v, c in a[0].items() if c * factor}, a[1] * factor


_RULES.register(Add)(_combine(1))
_RULES.register(Sub)(_combine(-1))

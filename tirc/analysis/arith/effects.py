"""Whether an expression holds a call that is no pure function of its arguments: two such
calls with the same arguments may give different values (or do something), so a rule may
neither merge nor repeat them."""

from __future__ import annotations

from tirc.ir import expr as E
from tirc.ir.expr import PrimExpr
from tirc.ir.functor import walk
from tirc.ir.intrinsics import Effect, lookup


def has_effect(expr: PrimExpr) -> bool:
    """A call in `expr` that is not a known pure intrinsic."""
    calls: list[E.Call] = []

    def check(node: object) -> None:
        if isinstance(node, E.Call):
            intrinsic = lookup(node.op)
            if intrinsic is None or intrinsic.effect is not Effect.PURE:
                calls.append(node)

    walk(expr, check)
    return bool(calls)

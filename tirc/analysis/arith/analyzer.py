"""The Analyzer: what is known about variables, and the queries primitives and passes ask."""

from __future__ import annotations

from tirc.analysis.arith.bound import Bound, const_bound
from tirc.analysis.arith.simplify import Simplifier
from tirc.ir.buffer import Range
from tirc.ir.expr import IntImm, PrimExpr, Var


class Analyzer:
    """Bounds of variables, and simplification and proofs under them.

    `bind(var, Range)` records `min <= var < min + extent` when both are constant (the usual
    case for loops and block iteration variables); symbolic ranges are not yet used.
    """

    def __init__(self) -> None:
        self.ranges: dict[Var, Bound] = {}

    def bind(self, var: Var, domain: Range | Bound) -> None:
        if isinstance(domain, Range):
            low = const_bound(domain.min, self.ranges)
            extent = const_bound(domain.extent, self.ranges)
            if low.min is None or extent.max is None or low.max is None:
                bound = Bound(low.min, None)
            else:
                bound = Bound(low.min, low.max + extent.max - 1)
        else:
            bound = domain
        self.ranges[var] = bound

    def const_bound(self, expr: PrimExpr) -> Bound:
        return const_bound(expr, self.ranges)

    def simplify(self, expr: PrimExpr) -> PrimExpr:
        result: PrimExpr = Simplifier(self.ranges).visit(expr)
        return result

    def can_prove(self, condition: PrimExpr) -> bool:
        """True only when `condition` holds for every value of the known variables."""
        result = self.simplify(condition)
        return isinstance(result, IntImm) and result.value != 0

    def can_prove_equal(self, a: PrimExpr, b: PrimExpr) -> bool:
        from tirc.ir.expr import Sub

        difference = self.simplify(Sub(a, b))
        return isinstance(difference, IntImm) and difference.value == 0

"""The Analyzer: what is known about variables, and the queries primitives and passes ask."""

from __future__ import annotations

from tirc.analysis.arith.facts import Facts
from tirc.analysis.arith.int_set import relax
from tirc.ir import expr as E
from tirc.ir.expr import IntImm, PrimExpr


class Analyzer(Facts):
    """Bounds of variables, and simplification and proofs under them.

    `bind(var, Range)` records the constant bounds of `min <= var < min + extent` (`i` in
    `[0, n)` is at least 0) and the Range itself, which symbolic proofs relax over:

        bind(i, Range(0, n)); can_prove(i < n, symbolic=True)    ->  True  (n - i >= 1)

    `mark_non_negative(n)` records what a schedule knows of its buffers' shape variables.
    """

    def can_prove(self, condition: PrimExpr, symbolic: bool = False) -> bool:
        """True only when `condition` holds for every value of the known variables.

        With `symbolic`, an integer comparison the simplifier leaves open is tried once more
        as `b - a >= 1` (for `a < b`; likewise <=, >, >=) by relaxing the difference over the
        bound ranges, symbolic ends included, and bounding the relaxed least value:

            i in [0, n):  n - i  relaxes to  [n - (n - 1), n],  least value 1  ->  i < n
        """
        result = self.simplify(condition)
        if isinstance(result, IntImm):
            return result.value != 0
        if not symbolic:
            return False
        return self._prove_by_relaxing(condition)

    def _prove_by_relaxing(self, condition: PrimExpr) -> bool:
        if not isinstance(condition, E.CompareOp):
            return False
        shape = _DIFFERENCES.get(type(condition))
        if shape is None:
            return False
        a, b = condition.a, condition.b
        if not (a.dtype.is_integer and a.dtype.is_scalar):
            return False
        upper, lower, least = shape(a, b)
        difference = self.simplify(E.Sub(upper, lower))
        relaxed = relax(difference, self.domains, self)
        if relaxed.min is None:
            return False
        low = self.const_bound(self.simplify(relaxed.min)).min
        return low is not None and low >= least


# a comparison as (upper, lower, least): it holds when upper - lower >= least
_DIFFERENCES = {
    E.LT: lambda a, b: (b, a, 1),
    E.LE: lambda a, b: (b, a, 0),
    E.GT: lambda a, b: (a, b, 1),
    E.GE: lambda a, b: (a, b, 0),
}

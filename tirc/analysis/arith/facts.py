"""What is known about variables, and the queries that need nothing more: constant bounds,
simplification, and proofs by simplifying to a constant.

The Analyzer adds symbolic proofs, which relax over interval sets (`int_set`); interval sets
in turn ask these queries, so they take Facts and the Analyzer builds on both.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Self

from tirc.analysis.arith.bound import Bound, const_bound
from tirc.analysis.arith.conditions import Context
from tirc.analysis.arith.memo import SimplifyMemo
from tirc.analysis.arith.simplify import Simplifier
from tirc.ir.buffer import Range
from tirc.ir.canonical import to_sum
from tirc.ir.expr import IntImm, PrimExpr, Sub, Var


class Facts:
    """Constant bounds of variables and the Ranges they were bound to.

    `bind(var, Range)` records the constant bounds of `min <= var < min + extent` (`i` in
    `[0, n)` is at least 0) and the Range itself; `mark_non_negative(n)` records what a
    schedule knows of its buffers' shape variables.
    """

    def __init__(self, remember: bool = False) -> None:
        """With `remember`, simplified results are remembered by structure while the bounds
        stay the same (see `memo`): for a pass over a large, repetitive program such as an
        unrolled body. A query that meets each expression once pays for the keys."""
        self.ranges: dict[Var, Bound] = {}
        self.domains: dict[Var, Range] = {}
        self._memo = SimplifyMemo() if remember else None
        # what conditions in scope and bound values add (see `assume` and `bind_value`)
        self.context = Context()

    @classmethod
    def over(cls, domains: Mapping[Var, Range]) -> Self:
        """Knowing that each variable of `domains` ranges over its Range."""
        facts = cls()
        for var, domain in domains.items():
            facts.bind(var, domain)
        return facts

    def bind(self, var: Var, domain: Range | Bound) -> None:
        if isinstance(domain, Range):
            low = const_bound(domain.min, self.ranges)
            extent = const_bound(domain.extent, self.ranges)
            if low.min is None or extent.max is None or low.max is None:
                bound = Bound(low.min, None)
            else:
                bound = Bound(low.min, low.max + extent.max - 1)
            self.domains[var] = domain
        else:
            bound = domain
            self.domains.pop(var, None)
        self.ranges[var] = bound

    def bind_value(self, var: Var, value: PrimExpr) -> None:
        """`var` stands for `value` (a pure `x = value` binding): later expressions read it
        as that value, as TVM's analyzer substitutes a bound variable."""
        if not (value.dtype.is_integer or value.dtype.is_bool):
            return  # a handle or a float: nothing to simplify with it
        value = self.simplify(value)
        self.context = self.context.with_value(var, value)
        self.ranges[var] = self.const_bound(value)

    def assume(self, condition: PrimExpr) -> Callable[[], None]:
        """Know `condition` from here on (the scope of an `if`, an assert); returns the
        function that forgets it again. Its conjuncts become literal facts (the same condition
        met again is true, its negation false), a comparison of integers bounds its
        difference (`i < n - 1` decides `i + 1 < n`), and a variable compared with a constant
        takes the tighter bound (`i < 3` decides `i < 8`) without being folded to a value."""
        saved_context, saved_ranges = self.context, self.ranges
        simplifier = Simplifier(self.ranges, None, self.context)
        self.ranges, self.context = simplifier.assumed(self.simplify(condition))

        def forget() -> None:
            self.context, self.ranges = saved_context, saved_ranges

        return forget

    def mark_global_non_negative(self, value: PrimExpr) -> None:
        """A buffer parameter's shape `var * scale + offset` is non-negative, so var is at
        least `-offset / scale` (TVM's rule for `n * 32` and `n * 32 - 1`: n >= 0, n >= 1)."""
        total = to_sum(value)
        if len(total.terms) != 1:
            return
        ((atom, coeff),) = total.terms.values()
        if coeff <= 0 or not isinstance(atom, Var) or not atom.dtype.is_integer:
            return
        least = -(total.const // coeff)  # ceil(-offset / scale)
        self.ranges[atom] = self.ranges.get(atom, Bound(None, None)).intersect(Bound(least, None))

    def mark_non_negative(self, var: Var) -> None:
        """Record `var >= 0` (a shape variable), keeping what else is known of it."""
        self.ranges[var] = self.ranges.get(var, Bound(None, None)).intersect(Bound(0, None))

    def const_bound(self, expr: PrimExpr) -> Bound:
        return const_bound(expr, self.ranges)

    def simplify(self, expr: PrimExpr) -> PrimExpr:
        memo = None if self._memo is None else self._memo.under(self.ranges, self.context)
        result: PrimExpr = Simplifier(self.ranges, memo, self.context).visit(expr)
        return result

    def can_prove(self, condition: PrimExpr) -> bool:
        """True only when `condition` simplifies to a true constant under the known bounds."""
        result = self.simplify(condition)
        return isinstance(result, IntImm) and result.value != 0

    def can_prove_equal(self, a: PrimExpr, b: PrimExpr) -> bool:
        difference = self.simplify(Sub(a, b))
        return isinstance(difference, IntImm) and difference.value == 0

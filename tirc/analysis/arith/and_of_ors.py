"""A boolean condition as an `and` of `or`s (TVM's convert_boolean_to_and_of_ors): `a or b
and c` is `(a or b) and (a or c)`, with repeated terms and groups dropped; then each pair of
terms in a group, and each pair of groups that differ in one term, simplified together, so
that what two of them say once is said once: `(i == 0 or k == 20) and (i == 0 or k != 30)` is
`i == 0 or k == 20`. Pure over a `simplify(expr, known)` callback (the simplifier's, without
this rule), so it imports nothing of the simplifier."""

from __future__ import annotations

from collections.abc import Callable, Hashable

from tirc.analysis.arith.effects import has_effect
from tirc.ir import dtype as dt
from tirc.ir import expr as E
from tirc.ir.expr import IntImm, PrimExpr
from tirc.ir.structural import expr_key

# `expr` simplified, knowing `known` where it is given
Simplify = Callable[[PrimExpr, PrimExpr | None], PrimExpr]

# More groups than this and the condition stays as it is: distributing `or` over `and`
# doubles the groups with each `(a and b) or ...`.
GROUP_LIMIT = 64

TRUE, FALSE = 0, 1  # the terms `true` and `false`, first in every table


def as_and_of_ors(expr: PrimExpr, simplify: Simplify) -> PrimExpr:
    """`expr` (a scalar boolean) as a simplified `and` of `or`s; `expr` itself where it has a
    call with an effect (distributing would repeat it), would exceed GROUP_LIMIT groups, or is
    in that form already."""
    if _group_count(expr) > GROUP_LIMIT or has_effect(expr):
        return expr
    normal = AndOfOrs(expr)
    normal.simplify(simplify)
    result = normal.to_expr()
    return expr if expr_key(result) == expr_key(expr) else result


class AndOfOrs:
    """Groups of term numbers: the `and` of each group's `or`. Terms are numbered by
    structure, so a term met twice is one number, and a rewrite of two terms replaces their
    numbers in place (`true` / `false` where one goes) until `drop_constants` tidies up."""

    def __init__(self, expr: PrimExpr) -> None:
        self.terms: list[PrimExpr] = [IntImm(1, dt.BOOL), IntImm(0, dt.BOOL)]
        self.numbers: dict[Hashable, int] = {expr_key(term): n for n, term in enumerate(self.terms)}
        self.groups: list[list[int]] = []
        for part in _and_parts(expr):
            group: list[int] = []
            for term in _or_parts(part):
                number = self.number(term)
                if number not in group:
                    group.append(number)
            if not any(set(group) == set(other) for other in self.groups):
                self.groups.append(group)

    def number(self, term: PrimExpr) -> int:
        key = expr_key(term)
        if key not in self.numbers:
            self.numbers[key] = len(self.terms)
            self.terms.append(term)
        return self.numbers[key]

    def to_expr(self) -> PrimExpr:
        result: PrimExpr | None = None
        for group in self.groups:
            either: PrimExpr | None = None
            for number in group:
                term = self.terms[number]
                either = term if either is None else E.Or(either, term)
            either = IntImm(0, dt.BOOL) if either is None else either
            result = either if result is None else E.And(result, either)
        return IntImm(1, dt.BOOL) if result is None else result

    def simplify(self, simplify: Simplify) -> None:
        self._within_groups(simplify)
        self._drop_constants()
        self._across_groups(simplify)
        self._drop_constants()

    def _pair(
        self,
        a: int,
        b: int,
        kind: type[E.And] | type[E.Or],
        simplify: Simplify,
        known: PrimExpr | None = None,
    ) -> tuple[int, int]:
        """Terms `a` and `b` rewritten where `a <kind> b` simplifies: to its two operands if
        it is still a `kind`, else to the identity of `kind` and the simplified whole."""
        joint = kind(self.terms[a], self.terms[b])
        simplified = simplify(joint, known)
        if expr_key(simplified) == expr_key(joint):
            return a, b
        if isinstance(simplified, kind):
            return self.number(simplified.a), self.number(simplified.b)
        return (TRUE if kind is E.And else FALSE), self.number(simplified)

    def _within_groups(self, simplify: Simplify) -> None:
        """Each pair of terms of a group, as their `or`: `i == 20 or i != 30` is `i != 30`."""
        for group in self.groups:
            for i in range(len(group)):
                for j in range(i + 1, len(group)):
                    group[i], group[j] = self._pair(group[i], group[j], E.Or, simplify)

    def _across_groups(self, simplify: Simplify) -> None:
        """Each pair of groups: one that holds all of the other's terms goes (the other
        implies it); two single terms, or two groups alike but for one term each, have those
        terms simplified as their `and`, knowing the shared terms fail."""
        groups = self.groups
        for i in range(len(groups)):
            for j in range(i + 1, len(groups)):
                first, second = groups[i], groups[j]
                if len(first) == 1 and len(second) == 1:
                    first[0], second[0] = self._pair(first[0], second[0], E.And, simplify)
                    continue
                only_first = [n for n, term in enumerate(first) if term not in second]
                if not only_first:
                    groups[j] = [TRUE]
                    continue
                only_second = [n for n, term in enumerate(second) if term not in first]
                if not only_second:
                    groups[i] = [TRUE]
                    continue
                if len(first) != len(second) or len(only_second) != 1 or len(only_first) != 1:
                    continue
                x, y = only_first[0], only_second[0]
                known: PrimExpr | None = None
                for n, term in enumerate(first):
                    if n != x:
                        fails = simplify(E.Not(self.terms[term]), None)
                        known = fails if known is None else E.And(known, fails)
                first[x], second[y] = self._pair(first[x], second[y], E.And, simplify, known)

    def _drop_constants(self) -> None:
        """`true` in a group makes it true and `false` goes from it; then a group that is
        false makes the whole false, and true groups go."""
        for n, group in enumerate(self.groups):
            self.groups[n] = [TRUE] if TRUE in group else [t for t in group if t != FALSE]
        if any(not group for group in self.groups):
            self.groups = [[]]
        else:
            self.groups = [group for group in self.groups if group != [TRUE]]


def _and_parts(expr: PrimExpr) -> list[PrimExpr]:
    """The conjuncts of `expr` with `or` distributed over `and`: `(a and b) or c` is
    `a or c`, `b or c`."""
    if isinstance(expr, E.And):
        return _and_parts(expr.a) + _and_parts(expr.b)
    if isinstance(expr, E.Or):
        return [E.Or(x, y) for x in _and_parts(expr.a) for y in _and_parts(expr.b)]
    return [expr]


def _or_parts(expr: PrimExpr) -> list[PrimExpr]:
    if isinstance(expr, E.Or):
        return _or_parts(expr.a) + _or_parts(expr.b)
    return [expr]


def _group_count(expr: PrimExpr) -> int:
    """How many conjuncts `_and_parts` makes, counted without making them."""
    if isinstance(expr, E.And):
        return _group_count(expr.a) + _group_count(expr.b)
    if isinstance(expr, E.Or):
        return _group_count(expr.a) * _group_count(expr.b)
    return 1

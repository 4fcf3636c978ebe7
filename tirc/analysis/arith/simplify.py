"""A bottom-up simplifier for integer and boolean expressions.

Folds constants exactly per dtype, puts index arithmetic (int32, int64) in canonical form, and
removes floordiv/floormod, min/max and comparisons that known variable bounds decide. Other
integer widths wrap: their arithmetic only folds as the parser's does (`tirc.ir.arith.fold`),
and their min/max and comparisons are decided on the operands' values, never on a difference
computed in the narrow type. Float arithmetic is left as written: folding it could change
rounding. Returns the same object when nothing changed. The boolean and conditional rules
(`and`, `or`, `select`, the facts a condition adds) live in conditions.py.
"""

from __future__ import annotations

import dataclasses
import math
import operator
from collections.abc import Callable, Hashable, Mapping
from typing import Any

from tirc.analysis.arith.bound import Bound, const_bound
from tirc.analysis.arith.conditions import (
    COMPLEMENT,
    FLIPPED,
    NO_CONTEXT,
    BooleanRules,
    Context,
    absorbed,
    bool_const,
    const_of,
    is_pure,
    make_compare,
    same,
)
from tirc.analysis.arith.effects import has_effect
from tirc.analysis.arith.lanes import fold_lanes
from tirc.analysis.arith.memo import SimplifyMemo
from tirc.ir import arith, integer
from tirc.ir import dtype as dt
from tirc.ir import expr as E
from tirc.ir.canonical import Sum, from_sum, merge_splits, to_sum
from tirc.ir.expr import IntImm, PrimExpr, Var
from tirc.ir.structural import expr_key


def difference_key(difference: PrimExpr) -> tuple[Hashable, int]:
    """The key of `difference` less its constant, and that constant: a fact about `i - n + 1`
    bounds `i - n` too."""
    total = to_sum(difference)
    offset = total.const
    return expr_key(from_sum(dataclasses.replace(total, const=0))), offset


def _is_index(expr: PrimExpr) -> bool:
    """An int32 / int64 scalar, whose arithmetic the rewrite rules may treat as exact."""
    return integer.is_index_type(expr.dtype)


def _is_integer(expr: PrimExpr) -> bool:
    dtype = expr.dtype
    return dtype.is_integer and dtype.is_scalar


def _folded(node: E.BinaryOp) -> PrimExpr:
    """`node` of a wrapping integer (no index type): folded as the parser folds it, and
    `x - x` is 0; no other rule holds once values wrap ((x * 4 + 9) // 8 is no x // 2 + 1
    for an int8 x of 32 or more)."""
    folded = arith.fold(node)
    if folded is not None:
        return folded
    if isinstance(node, E.Sub) and same(node.a, node.b) and not has_effect(node.a):
        return IntImm(0, node.dtype)  # one expression reads a load once: A[i] - A[i] is 0
    return node


class Simplifier(BooleanRules):
    """One simplification under fixed variable bounds (a new instance per query).

    Each expression object is simplified once: a subtree met again (shared by two parents,
    or rebuilt into the `a - b` whose bound decides a comparison) reuses its result, and a
    result counts as simplified already, so that a deep sum is not canonicalized again at
    every comparison above it."""

    def __init__(
        self,
        ranges: Mapping[Var, Bound],
        memo: SimplifyMemo | None = None,
        context: Context = NO_CONTEXT,
    ):
        self.ranges = ranges
        self.context = context
        self.memo = memo  # results found under the same `ranges` by earlier instances
        self.done: dict[int, tuple[PrimExpr, PrimExpr]] = {}  # id -> (expr, its result)
        self.comparing = False  # simplifying an `a - b` built to compare a with b

    def visit(self, node: Any) -> Any:
        if isinstance(node, Var) and node in self.context.values:
            return self._known(self.context.values[node])
        if not isinstance(node, PrimExpr) or isinstance(node, (Var, IntImm)):
            return super().visit(node)
        known = self.done.get(id(node))
        if known is not None:
            return known[1]
        if self.memo is None:
            result = super().visit(node)
        else:
            key = (self.memo.key(node), self.comparing)
            result = self.memo.results.get(key)
            if result is None:
                result = super().visit(node)
                self.memo.results[key] = result
        result = self._known(result)
        self.done[id(node)] = (node, result)  # the entry keeps `node` alive: ids stay unique
        self.done.setdefault(id(result), (result, result))
        return result

    def bound(self, expr: PrimExpr) -> Bound:
        return const_bound(expr, self.ranges)

    def _known(self, result: PrimExpr) -> PrimExpr:
        """`result`, or its truth where a fact in scope gives it."""
        if self.context.facts and result.dtype.is_bool and result.dtype.is_scalar:
            truth = self.context.facts.get(expr_key(result))
            if truth is not None:
                return bool_const(truth)
        return result

    def _difference_bound(self, a: PrimExpr, b: PrimExpr) -> Bound:
        """The bound of `a - b`, simplified without the rule for a difference of quotients
        (TVM decides `min((n + 3) // 4, n // 4)` by bounds alone, and leaves it)."""
        difference = self._difference(a, b)
        bound = self.bound(difference)
        if self.context.differences:
            key, offset = difference_key(difference)
            known = self.context.differences.get(key)
            if known is not None:
                bound = bound.intersect(known.shifted(offset))
        return bound

    def _difference(self, a: PrimExpr, b: PrimExpr) -> PrimExpr:
        """`a - b` simplified, as a comparison of a with b reads it. Other than an index
        type's, subtraction wraps (a uint8 a - b is never negative, an int8 x + 1 - x is 1 even
        where x + 1 wrapped to -128): subtract the operands' values as signed 64-bit numbers
        instead, whose bound is then exact (or, for uint64, unknown)."""
        if not _is_index(a):
            a, b = E.Cast(dt.INT64, a), E.Cast(dt.INT64, b)
        comparing, self.comparing = self.comparing, True
        try:
            return self.visit(E.Sub(a, b))
        finally:
            self.comparing = comparing

    def assumed(self, condition: PrimExpr) -> tuple[dict[Var, Bound], Context]:
        """The bounds and context knowing a simplified `condition` too (see `Facts.assume`)."""
        facts, differences, variables = self.literal_facts(condition)
        keyed: dict[Hashable, Bound] = {}
        for difference, bound in differences:
            key, offset = difference_key(difference)
            shifted = bound.shifted(-offset)
            keyed[key] = keyed[key].intersect(shifted) if key in keyed else shifted
        context = self.context.with_facts(facts, keyed)
        ranges = dict(self.ranges)
        for var, bound in variables:
            old = const_bound(var, ranges)
            new = old.intersect(bound)
            if new != old:
                ranges[var] = new
                context = context.with_unfolded(var)
        return ranges, context

    def _under(self, condition: PrimExpr, expr: PrimExpr) -> PrimExpr:
        """`expr` simplified knowing `condition`."""
        ranges, context = self.assumed(condition)
        return Simplifier(ranges, None, context).visit(expr)

    def _apart(self, expr: PrimExpr, known: PrimExpr | None) -> PrimExpr:
        context = dataclasses.replace(self.context, and_of_ors=False, boolean_branches=True)
        simplifier = Simplifier(self.ranges, None, context)
        if known is not None:
            ranges, context = simplifier.assumed(simplifier.visit(known))
            simplifier = Simplifier(ranges, None, context)
        result: PrimExpr = simplifier.visit(expr)
        return result

    def literal_facts(
        self, condition: PrimExpr
    ) -> tuple[dict[Hashable, bool], list[tuple[PrimExpr, Bound]], list[tuple[Var, Bound]]]:
        """What a simplified `condition` known true says: the truth of each conjunct in
        each of its spellings (`i < n` is `n > i`, and `i >= n`, `n <= i`, `not i < n` are
        false), the bound of each integer comparison's difference, both ways (`i < n`:
        `i - n` at most -1, `n - i` at least 1), and the bound of a variable compared with a
        constant (`i < 3`: at most 2; `i + 15 < 16` bounds i once simplified to `i < 1`)."""
        facts: dict[Hashable, bool] = {}
        differences: list[tuple[PrimExpr, Bound]] = []
        variables: list[tuple[Var, Bound]] = []

        def visit(expr: PrimExpr, truth: bool) -> None:
            if not is_pure(expr):
                return  # a store may change what a load reads: no fact about it lasts
            facts[expr_key(expr)] = truth
            facts[expr_key(E.Not(expr))] = not truth
            if isinstance(expr, E.And) and truth or isinstance(expr, E.Or) and not truth:
                visit(expr.a, truth)
                visit(expr.b, truth)
            elif isinstance(expr, E.Not):
                visit(expr.a, not truth)
            elif isinstance(expr, E.CompareOp) and _is_integer(expr.a):
                kind = type(expr) if truth else COMPLEMENT[type(expr)]
                compared = make_compare(kind, expr.a, expr.b)
                for spelling in (compared, make_compare(FLIPPED[kind], expr.b, expr.a)):
                    facts[expr_key(spelling)] = True
                    facts[expr_key(E.Not(spelling))] = False
                    opposite = COMPLEMENT[type(spelling)]
                    facts[expr_key(make_compare(opposite, spelling.a, spelling.b))] = False
                bound = _DIFFERENCE_BOUNDS.get(kind)
                if bound is not None and isinstance(expr.a, Var) and isinstance(expr.b, IntImm):
                    variables.append((expr.a, bound.shifted(expr.b.value)))
                if bound is not None and isinstance(expr.b, Var) and isinstance(expr.a, IntImm):
                    flipped = Bound(_negated(bound.max), _negated(bound.min))
                    variables.append((expr.b, flipped.shifted(expr.a.value)))
                if bound is not None:
                    for a, b, sign in ((expr.a, expr.b, 1), (expr.b, expr.a, -1)):
                        difference = self._difference(a, b)
                        if sign < 0:
                            bound = Bound(_negated(bound.max), _negated(bound.min))
                        differences.append((difference, bound))

        visit(condition, True)
        return facts, differences, variables

    # -- canonical sums --------------------------------------------------------------------

    def _sum(self, node: E.BinaryOp) -> PrimExpr:
        rebuilt = self.generic_visit(node)
        if rebuilt.dtype.lanes > 1:  # ramps and broadcasts: one ramp, its parts simplified
            lanes = fold_lanes(rebuilt)
            return rebuilt if lanes is None else self.visit(lanes)
        if not _is_index(rebuilt):
            return _folded(rebuilt) if _is_integer(rebuilt) else rebuilt
        a, b = const_of(rebuilt.a), const_of(rebuilt.b)
        if a is not None and b is not None:  # folded at once, as the canonical sum would
            value = _FOLD[type(rebuilt)](a, b)
            return IntImm(integer.wrap(value, rebuilt.dtype), rebuilt.dtype)
        if isinstance(rebuilt, E.Mul) and a is None and b is None:
            return rebuilt
        if isinstance(rebuilt, E.Sub) and not self.comparing:
            difference = self._quotient_difference(rebuilt.a, rebuilt.b)
            if difference is not None:
                return difference
        result = from_sum(merge_splits(to_sum(rebuilt)))
        return node if same(result, node) else result

    visit_Add = visit_Sub = visit_Mul = _sum

    def _quotient_difference(self, a: PrimExpr, b: PrimExpr) -> PrimExpr | None:
        """TVM's rule for a difference of two quotients whose dividends differ by a
        constant: k * ((u + c1) // d) - k * ((u + c2) // d), c1 != 0, is
        k * (((u + c2) % d + (c1 - c2)) // d), which bounds may then decide:
        (x + 13) // 4 - (x + 1) // 4 is 3. Constants beside either quotient stay beside it;
        another term on either side, or u alone on the left (x // 4 - (x + 3) // 4), leaves
        the difference as it is."""
        left, right = to_sum(a), to_sum(b)
        if len(left.terms) != 1 or len(right.terms) != 1:
            return None
        ((first, scale),) = left.terms.values()
        ((second, other_scale),) = right.terms.values()
        if scale != other_scale or not (
            isinstance(first, E.FloorDiv) and isinstance(second, E.FloorDiv)
        ):
            return None
        divisor = const_of(first.b)
        if divisor is None or divisor <= 0 or const_of(second.b) != divisor:
            return None
        high, low = to_sum(first.a), to_sum(second.a)
        if not high.const or expr_key(from_sum(dataclasses.replace(high, const=0))) != (
            expr_key(from_sum(dataclasses.replace(low, const=0)))
        ):
            return None
        dtype = a.dtype
        offset = IntImm(high.const - low.const, dtype)
        quotient: PrimExpr = E.FloorDiv(E.Add(E.FloorMod(second.a, first.b), offset), first.b)
        if scale != 1:
            quotient = E.Mul(quotient, IntImm(scale, dtype))
        if left.const != right.const:
            quotient = E.Add(quotient, IntImm(left.const - right.const, dtype))
        return self.visit(quotient)

    # -- division ----------------------------------------------------------------------------

    def _division(self, node: E.BinaryOp, is_mod: bool) -> PrimExpr:
        rebuilt = self.generic_visit(node)
        a, b = rebuilt.a, rebuilt.b
        if not _is_index(rebuilt):
            return _folded(rebuilt) if _is_integer(rebuilt) else rebuilt
        folded = arith.fold(rebuilt)  # first, as TVM's: 0 // x and 0 % x are 0
        if folded is not None:
            return folded
        divisor, dividend = const_of(b), const_of(a)
        if divisor and dividend is not None:
            fold = integer.floormod if is_mod else integer.floordiv
            value = fold(dividend, divisor)
            return IntImm(integer.wrap(value, a.dtype), a.dtype)
        if divisor is None:
            symbolic = self._symbolic_division(a, b, is_mod)
            if symbolic is not None:
                return symbolic
        if divisor is None or divisor <= 0:
            if dividend is not None and divisor is not None and divisor != 0:
                value = (
                    integer.floormod(dividend, divisor)
                    if is_mod
                    else integer.floordiv(dividend, divisor)
                )
                return IntImm(integer.wrap(value, a.dtype), a.dtype)
            return rebuilt
        if divisor == 1:
            return IntImm(0, a.dtype) if is_mod else a
        dtype = a.dtype
        # nested division by constants: (x // p) // q == x // (p * q); (x % p) % q == x % q if q | p
        nested = const_of(a.b) if isinstance(a, (E.FloorDiv, E.FloorMod)) else None
        if not is_mod and isinstance(a, E.FloorDiv) and nested is not None and nested > 0:
            return self.visit(E.FloorDiv(a.a, IntImm(nested * divisor, dtype)))
        if is_mod and isinstance(a, E.FloorMod) and nested is not None and nested % divisor == 0:
            return self.visit(E.FloorMod(a.a, b))
        total = to_sum(a)
        if not is_mod and total.const and len(total.terms) == 1:
            # (x // p + c) // q == (x + p * c) // (p * q): a ceiling division of a count
            ((atom, coeff),) = total.terms.values()
            step = const_of(atom.b) if isinstance(atom, E.FloorDiv) else None
            if coeff == 1 and step is not None and step > 0:
                shifted = E.Add(atom.a, IntImm(step * total.const, dtype))
                return self.visit(E.FloorDiv(shifted, IntImm(step * divisor, dtype)))
        quotient, rest = Sum(dtype), Sum(dtype)
        for atom, coeff in total.terms.values():
            target = quotient if coeff % divisor == 0 else rest
            target.add_term(atom, coeff // divisor if target is quotient else coeff)
        if is_mod or total.const % divisor == 0:
            quotient.const, rest.const = total.const // divisor, total.const % divisor
        else:  # TVM keeps a constant that is no multiple in the dividend: (x - 383) // 256
            rest.const = total.const
        rest_expr = from_sum(rest)
        rest_bound = self.bound(rest_expr)
        if rest_bound.min is not None and rest_bound.max is not None:
            shift = rest_bound.min // divisor
            if rest_bound.max // divisor == shift:
                if is_mod:
                    rest.const -= shift * divisor
                    return from_sum(rest)
                quotient.const += shift
                return from_sum(quotient)
        split = self._split_coefficients(total, divisor, is_mod)
        if split is not None:
            return split
        common = self._common_factor(rest, divisor, is_mod)
        if common is not None:
            # (g*r + s) // (g*d) == r // d and (g*r + s) % (g*d) == g*(r % d) + s, for s in [0, g)
            factor, multiple, small = common
            inner = IntImm(divisor // factor, dtype)
            if is_mod:
                scaled = Sum(dtype)
                scaled.add_term(E.FloorMod(multiple, inner), factor)
                scaled.add(to_sum(small))
                return from_sum(scaled)
            quotient.add_term(self.visit(E.FloorDiv(multiple, inner)), 1)
            return from_sum(quotient)
        if is_mod and isinstance(a, E.FloorDiv) and (const_of(a.b) or 0) > 0:
            # TVM's normal form of a split: (x // p) % q is x % (p * q) // p
            lower = const_of(a.b)
            assert lower is not None
            return E.FloorDiv(E.FloorMod(a.a, IntImm(lower * divisor, dtype)), a.b)
        if is_mod and rest.const == 0 and len(rest.terms) == 1:
            # one scaled term: its scale counts modulo the divisor, as TVM reduces it
            # (i * 4 % 3 is i % 3, i * 5 % 3 is i * 2 % 3)
            ((atom, coeff),) = rest.terms.values()
            reduced = coeff % divisor
            if reduced != coeff:
                term = atom if reduced == 1 else E.Mul(atom, IntImm(reduced, dtype))
                return E.FloorMod(term, b)
        if quotient.is_const and quotient.const == 0:
            return rebuilt
        if is_mod:
            return E.FloorMod(rest_expr, b)
        quotient.add_term(E.FloorDiv(rest_expr, b), 1)
        return from_sum(quotient)

    def _symbolic_division(self, a: PrimExpr, b: PrimExpr, is_mod: bool) -> PrimExpr | None:
        """Multiples of a non-negative divisor `d` leave the dividend:

        (x * d + y) // d  ->  x + y // d        (x * d + y) % d  ->  y % d
        (d * 32 - 1) // d ->  -1 // d + 32      (d * 4) % d      ->  0
        """
        bound = self.bound(b)
        if bound.min is None or bound.min < 0:
            return None
        dtype = a.dtype
        divisor_key = expr_key(b)
        total = to_sum(a)
        quotient, rest = Sum(dtype), Sum(dtype)
        rest.const = total.const
        for atom, coeff in total.terms.values():
            if expr_key(atom) == divisor_key:
                quotient.const += coeff
            elif isinstance(atom, E.Mul) and expr_key(atom.b) == divisor_key:
                quotient.add_term(atom.a, coeff)
            elif isinstance(atom, E.Mul) and expr_key(atom.a) == divisor_key:
                quotient.add_term(atom.b, coeff)
            else:
                rest.add_term(atom, coeff)
        if quotient.is_const and quotient.const == 0:
            return None
        rest_expr = from_sum(rest)
        if is_mod:
            if rest.is_const and rest.const == 0:
                return IntImm(0, dtype)
            return self.visit(E.FloorMod(rest_expr, b))
        if not (rest.is_const and rest.const == 0):
            quotient.add_term(E.FloorDiv(rest_expr, b), 1)
        return from_sum(quotient)

    def _split_coefficients(self, total: Sum, divisor: int, is_mod: bool) -> PrimExpr | None:
        """Each coefficient `c` read as `d * (c // d) + c % d`: where the remainders' sum
        stays in one window `[k * d, (k + 1) * d)`, the quotient is the sum of the `c // d`
        parts plus k, the modulus the remainders' sum less `k * d`. TVM's rewrite, as in a
        channel group's first index: `c_o * 360 // 16` is `c_o * 22` for c_o in [0, 2)
        (c_o * 8 < 16), and stays as it is for c_o in [0, 3)."""
        dtype = total.dtype
        quotient, rest = Sum(dtype), Sum(dtype)
        for atom, coeff in total.terms.values():
            if coeff // divisor:
                quotient.add_term(atom, coeff // divisor)
            if coeff % divisor:
                rest.add_term(atom, coeff % divisor)
        if not quotient.terms:
            return None
        quotient.const, rest.const = total.const // divisor, total.const % divisor
        bound = self.bound(from_sum(rest))
        if bound.min is None or bound.max is None or bound.min // divisor != bound.max // divisor:
            return None
        shift = bound.min // divisor
        if is_mod:
            rest.const -= shift * divisor
            return from_sum(rest)
        quotient.const += shift
        return from_sum(quotient)

    def _common_factor(
        self, rest: Sum, divisor: int, is_mod: bool
    ) -> tuple[int, PrimExpr, PrimExpr] | None:
        """A factor g of the divisor with `rest == g * multiple + small` and small in [0, g),
        as TVM splits it. A constant alone in `small` may carry its multiple of g into
        `multiple` where that is a multiple of the divisor over g ((x * 4 + 9) // 8 is
        x // 2 + 1, (x * 4 + 5) // 8 stays); beside other terms it stays whole (so
        (x * 8 + z + 20) // 16 stays), and a remainder keeps no constant beside them
        ((x * 8 + z) % 16 is x % 2 * 8 + z, (x * 8 + z + 4) % 16 stays)."""

        factors = sorted(
            {math.gcd(divisor, abs(coeff)) for _, coeff in rest.terms.values()}, reverse=True
        )
        for factor in factors:
            if factor <= 1 or factor == divisor:
                continue
            multiple, small = Sum(rest.dtype), Sum(rest.dtype)
            for atom, coeff in rest.terms.values():
                if coeff % factor == 0:
                    multiple.add_term(atom, coeff // factor)
                else:
                    small.add_term(atom, coeff)
            carried, small.const = divmod(rest.const, factor)
            if small.terms or carried % (divisor // factor):
                carried, small.const = 0, rest.const
            if is_mod and small.terms and small.const:
                continue
            multiple.const = carried
            if not multiple.terms:
                continue
            small_expr = from_sum(small)
            bound = self.bound(small_expr)
            if (
                bound.min is not None
                and bound.max is not None
                and 0 <= bound.min
                and bound.max < factor
            ):
                return factor, from_sum(multiple), small_expr
        return None

    def visit_FloorDiv(self, node: E.FloorDiv) -> PrimExpr:
        return self._division(node, is_mod=False)

    def visit_FloorMod(self, node: E.FloorMod) -> PrimExpr:
        return self._division(node, is_mod=True)

    def _truncated(self, node: E.BinaryOp, is_mod: bool) -> PrimExpr:
        rebuilt = self.generic_visit(node)
        a, b = rebuilt.a, rebuilt.b
        if not _is_index(rebuilt):
            return _folded(rebuilt) if _is_integer(rebuilt) else rebuilt
        folded = arith.fold(rebuilt)  # T.Div(x, 1) is x, T.truncmod(0, x) is 0
        if folded is not None:
            return folded
        dividend, divisor = const_of(a), const_of(b)
        if dividend is not None and divisor is not None and divisor != 0:
            value = (
                integer.truncmod(dividend, divisor)
                if is_mod
                else integer.truncdiv(dividend, divisor)
            )
            return IntImm(integer.wrap(value, a.dtype), a.dtype)
        bound_a, bound_b = self.bound(a), self.bound(b)
        if (
            bound_a.min is not None
            and bound_a.min >= 0
            and bound_b.min is not None
            and bound_b.min > 0
        ):
            # both non-negative: truncating and flooring agree
            floor = E.FloorMod(a, b) if is_mod else E.FloorDiv(a, b)
            simplified = self.visit(floor)
            if not isinstance(simplified, (E.FloorDiv, E.FloorMod)):
                return simplified
        return rebuilt

    def visit_Div(self, node: E.Div) -> PrimExpr:
        return self._truncated(node, is_mod=False)

    def visit_Mod(self, node: E.Mod) -> PrimExpr:
        return self._truncated(node, is_mod=True)

    # -- min / max ---------------------------------------------------------------------------

    def _extremum(self, node: E.BinaryOp, pick_min: bool) -> PrimExpr:
        rebuilt = self.generic_visit(node)
        a, b = rebuilt.a, rebuilt.b
        if not _is_integer(rebuilt):
            return rebuilt
        if expr_key(a) == expr_key(b):
            return a
        kept = absorbed(a, b, E.Max if pick_min else E.Min)
        if kept is not None:
            return kept
        difference = self._difference_bound(a, b)
        if difference.max is not None and difference.max <= 0:
            return a if pick_min else b
        if difference.min is not None and difference.min >= 0:
            return b if pick_min else a
        return rebuilt

    def visit_Min(self, node: E.Min) -> PrimExpr:
        return self._extremum(node, pick_min=True)

    def visit_Max(self, node: E.Max) -> PrimExpr:
        return self._extremum(node, pick_min=False)

    # -- comparisons and logic ---------------------------------------------------------------

    def visit_CompareOp(self, node: E.CompareOp) -> PrimExpr:
        rebuilt = self.generic_visit(node)
        a, b = rebuilt.a, rebuilt.b
        if not _is_integer(a):
            return rebuilt
        decide = _DECIDE[type(node)]
        if isinstance(a, IntImm) and isinstance(b, IntImm):
            difference = Bound(a.value - b.value, a.value - b.value)
        else:
            difference = self._difference_bound(a, b)
        verdict = decide(difference)
        if verdict is None:
            if not _is_index(a):
                return rebuilt
            return _quotient_compared(_scale_divided(_offset_moved(rebuilt)))
        return bool_const(verdict)

    def visit_Cast(self, node: E.Cast) -> PrimExpr:
        rebuilt = self.generic_visit(node)
        value, dtype = rebuilt.value, rebuilt.dtype
        if value.dtype == dtype:
            return value
        if isinstance(value, IntImm) and dtype.is_scalar:
            if dtype.is_integer or dtype.is_bool:
                return IntImm(integer.wrap(value.value, dtype), dtype)
            if dtype.is_float and not dtype.is_float8 and dtype.kind != "bfloat":
                return E.FloatImm(float(value.value), dtype)
        if isinstance(value, E.FloatImm) and dtype.is_scalar and dtype.is_integer:
            # a whole float converts exactly (TVM folds T.Cast("int32", T.float64(4.0)));
            # a fraction, infinity or a value out of range stays for the program to convert
            if math.isfinite(value.value) and value.value.is_integer():
                low, high = integer.int_range(dtype)
                if low <= value.value <= high:
                    return IntImm(int(value.value), dtype)
        return rebuilt

    def visit_Call(self, node: E.Call) -> PrimExpr:
        """TVM's rule for ceil(log2(c)), how topi writes ceil_log2 (in loop bounds): a
        constant, the same on every target (T.ceil(T.log2(T.float64(14.0))) is 4.0)."""
        result = super().visit_Call(node)
        if isinstance(result, E.Call) and result.op == "ceil" and len(result.args) == 1:
            inner = result.args[0]
            if isinstance(inner, E.Call) and inner.op == "log2" and len(inner.args) == 1:
                argument = inner.args[0]
                if isinstance(argument, E.FloatImm) and argument.value > 0:
                    return E.FloatImm(float(math.ceil(math.log2(argument.value))), result.dtype)
        return result

    # -- variables and loads are leaves; everything else recurses ---------------------------

    def visit_Var(self, node: Var) -> PrimExpr:
        bound = self.ranges.get(node)
        if (
            bound is not None
            and bound.min is not None
            and bound.is_const
            and _is_index(node)
            and node not in self.context.unfolded
        ):
            return IntImm(bound.min, node.dtype)
        return node


_FOLD: dict[type, Callable[[int, int], int]] = {
    E.Add: operator.add,
    E.Sub: operator.sub,
    E.Mul: operator.mul,
}


def _offset_moved(node: E.CompareOp) -> E.CompareOp:
    """TVM's rules for a constant beside a sum compared with a constant: it moves to the
    constant side, `i + 15 < 16` is `i < 1`, `3 <= j + 2` is `1 <= j`, `k - 1 == 4` is
    `k == 5` (a constant alone on the left of == moves right, as TVM writes it)."""
    a, b = node.a, node.b
    kind = type(node)
    if isinstance(b, IntImm):
        moved = _offset(a)
        if moved is None:
            return node
        rest, offset = moved
        value = b.value - offset
        if integer.wrap(value, b.dtype) != value:
            return node
        return make_compare(kind, rest, IntImm(value, b.dtype))
    if isinstance(a, IntImm):
        moved = _offset(b)
        if moved is None:
            return node
        rest, offset = moved
        value = a.value - offset
        if integer.wrap(value, a.dtype) != value:
            return node
        if kind in (E.EQ, E.NE):
            return make_compare(kind, rest, IntImm(value, a.dtype))
        return make_compare(kind, IntImm(value, a.dtype), rest)
    return node


def _scale_divided(node: E.CompareOp) -> E.CompareOp:
    """TVM's rules for a multiple by a positive constant compared with a constant: the scale
    divides the constant instead, rounded the way that keeps the comparison (`7 < n * 2` is
    `3 < n`, `x * 4 < 10` is `x < 3`, `x * 4 <= 10` is `x <= 2`)."""
    kind = type(node)
    if kind in (E.EQ, E.NE):
        return node
    a, b = node.a, node.b
    scaled_left = isinstance(a, E.Mul) and isinstance(b, IntImm)
    product, constant = (a, b) if scaled_left else (b, a)
    if not (isinstance(product, E.Mul) and isinstance(constant, IntImm)):
        return node
    scale = const_of(product.b)
    if scale is None or scale <= 0:
        return node
    value = constant.value
    floor, ceiling = value // scale, -(-value // scale)
    # x * s < c and x * s >= c take the ceiling of c / s, <= and > the floor; with the
    # product on the right the other way round
    rounds_up = (kind in (E.LT, E.GE)) == scaled_left
    limit = IntImm(ceiling if rounds_up else floor, constant.dtype)
    if scaled_left:
        return make_compare(kind, product.a, limit)
    return make_compare(kind, limit, product.a)


def _offset(expr: PrimExpr) -> tuple[PrimExpr, int] | None:
    """`x` and `c` of `x + c` or `x - c` (as -c)."""
    if isinstance(expr, E.Add) and isinstance(expr.b, IntImm):
        return expr.a, expr.b.value
    if isinstance(expr, E.Sub) and isinstance(expr.b, IntImm):
        return expr.a, -expr.b.value
    return None


def _quotient_compared(node: E.CompareOp) -> PrimExpr:
    """TVM's rules for a quotient by a positive constant compared with a constant, the
    dividend compared instead: `x // 128 < 127` is `x < 16256`, `x // 128 <= 126` is
    `x <= 16255`, `x // 128 > 3` is `511 < x`, `x // 128 >= 3` is `384 <= x`; with the
    constant on the left, the same flipped (`1 <= x // 4` is `4 <= x`)."""
    if isinstance(node.b, E.FloorDiv) and const_of(node.a) is not None:
        flipped = make_compare(FLIPPED[type(node)], node.b, node.a)
        result = _quotient_compared(flipped)
        return node if result is flipped else result
    quotient, bound = node.a, const_of(node.b)
    if not isinstance(quotient, E.FloorDiv) or bound is None:
        return node
    divisor = const_of(quotient.b)
    if divisor is None or divisor <= 0:
        return node
    dividend, dtype = quotient.a, quotient.a.dtype
    if isinstance(node, E.LT):
        return E.LT(dividend, IntImm(bound * divisor, dtype))
    if isinstance(node, E.LE):
        return E.LE(dividend, IntImm(bound * divisor + divisor - 1, dtype))
    if isinstance(node, E.GT):
        return E.LT(IntImm(bound * divisor + divisor - 1, dtype), dividend)
    if isinstance(node, E.GE):
        return E.LE(IntImm(bound * divisor, dtype), dividend)
    return node


def _decide_lt(d: Bound) -> bool | None:
    if d.max is not None and d.max < 0:
        return True
    if d.min is not None and d.min >= 0:
        return False
    return None


def _decide_le(d: Bound) -> bool | None:
    if d.max is not None and d.max <= 0:
        return True
    if d.min is not None and d.min > 0:
        return False
    return None


def _negate(decide: Callable[[Bound], bool | None]) -> Callable[[Bound], bool | None]:
    def negated(d: Bound) -> bool | None:
        verdict = decide(d)
        return None if verdict is None else not verdict

    return negated


def _decide_eq(d: Bound) -> bool | None:
    if d.is_const:
        return d.min == 0
    if (d.min is not None and d.min > 0) or (d.max is not None and d.max < 0):
        return False
    return None


def _negated(value: int | None) -> int | None:
    return None if value is None else -value


# the bound of `a - b` where `a <op> b` holds
_DIFFERENCE_BOUNDS: dict[type[E.CompareOp], Bound] = {
    E.LT: Bound(None, -1),
    E.LE: Bound(None, 0),
    E.GT: Bound(1, None),
    E.GE: Bound(0, None),
    E.EQ: Bound(0, 0),
}

_DECIDE: dict[type, Callable[[Bound], bool | None]] = {
    E.LT: _decide_lt,
    E.LE: _decide_le,
    E.GE: _negate(_decide_lt),
    E.GT: _negate(_decide_le),
    E.EQ: _decide_eq,
    E.NE: _negate(_decide_eq),
}

"""The simplifier's boolean and conditional rules: `and` / `or` / `not`, `select` and
`if_then_else` (a branch simplified knowing its test), the facts a condition in scope adds
(`Context`), a comparison's spellings and negations, and the structural sameness they test
with. `BooleanRules` is the part of `Simplifier` (simplify.py) that owns them; the arithmetic,
the bounds and `_under` come from there, and nothing here imports it."""

from __future__ import annotations

import dataclasses
from collections.abc import Hashable, Mapping
from dataclasses import dataclass, field

from tirc.analysis.arith.and_of_ors import as_and_of_ors
from tirc.analysis.arith.bound import Bound
from tirc.ir import dtype as dt
from tirc.ir import expr as E
from tirc.ir.buffer import Buffer
from tirc.ir.expr import IntImm, PrimExpr, Var
from tirc.ir.functor import Mutator, child_fields, walk
from tirc.ir.intrinsics import Effect, lookup
from tirc.ir.node import Node
from tirc.ir.structural import expr_key


def const_of(expr: PrimExpr) -> int | None:
    """The value of an integer constant, else None."""
    return expr.value if isinstance(expr, IntImm) else None


def bool_const(value: bool) -> IntImm:
    """The bool constant of `value`."""
    return IntImm(1 if value else 0, dt.BOOL)


def is_pure(expr: PrimExpr) -> bool:
    """No load and no call with an effect: a value that a store cannot change, so a fact
    about it or a variable standing for it holds anywhere in its scope."""
    impure: list[object] = []

    def check(node: object) -> None:
        if isinstance(node, E.BufferLoad):
            impure.append(node)
        elif isinstance(node, E.Call):
            intrinsic = lookup(node.op)
            if intrinsic is None or intrinsic.effect is not Effect.PURE:
                impure.append(node)

    walk(expr, check)
    return not impure


@dataclass(frozen=True)
class Context:
    """What conditions in scope and bound values add to the variables' bounds (built by
    `Facts.assume` and `Facts.bind_value`; replaced, never changed, so that a memo can tell
    by identity whether it still holds).

    `facts` maps the key of a boolean expression to its known truth, `differences` the key
    of a simplified `a - b` to the bound a comparison in scope gives it, `values` a bound
    variable to the value it stands for, and `unfolded` holds the variables a condition
    bounded: a bound pinned to one value does not fold them (`if i == 5: A[i]` stays)."""

    facts: Mapping[Hashable, bool] = field(default_factory=dict)
    differences: Mapping[Hashable, Bound] = field(default_factory=dict)
    values: Mapping[Var, PrimExpr] = field(default_factory=dict)
    unfolded: frozenset[Var] = frozenset()
    # each side of an `and` / `or` simplified knowing the other (TVM's
    # apply_constraints_to_boolean_branches): `n < 10 and n < 5` is `n < 5`
    boolean_branches: bool = False
    # a scalar `and` / `or` rewritten as a simplified `and` of `or`s (and_of_ors.py; TVM's
    # convert_boolean_to_and_of_ors): `a or b and c` is `(a or b) and (a or c)`
    and_of_ors: bool = False

    def with_facts(
        self, facts: Mapping[Hashable, bool], differences: Mapping[Hashable, Bound]
    ) -> Context:
        merged = dict(self.differences)
        for key, bound in differences.items():
            merged[key] = merged[key].intersect(bound) if key in merged else bound
        return dataclasses.replace(self, facts={**self.facts, **facts}, differences=merged)

    def with_value(self, var: Var, value: PrimExpr) -> Context:
        return dataclasses.replace(self, values={**self.values, var: value})

    def with_unfolded(self, var: Var) -> Context:
        return dataclasses.replace(self, unfolded=self.unfolded | {var})


NO_CONTEXT = Context()


def same(x: object, y: object) -> bool:
    """`expr_key(x) == expr_key(y)`, without building either key: shared subtrees compare by
    identity and the first difference ends the walk."""
    if x is y:
        return True
    if type(x) is not type(y):
        return False
    if isinstance(x, Node):
        if isinstance(x, (Var, Buffer)):
            return False
        return all(same(getattr(x, name), getattr(y, name)) for name in child_fields(type(x)))
    if isinstance(x, tuple) and isinstance(y, tuple):
        return len(x) == len(y) and all(map(same, x, y))
    if isinstance(x, float):
        return repr(x) == repr(y)
    return x == y


def is_negation(a: PrimExpr, b: PrimExpr) -> bool:
    """Whether `b` is `not a` in one of its spellings (`i < 3` and `i >= 3`, `3 <= i`)."""
    if isinstance(b, E.Not):
        return same(a, b.a)
    if isinstance(a, E.Not):
        return same(a.a, b)
    if not (isinstance(a, E.CompareOp) and isinstance(b, E.CompareOp)):
        return False
    complement = COMPLEMENT[type(a)]
    if type(b) is complement:
        return same(a.a, b.a) and same(a.b, b.b)
    if type(b) is FLIPPED[complement]:
        return same(a.a, b.b) and same(a.b, b.a)
    return False


def negated(expr: PrimExpr) -> PrimExpr | None:
    """`not expr` with the negation moved inside, as the and-of-ors form has it: De Morgan's
    laws for `and` / `or`, the complement of an integer comparison (`not i < n` is
    `n <= i`, as TVM writes it; a float's stays, since NaN fails both); None for others."""
    if isinstance(expr, E.And):
        return E.Or(E.Not(expr.a), E.Not(expr.b))
    if isinstance(expr, E.Or):
        return E.And(E.Not(expr.a), E.Not(expr.b))
    if isinstance(expr, E.CompareOp) and expr.a.dtype.is_integer:
        a, b = expr.a, expr.b
        return {
            E.LT: lambda: E.LE(b, a),
            E.LE: lambda: E.LT(b, a),
            E.GT: lambda: E.LE(a, b),
            E.GE: lambda: E.LT(a, b),
            E.EQ: lambda: E.NE(a, b),
            E.NE: lambda: E.EQ(a, b),
        }[type(expr)]()
    return None


def make_compare(kind: type[E.CompareOp], a: PrimExpr, b: PrimExpr) -> E.CompareOp:
    return kind(a, b)


# `not (a < b)` is `a >= b`, and so on
COMPLEMENT: dict[type[E.CompareOp], type[E.CompareOp]] = {
    E.LT: E.GE,
    E.GE: E.LT,
    E.LE: E.GT,
    E.GT: E.LE,
    E.EQ: E.NE,
    E.NE: E.EQ,
}


# `a < b` is `b > a`, and so on
FLIPPED: dict[type[E.CompareOp], type[E.CompareOp]] = {
    E.LT: E.GT,
    E.GT: E.LT,
    E.LE: E.GE,
    E.GE: E.LE,
    E.EQ: E.EQ,
    E.NE: E.NE,
}


class BooleanRules(Mutator):
    """`and`, `or`, `not`, `select`, `if_then_else` and `likely`, as `Simplifier` rewrites
    them (it supplies `context` and `_under`)."""

    context: Context

    def _under(self, condition: PrimExpr, expr: PrimExpr) -> PrimExpr:
        """`expr` simplified knowing `condition` (the simplifier's)."""
        raise NotImplementedError

    def _apart(self, expr: PrimExpr, known: PrimExpr | None) -> PrimExpr:
        """`expr` simplified (knowing `known` where given) without the and-of-ors rule, each
        side of an `and` / `or` knowing the other: how that rule simplifies two of its terms
        together (the simplifier's)."""
        raise NotImplementedError

    def _normalized(self, expr: E.And | E.Or) -> PrimExpr:
        """`expr` as an `and` of `or`s where the context asks for that form."""
        if not self.context.and_of_ors or not expr.dtype.is_scalar:
            return expr
        return as_and_of_ors(expr, self._apart)

    def _branches(self, a: PrimExpr, b: PrimExpr, is_and: bool) -> tuple[PrimExpr, PrimExpr]:
        """Each side simplified knowing the other holds (`and`) or fails (`or`), in turn,
        until neither changes (at most twice each)."""
        sides = [a, b]
        unchanged = 0
        for step in range(4):
            mine, other = step % 2, 1 - step % 2
            known = sides[other] if is_and else E.Not(sides[other])
            updated = self._under(known, sides[mine])
            if same(updated, sides[mine]):
                unchanged += 1
                if unchanged >= 2:
                    break
            else:
                sides[mine] = updated
                unchanged = 0
        return sides[0], sides[1]

    def _logical(self, node: E.And | E.Or, absorbing: int) -> PrimExpr:
        """`node` with its operands simplified, or its left operand alone when that decides a
        scalar `and` / `or`: the right one is then never simplified, so long guarded chains
        fold without visiting their tails."""
        a = self.visit(node.a)
        if const_of(a) == absorbing and a.dtype.is_scalar and node.dtype.is_scalar:
            return a
        b = self.visit(node.b)
        if a is node.a and b is node.b:
            return node
        return dataclasses.replace(node, a=a, b=b)

    def visit_And(self, node: E.And) -> PrimExpr:
        rebuilt = self._logical(node, absorbing=0)
        if not isinstance(rebuilt, E.And):
            return rebuilt
        a, b = rebuilt.a, rebuilt.b
        if self.context.boolean_branches and rebuilt.dtype.is_scalar:
            a, b = self._branches(a, b, is_and=True)
            if a is not rebuilt.a or b is not rebuilt.b:
                rebuilt = dataclasses.replace(rebuilt, a=a, b=b)
        for one, other in ((a, b), (b, a)):
            if const_of(one) == 0 and one.dtype.is_scalar:
                return one
            if const_of(one) == 1 and one.dtype.is_scalar:
                return other
        if rebuilt.dtype.is_scalar and is_pure(a) and is_negation(a, b):
            return bool_const(False)  # `x and not x`
        narrower = tightened(a, b)
        if narrower is not None:
            rebuilt = dataclasses.replace(rebuilt, a=narrower)
        return self._normalized(rebuilt)

    def visit_Or(self, node: E.Or) -> PrimExpr:
        rebuilt = self._logical(node, absorbing=1)
        if not isinstance(rebuilt, E.Or):
            return rebuilt
        a, b = rebuilt.a, rebuilt.b
        if self.context.boolean_branches and rebuilt.dtype.is_scalar:
            a, b = self._branches(a, b, is_and=False)
            if a is not rebuilt.a or b is not rebuilt.b:
                rebuilt = dataclasses.replace(rebuilt, a=a, b=b)
        for one, other in ((a, b), (b, a)):
            if const_of(one) == 1 and one.dtype.is_scalar:
                return one
            if const_of(one) == 0 and one.dtype.is_scalar:
                return other
        if rebuilt.dtype.is_scalar and is_pure(a) and is_negation(a, b):
            return bool_const(True)  # `x or not x`
        return self._normalized(rebuilt)

    def visit_Not(self, node: E.Not) -> PrimExpr:
        rebuilt = self.generic_visit(node)
        inner = rebuilt.a
        if isinstance(inner, IntImm):
            return bool_const(not inner.value)
        if isinstance(inner, E.Not):
            return inner.a
        if self.context.and_of_ors and rebuilt.dtype.is_scalar:
            pushed = negated(inner)
            if pushed is not None:
                result: PrimExpr = self.visit(pushed)
                return result
        return rebuilt

    def visit_Select(self, node: E.Select) -> PrimExpr:
        # the condition first: when it is decided only the chosen value is simplified, so a
        # chain `Select(c1, v1, Select(c2, v2, ...))` costs up to its taken link, not its length
        condition = self.visit(node.condition)
        if const_of(condition) is not None and condition.dtype.is_scalar:
            return self.visit(node.true_value if condition.value else node.false_value)
        true_value, false_value = self._conditional(condition, node.true_value, node.false_value)
        if (condition, true_value, false_value) == (
            node.condition,
            node.true_value,
            node.false_value,
        ):
            return node
        return dataclasses.replace(
            node, condition=condition, true_value=true_value, false_value=false_value
        )

    def _conditional(
        self, condition: PrimExpr, true_value: PrimExpr, false_value: PrimExpr
    ) -> tuple[PrimExpr, PrimExpr]:
        """The values of an undecided `select` / `if_then_else`; one that holds another
        conditional is simplified knowing the condition holds (fails) there, so a nested test
        of the same condition goes (TVM's test_nested_if_elimination)."""
        values = [self.visit(true_value), self.visit(false_value)]
        if not condition.dtype.is_scalar:
            return values[0], values[1]
        for index, holds in enumerate((True, False)):
            if has_conditional(values[index]):
                # decided by the test alone, not by simplifying the value again under it:
                # that re-simplified every nested level once more for each level above it
                # (exponential in the nesting: Winograd's selects took minutes and 12 GB)
                values[index] = Decided(condition, holds).visit(values[index])
        return values[0], values[1]

    def visit_Call(self, node: E.Call) -> PrimExpr:
        if node.op == "if_then_else" and len(node.args) == 3 and E.are_exprs(node.args):
            condition = self.visit(node.expr_arg(0))
            if const_of(condition) is not None and condition.dtype.is_scalar:
                return self.visit(node.expr_arg(1) if condition.value else node.expr_arg(2))
            values = self._conditional(condition, node.expr_arg(1), node.expr_arg(2))
            if all(a is b for a, b in zip((condition, *values), node.args, strict=True)):
                return node
            return dataclasses.replace(node, args=(condition, *values))
        rebuilt = self.generic_visit(node)
        if rebuilt.op == "likely" and isinstance(rebuilt.args[0], IntImm):
            return rebuilt.args[0]  # a decided hint is its value
        return rebuilt


class Decided(Mutator):
    """A value with each nested conditional whose test is `condition` (or its negation)
    replaced by the branch it takes where `condition` holds (`holds`) or fails."""

    def __init__(self, condition: PrimExpr, holds: bool):
        self.condition = condition
        self.holds = holds

    def _taken(self, test: PrimExpr) -> bool | None:
        if same(test, self.condition):
            return self.holds
        if is_negation(self.condition, test):
            return not self.holds
        return None

    def visit_Select(self, node: E.Select) -> PrimExpr:
        taken = self._taken(node.condition)
        if taken is None:
            return self.generic_visit(node)
        return self.visit(node.true_value if taken else node.false_value)

    def visit_Call(self, node: E.Call) -> PrimExpr:
        if node.op == "if_then_else" and len(node.args) == 3 and E.are_exprs(node.args):
            taken = self._taken(node.expr_arg(0))
            if taken is not None:
                return self.visit(node.expr_arg(1) if taken else node.expr_arg(2))
        return self.generic_visit(node)


def has_conditional(expr: PrimExpr) -> bool:
    found: list[bool] = []

    def check(node: object) -> None:
        if isinstance(node, E.Select) or isinstance(node, E.Call) and node.op == "if_then_else":
            found.append(True)

    walk(expr, check)
    return bool(found)


def absorbed(a: PrimExpr, b: PrimExpr, inner: type[E.BinaryOp]) -> PrimExpr | None:
    """The absorption laws: min(max(x, y), x) -> x and max(min(x, y), y) -> y, either side."""
    for outer_arg, other in ((a, b), (b, a)):
        if isinstance(outer_arg, inner):
            key = expr_key(other)
            if key in (expr_key(outer_arg.a), expr_key(outer_arg.b)):
                return other
    return None


def tightened(a: PrimExpr, b: PrimExpr) -> PrimExpr | None:
    """TVM's rule for `x < c and x % m < r` with c a multiple of m: the last row's values
    from r on fail the second bound, so the first reads `x < c - (m - r)`
    (`i < 16256 and i % 128 < 127` is `i < 16255 and i % 128 < 127`)."""
    if not (isinstance(a, E.LT) and isinstance(b, E.LT) and isinstance(b.a, E.FloorMod)):
        return None
    limit, modulus, rest = const_of(a.b), const_of(b.a.b), const_of(b.b)
    if limit is None or modulus is None or rest is None or modulus <= 0:
        return None
    if limit % modulus or not 0 < rest < modulus or expr_key(a.a) != expr_key(b.a.a):
        return None
    return E.LT(a.a, IntImm(limit - (modulus - rest), a.b.dtype))

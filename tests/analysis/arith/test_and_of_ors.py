"""The and-of-ors rule (TVM's convert_boolean_to_and_of_ors): conditions become an `and` of
`or`s that computes the same truth, with what two groups or two terms say once said once."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.analysis.arith.test_simplify import VI, VJ, VK, c, evaluate
from tirc.analysis.arith import Analyzer, and_of_ors
from tirc.ir import dtype as dt
from tirc.ir import expr as E
from tirc.ir.buffer import make_buffer
from tirc.ir.expr import PrimExpr
from tirc.ir.functor import walk
from tirc.ir.structural import structural_equal


def normalized(expr: PrimExpr, analyzer: Analyzer | None = None) -> PrimExpr:
    analyzer = analyzer or Analyzer()
    analyzer.context = dataclasses.replace(analyzer.context, and_of_ors=True)
    return analyzer.simplify(expr)


def is_and_of_ors(expr: PrimExpr) -> bool:
    """No `and` under an `or`."""
    if isinstance(expr, E.And):
        return is_and_of_ors(expr.a) and is_and_of_ors(expr.b)
    nested: list[object] = []
    walk(expr, lambda node: nested.append(node) if isinstance(node, E.And) else None)
    return not nested


def test_or_distributes_over_and() -> None:
    a, b, d = (E.LT(var, c(3)) for var in (VI, VJ, VK))
    result = normalized(E.Or(a, E.And(b, d)))
    assert structural_equal(result, E.And(E.Or(a, b), E.Or(a, d)))


def test_groups_alike_but_for_one_term_merge() -> None:
    """(i == 0 or k == 20) and (i == 0 or k != 30): knowing i != 0, k == 20 and k != 30 is
    k == 20, and the second group is the first."""
    first = E.Or(E.EQ(VI, c(0)), E.EQ(VK, c(20)))
    second = E.Or(E.EQ(VI, c(0)), E.NE(VK, c(30)))
    assert structural_equal(normalized(E.And(first, second)), first)


def test_a_term_implied_within_a_group_goes() -> None:
    """i == 20 or j == 0 or i != 30: i == 20 implies i != 30."""
    expr = E.Or(E.Or(E.EQ(VI, c(20)), E.EQ(VJ, c(0))), E.NE(VI, c(30)))
    assert structural_equal(normalized(expr), E.Or(E.EQ(VJ, c(0)), E.NE(VI, c(30))))


def test_a_repeated_group_goes_and_a_false_one_decides() -> None:
    group = E.Or(E.LT(VI, c(3)), E.LT(VJ, c(4)))
    assert structural_equal(normalized(E.And(group, E.Or(E.LT(VJ, c(4)), E.LT(VI, c(3))))), group)
    contradiction = E.And(E.And(group, E.EQ(VK, c(1))), E.EQ(VK, c(2)))
    assert structural_equal(normalized(contradiction), E.IntImm(0, dt.BOOL))


def test_too_many_groups_leave_the_condition(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each `(a and b) or ...` doubles the groups: past GROUP_LIMIT the condition stays."""
    monkeypatch.setattr(and_of_ors, "GROUP_LIMIT", 4)
    flags = make_buffer("B", (c(8),), dt.BOOL)
    a, b, d, e, f, g = (E.BufferLoad(flags, (c(n),)) for n in range(6))
    four = E.Or(E.And(a, b), E.And(d, e))
    assert is_and_of_ors(normalized(four))
    eight = E.Or(four, E.And(f, g))
    assert structural_equal(normalized(eight), E.Or(normalized(four), E.And(f, g)))


def test_a_call_with_an_effect_is_not_repeated() -> None:
    call = E.Call(dt.BOOL, "call_extern", (E.StringImm("f"),))
    expr = E.Or(call, E.And(E.LT(VI, c(3)), E.LT(VJ, c(3))))
    assert structural_equal(normalized(expr), expr)


def conditions() -> st.SearchStrategy[PrimExpr]:
    compare = st.tuples(
        st.sampled_from([E.LT, E.LE, E.EQ, E.NE]),
        st.sampled_from([VI, VJ, VK]),
        st.integers(-2, 6).map(c),
    ).map(lambda t: t[0](t[1], t[2]))

    def extend(children: st.SearchStrategy[PrimExpr]) -> st.SearchStrategy[PrimExpr]:
        pair = st.tuples(st.sampled_from([E.And, E.Or]), children, children)
        return st.one_of(pair.map(lambda t: t[0](t[1], t[2])), children.map(E.Not))

    return st.recursive(compare, extend, max_leaves=7)


@settings(max_examples=60, deadline=None)
@given(conditions(), st.integers(-3, 7), st.integers(-3, 7), st.integers(-3, 7))
def test_and_of_ors_keeps_the_truth(expr: PrimExpr, i: int, j: int, k: int) -> None:
    result = normalized(expr)
    env = {VI: i, VJ: j, VK: k}
    assert evaluate(result, env) == evaluate(expr, env)
    assert is_and_of_ors(result)

"""A select nested in a select: each value is simplified once, and a nested test of the
enclosing condition is decided by that condition alone. Simplifying each value again under its
condition re-simplified every nested level once more per level above it: exponential in the
nesting (a Winograd kernel's chains of selects took minutes and 12 GB to lower)."""

from __future__ import annotations

from tirc.analysis.arith import Analyzer
from tirc.ir import dtype as dt
from tirc.ir import expr as E
from tirc.ir.expr import IntImm, Var


def test_a_deep_chain_of_selects_simplifies_and_keeps_its_tests() -> None:
    i = Var("i", dt.INT32)
    value: E.PrimExpr = IntImm(0)
    for k in range(40):  # 2**40 re-simplifications would never finish
        value = E.Select(E.EQ(i, IntImm(k)), IntImm(k + 1), value)
    simplified = Analyzer().simplify(value)
    depth = 0
    while isinstance(simplified, E.Select):
        depth += 1
        simplified = simplified.false_value
    assert depth == 40


def test_a_nested_test_of_the_same_condition_is_decided() -> None:
    i = Var("i", dt.INT32)
    a = Var("a", dt.INT32)
    test = E.LT(i, IntImm(3))
    inner = E.Select(test, a, IntImm(7))
    outer = E.Select(test, E.Max(IntImm(0), inner), E.Add(inner, IntImm(1)))
    simplified = Analyzer().simplify(outer)
    assert isinstance(simplified, E.Select)
    assert isinstance(simplified.true_value, E.Max)  # max(0, a): the inner test is gone
    assert a in (simplified.true_value.a, simplified.true_value.b)
    assert not isinstance(simplified.false_value, E.Select)  # 7 + 1: decided too

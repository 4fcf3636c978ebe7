"""Interval relaxation: every value an expression takes lies inside its relaxed interval."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from tirc.analysis.arith.int_set import relax, relax_range
from tirc.ir import dtype as dt
from tirc.ir import expr as E
from tirc.ir.buffer import Range
from tirc.ir.expr import IntImm, Var
from tirc.ir.structural import structural_equal

from .test_simplify import VI, VJ, VK, c, evaluate, int_exprs

DOMAINS = {VJ: Range(c(0), c(8)), VK: Range(c(-4), c(13))}


@settings(max_examples=300, deadline=None)
@given(int_exprs(), st.integers(0, 15), st.integers(0, 7), st.integers(-4, 8))
def test_values_lie_inside_the_relaxed_interval(expr, i, j, k) -> None:  # noqa: ANN001
    interval = relax(expr, DOMAINS)
    value = evaluate(expr, {VI: i, VJ: j, VK: k})
    # ends may mention the variable that was not relaxed (VI); evaluate them at its value
    if interval.min is not None:
        assert evaluate(interval.min, {VI: i}) <= value
    if interval.max is not None:
        assert value <= evaluate(interval.max, {VI: i})


def test_tile_relaxes_to_a_symbolic_range() -> None:
    index = E.Add(E.Mul(VI, c(8)), VJ)
    region = relax_range(Range(index, c(1)), {VJ: Range(c(0), c(8))})
    assert region is not None
    assert isinstance(region.extent, IntImm) and region.extent.value == 8
    assert isinstance(region.min, E.Mul) and region.min.a is VI


def test_unrelated_expression_stays_a_point() -> None:
    interval = relax(E.Add(VI, c(3)), DOMAINS)
    assert interval.min is interval.max


def test_division_of_a_point_by_a_symbolic_divisor_is_a_point() -> None:
    """`(i + u) // n` and `% n` over a unit loop u take one value each (as TVM's sets of
    single points), whatever the sign of n: a region one element wide, not [0, 31]."""
    n = Var("n", dt.INT32)
    u = Var("u", dt.INT32)
    for make in (E.FloorDiv, E.FloorMod):
        expr = make(E.Add(VI, u), n)
        region = relax_range(Range(expr, c(1)), {u: Range(c(0), c(1))})
        assert region is not None
        assert isinstance(region.extent, IntImm) and region.extent.value == 1
        assert structural_equal(region.min, make(VI, n))

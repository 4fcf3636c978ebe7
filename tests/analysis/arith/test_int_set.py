"""Interval relaxation: every value an expression takes lies inside its relaxed interval."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from tirc.analysis.arith.int_set import relax, relax_range
from tirc.ir import expr as E
from tirc.ir.buffer import Range
from tirc.ir.expr import IntImm

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

"""Block-var domains: the values a moved block's iterators must take to provide a region."""

from __future__ import annotations

import pytest

from tirc.analysis.arith import Analyzer
from tirc.analysis.block_var_domain import (
    Interval,
    UnsolvableRegion,
    solve_block_var_domains,
)
from tirc.ir import dtype as dt
from tirc.ir import expr as E
from tirc.ir import stmt as S
from tirc.ir.buffer import Range, make_buffer
from tirc.ir.expr import IntImm, Var
from tirc.ir.structural import structural_equal


def c(value: int) -> IntImm:
    return IntImm(value)


def spatial(var: Var, extent: int) -> S.IterVar:
    return S.IterVar(var, Range(c(0), c(extent)), S.IterType.SPATIAL)


def test_a_scaled_index_needs_the_iterations_that_cover_the_required_elements() -> None:
    # the block writes A[vi * 4]; elements 8..15 are read below the loop: vi in [2, 3]
    vi = Var("vi")
    buffer = make_buffer("A", (c(64),), dt.FLOAT32)
    point = E.Mul(vi, c(4))
    provided = {buffer: [[Interval.point(point)]]}
    required = {buffer: [[Interval(c(8), c(15))]]}
    [domain] = solve_block_var_domains([spatial(vi, 16)], provided, required, Analyzer())
    cover = domain.cover_range(Range(c(0), c(16)))
    assert isinstance(cover.min, IntImm) and cover.min.value == 2
    assert isinstance(cover.extent, IntImm) and cover.extent.value == 2


def test_an_index_no_iterator_provides_is_named_for_the_caller_to_print() -> None:
    vi, vj = Var("vi"), Var("vj")
    buffer = make_buffer("A", (c(64),), dt.FLOAT32)
    point = E.Add(vi, vj)
    provided = {buffer: [[Interval.point(point)]]}
    required = {buffer: [[Interval(c(0), c(7))]]}
    with pytest.raises(UnsolvableRegion) as raised:
        solve_block_var_domains([spatial(vi, 4), spatial(vj, 4)], provided, required, Analyzer())
    assert str(raised.value) == "no iteration variable provides the index"
    assert raised.value.index is not None and structural_equal(raised.value.index, point)

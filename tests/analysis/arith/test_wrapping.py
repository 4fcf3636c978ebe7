"""Integers other than int32 / int64 wrap, so the simplifier's index rules do not apply to
them (as TVM's apply only to its index types): a rewrite that assumes no overflow changed
what an int8 program computes. Constants still fold to the wrapped value, and comparisons and
min / max are still decided where the operands' own values decide them."""

from __future__ import annotations

import pytest

from tirc.analysis.arith import Analyzer
from tirc.ir import dtype as dt
from tirc.ir import expr as E
from tirc.ir.expr import IntImm, PrimExpr, Var

WRAPPING = ["int8", "int16", "uint8", "uint16", "uint32", "uint64"]


def _simplify(expr: PrimExpr) -> PrimExpr:
    return Analyzer().simplify(expr)


def _folded(expr: PrimExpr) -> int:
    result = _simplify(expr)
    assert isinstance(result, IntImm), result
    return result.value


@pytest.mark.parametrize("name", WRAPPING)
def test_index_rules_leave_wrapping_integers(name: str) -> None:
    kind = dt.parse_dtype(name)
    x = Var("x", kind)

    def c(value: int) -> IntImm:
        return IntImm(value, kind)

    for expr in (
        E.FloorDiv(E.Add(E.Mul(x, c(4)), c(9)), c(8)),
        E.FloorDiv(E.Add(x, c(100)), c(2)),
        E.Div(E.Mul(x, c(2)), c(2)),
        E.Max(x, E.Add(x, c(1))),
        E.LT(x, E.Add(x, c(1))),
        E.FloorMod(c(0), x),
        E.FloorDiv(x, x),
        E.Sub(E.FloorDiv(E.Add(x, c(13)), c(4)), E.FloorDiv(E.Add(x, c(1)), c(4))),
    ):
        assert type(_simplify(expr)) is type(expr), expr


def test_index_types_keep_their_rules() -> None:
    x = Var("x", dt.INT32)
    result = _simplify(E.FloorDiv(E.Mul(x, IntImm(4, dt.INT32)), IntImm(8, dt.INT32)))
    assert isinstance(result, E.FloorDiv) and result.a is x
    assert isinstance(result.b, IntImm) and result.b.value == 2
    assert _folded(E.FloorMod(IntImm(0, dt.INT32), x)) == 0


def test_wrapping_integers_still_fold() -> None:
    int8, uint8 = dt.parse_dtype("int8"), dt.parse_dtype("uint8")
    x = Var("x", int8)
    assert _folded(E.Add(IntImm(127, int8), IntImm(1, int8))) == -128
    assert _folded(E.FloorDiv(IntImm(-128, int8), IntImm(-1, int8))) == -128
    assert _folded(E.FloorMod(IntImm(200, uint8), IntImm(7, uint8))) == 4
    assert _folded(E.Sub(x, x)) == 0
    assert _folded(E.LE(x, x)) == 1
    assert _simplify(E.FloorDiv(x, IntImm(1, int8))) is x


def test_the_least_constant_is_added_not_subtracted() -> None:
    """x + -2147483648: its negation does not fit in int32 (it printed `x - 2147483648`, which
    reads back as int64)."""
    x = Var("x", dt.INT32)
    total = E.Add(E.Add(x, IntImm(2147483647, dt.INT32)), IntImm(1, dt.INT32))
    result = _simplify(total)
    assert isinstance(result, E.Add) and isinstance(result.b, IntImm)
    assert result.b.value == -(2**31)

"""TVM's rules for an index comparison with a constant that tirc lacked: a constant beside
the other side moves across (`i + 15 < 16` is `i < 1`), a positive scale divides the constant
(`7 < n * 2` is `3 < n`), and topi's ceil_log2 folds or is bounded. Checked against every
value of x in a window, each comparison kind, either side."""

from __future__ import annotations

import operator
from collections.abc import Callable

import pytest

from tirc.analysis.arith import Analyzer
from tirc.ir import dtype as dt
from tirc.ir import expr as E
from tirc.ir.buffer import Range
from tirc.ir.expr import IntImm, PrimExpr, Var

X = Var("x", dt.INT32)
KINDS: dict[type[E.CompareOp], Callable[[int, int], bool]] = {
    E.LT: operator.lt,
    E.LE: operator.le,
    E.GT: operator.gt,
    E.GE: operator.ge,
    E.EQ: operator.eq,
    E.NE: operator.ne,
}


def _int(value: int) -> IntImm:
    return IntImm(value, dt.INT32)


def _value(expr: PrimExpr, x: int) -> int:
    if isinstance(expr, IntImm):
        return expr.value
    if expr is X:
        return x
    if isinstance(expr, (E.Add, E.Sub, E.Mul)):
        a, b = _value(expr.a, x), _value(expr.b, x)
        return a + b if isinstance(expr, E.Add) else a - b if isinstance(expr, E.Sub) else a * b
    raise AssertionError(f"unexpected {expr}")


@pytest.mark.parametrize("kind", list(KINDS), ids=lambda kind: kind.__name__)
def test_moved_constants_keep_every_verdict(kind: type[E.CompareOp]) -> None:
    test = KINDS[kind]
    for scale in (1, 2, 3):
        for offset in (0, 3, -2):
            side: PrimExpr = X if scale == 1 else E.Mul(X, _int(scale))
            if offset:
                side = E.Add(side, _int(offset))
            for constant in range(-7, 8):
                for node in (kind(side, _int(constant)), kind(_int(constant), side)):
                    result = Analyzer().simplify(node)
                    assert isinstance(result, E.CompareOp)
                    assert isinstance(result.a, IntImm) or isinstance(result.b, IntImm)
                    if scale == 1 or kind not in (E.EQ, E.NE):  # TVM keeps x * 2 == 7
                        assert X in (result.a, result.b), (node, result)  # nothing beside x
                    got = KINDS[type(result)]
                    for x in range(-12, 13):
                        want = test(_value(node.a, x), _value(node.b, x))
                        assert got(_value(result.a, x), _value(result.b, x)) == want, (node, x)


@pytest.mark.parametrize(
    "node, text",
    [
        (E.LT(E.Add(X, _int(15)), _int(16)), "x < 1"),
        (E.LE(_int(3), E.Add(X, _int(2))), "1 <= x"),
        (E.EQ(_int(4), E.Sub(X, _int(1))), "x == 5"),
        (E.LT(_int(7), E.Add(E.Mul(X, _int(2)), _int(1))), "3 < x"),
    ],
)
def test_tvm_spelling(node: E.CompareOp, text: str) -> None:
    result = Analyzer().simplify(node)
    assert isinstance(result, E.CompareOp)
    kind = {E.LT: "<", E.LE: "<=", E.EQ: "=="}[type(result)]
    sides = [
        X.name if side is X else str(getattr(side, "value", side)) for side in (result.a, result.b)
    ]
    assert f"{sides[0]} {kind} {sides[1]}" == text


def test_narrow_comparisons_keep_their_constants() -> None:
    x = Var("x", dt.parse_dtype("int8"))
    node = E.LT(E.Add(x, IntImm(15, x.dtype)), IntImm(16, x.dtype))
    assert Analyzer().simplify(node) is node  # x + 15 wraps for x above 112


def _ceil_log2(argument: PrimExpr) -> E.Cast:
    log2 = E.Call(dt.FLOAT64, "log2", (argument,))
    return E.Cast(dt.INT32, E.Call(dt.FLOAT64, "ceil", (log2,)))


def test_ceil_log2_of_a_constant_folds() -> None:
    result = Analyzer().simplify(_ceil_log2(E.FloatImm(14.0, dt.FLOAT64)))
    assert isinstance(result, IntImm) and result.value == 4


@pytest.mark.parametrize("extent, proved", [(16, True), (1024, True), (1025, False)])
def test_ceil_log2_is_bounded_by_its_argument(extent: int, proved: bool) -> None:
    """i + 1025 reaches 2048 for i below 1024: ceil(log2) 11 throughout; 2049 makes it 12."""
    analyzer = Analyzer()
    i = Var("i", dt.INT32)
    analyzer.bind(i, Range(_int(0), _int(extent)))
    value = _ceil_log2(E.Cast(dt.FLOAT64, E.Add(i, _int(1025))))
    assert analyzer.can_prove(E.EQ(value, _int(11))) is proved


def test_a_fraction_does_not_convert() -> None:
    cast = E.Cast(dt.INT32, E.FloatImm(2.5, dt.FLOAT64))
    assert Analyzer().simplify(cast) is cast

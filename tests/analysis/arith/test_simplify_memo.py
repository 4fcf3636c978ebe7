"""The simplifier's memo: a repeated expression is simplified once while the bounds stay the
same, and never answered from bounds that have changed since."""

from __future__ import annotations

import pytest

from tirc.analysis.arith import Analyzer, Bound
from tirc.analysis.arith import simplify as simplify_module
from tirc.analysis.arith.memo import SimplifyMemo
from tirc.analysis.arith.simplify import Simplifier
from tirc.diagnostics.span import Source, Span
from tirc.ir import dtype as dt
from tirc.ir import expr as E
from tirc.ir.buffer import Range
from tirc.ir.expr import FloatImm, IntImm, Var


def c(value: int) -> IntImm:
    return IntImm(value)


def _guard(i: Var) -> E.PrimExpr:
    """A fresh object each call, structurally the same: an unrolled body's repeated index."""
    return E.LT(E.Add(E.Mul(E.FloorDiv(i, c(4)), c(4)), E.FloorMod(i, c(4))), c(16))


def _value(expr: E.PrimExpr) -> int:
    assert isinstance(expr, IntImm), expr
    return expr.value


def test_structurally_equal_expressions_share_a_key() -> None:
    i, j = Var("i"), Var("i")
    memo = SimplifyMemo()
    assert memo.key(_guard(i)) == memo.key(_guard(i))
    assert memo.key(_guard(i)) != memo.key(_guard(j))  # another variable of the same name
    assert memo.key(FloatImm(0.0)) != memo.key(FloatImm(-0.0))
    assert memo.key(c(1)) != memo.key(IntImm(1, dt.INT64))


def test_a_repeated_expression_is_simplified_once(monkeypatch: pytest.MonkeyPatch) -> None:
    i = Var("i")
    analyzer = Analyzer(remember=True)
    analyzer.bind(i, Range(c(0), c(16)))
    calls: list[E.BinaryOp] = []
    division = simplify_module.Simplifier._division

    def counted(self: Simplifier, node: E.BinaryOp, is_mod: bool) -> E.PrimExpr:
        calls.append(node)
        return division(self, node, is_mod)

    monkeypatch.setattr(simplify_module.Simplifier, "_division", counted)
    first = analyzer.simplify(_guard(i))
    once = len(calls)
    second = analyzer.simplify(_guard(i))
    assert isinstance(first, IntImm) and first.value == 1
    assert second is first
    assert len(calls) == once  # found, not simplified again


def test_changed_bounds_are_not_answered_from_the_memo() -> None:
    i = Var("i")
    analyzer = Analyzer(remember=True)
    analyzer.bind(i, Range(c(0), c(16)))
    assert _value(analyzer.simplify(_guard(i))) == 1
    analyzer.ranges[i] = Bound(0, 31)  # as passes restore a bound: the dict itself
    assert isinstance(analyzer.simplify(_guard(i)), E.LT)
    analyzer.bind(i, Range(c(20), c(4)))
    assert _value(analyzer.simplify(_guard(i))) == 0
    del analyzer.ranges[i]
    assert isinstance(analyzer.simplify(_guard(i)), E.LT)


def test_the_same_expression_on_another_line_keeps_its_own_span() -> None:
    """A memo hit must not hand one line's node to another: diagnostics read the result's span
    (a deadlock reported at the first of two identical barriers, not the one it stalled at)."""
    source = Source("two.tir", "x\ny\n")
    first_span, second_span = Span(source, 0, 1), Span(source, 2, 3)
    i = Var("i")
    analyzer = Analyzer(remember=True)
    analyzer.bind(i, Range(c(0), c(16)))
    first = analyzer.simplify(E.Call(dt.INT32, "tvm_storage_sync", (i,), span=first_span))
    second = analyzer.simplify(E.Call(dt.INT32, "tvm_storage_sync", (i,), span=second_span))
    assert first.span == first_span
    assert second.span == second_span

"""TVM's spelling of integer comparisons (expected forms are TVM 0.27's `Analyzer.simplify`)."""

from __future__ import annotations

import pytest

from tirc.analysis.arith import Analyzer
from tirc.analysis.arith.compare import normal_comparisons
from tirc.ir import dtype as dt
from tirc.ir.expr import Var
from tirc.text import script
from tirc.text.expression import parse_expression

NAMES = {name: Var(name, dt.INT32) for name in ("i", "j", "k")}


def _normal(text: str) -> str:
    expr = parse_expression(text, variables=NAMES)
    return script(normal_comparisons(Analyzer().simplify(expr)))


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("i * 20 + j - 3 >= 0", "3 <= i * 20 + j"),
        ("i * 20 + j - 3 < 200", "i * 20 + j < 203"),
        ("i * 20 + j > 3", "3 < i * 20 + j"),
        ("i * 20 + j < 3", "i * 20 + j < 3"),
        ("i * 20 + j + 2 <= 5", "i * 20 + j <= 3"),
        ("i * 20 + j - 2 >= 7", "9 <= i * 20 + j"),
        ("i * 20 + j - k >= 0", "0 <= i * 20 + j - k"),
        ("i * 20 + j >= k + 2", "k + 2 <= i * 20 + j"),
        ("i - 3 >= 0 and i - 3 < 200", "3 <= i and i < 203"),
    ],
)
def test_tvm_spelling(text: str, want: str) -> None:
    assert _normal(text) == want


def test_float_comparison_is_left_alone() -> None:
    x = Var("x", dt.FLOAT32)
    expr = parse_expression("x >= T.float32(0.0)", variables={"x": x})
    assert normal_comparisons(expr) is expr

"""random_inputs: shapes that are expressions of the size variables, and the error that names
a missing one."""

from __future__ import annotations

import pytest

from tirc.diagnostics import DiagnosticError
from tirc.interp import random_inputs
from tirc.text import parse

PROGRAM = """
@T.prim_func
def main(a: T.handle, b: T.handle, n: T.int32):
    A = T.match_buffer(a, (n * 2, 3), "float32")
    B = T.match_buffer(b, ((n + 7) // 8, T.max(n, 4)), "int8")
    for i in range(n * 2):
        A[i, 0] = T.float32(1)
"""


def test_shape_expressions_are_evaluated() -> None:
    func = parse(PROGRAM)["main"]
    inputs = random_inputs(func, 0, sizes={"n": 10})
    assert inputs["a"].shape == (20, 3)
    assert inputs["b"].shape == (2, 10)
    assert inputs["n"] == 10
    small = random_inputs(func, 0, sizes={"n": 1})
    assert small["b"].shape == (1, 4)


def test_a_missing_size_is_named() -> None:
    func = parse(PROGRAM)["main"]
    with pytest.raises(DiagnosticError, match="depends on n"):
        random_inputs(func, 0, sizes={})

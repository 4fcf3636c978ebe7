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


def test_a_buffer_too_large_to_draw_is_a_located_error() -> None:
    """TVM's narrow-datatype tests declare buffers of 2**32 elements: drawing them raised
    numpy's MemoryError (a traceback), or took all memory."""
    func = parse(
        '@T.prim_func\ndef main(A: T.Buffer((T.int64(4294967296),), "float32")):\n'
        "    A[0] = T.float32(1)\n"
    )["main"]
    with pytest.raises(DiagnosticError, match=r"A of shape \(4294967296,\) would be 16 GiB") as e:
        random_inputs(func)
    assert e.value.diagnostics[0].span is not None
    # 128**4 float32 (TVM's error_report program): 1 GiB, 6 GiB in temporaries to draw
    func = parse(
        '@T.prim_func\ndef main(A: T.Buffer((128, 128, 128, 128), "float32")):\n'
        "    A[0, 0, 0, 0] = T.float32(1)\n"
    )["main"]
    with pytest.raises(DiagnosticError, match="would be 1 GiB of random input, more than 256 MiB"):
        random_inputs(func)


def test_a_negative_extent_is_a_located_error() -> None:
    func = parse(
        "@T.prim_func\ndef main(a: T.handle):\n    n = T.int32()\n"
        '    A = T.match_buffer(a, (n - 10,), "float32")\n    A[0] = T.float32(1)\n'
    )["main"]
    with pytest.raises(DiagnosticError, match=r"A would have the negative shape \(-2,\)"):
        random_inputs(func, sizes={"n": 8})

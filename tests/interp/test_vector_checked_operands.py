"""Bounds-checked loads (the check binds its index with `:=`) inside every kind of vector
operand the interpreter compiles lane by lane: Python forbids `:=` in a comprehension's
iterable, so each such lane source must be bound before its comprehension."""

from __future__ import annotations

import numpy as np
import pytest

from tirc.interp import run
from tirc.text import parse

TEXT = """
@T.prim_func
def main(a: T.handle, B: T.Buffer((8,), "float32"), C: T.Buffer((16,), "int32"), j: T.int32):
    n = T.int32()
    A = T.match_buffer(a, (n,))
    B[T.Ramp(0, 1, 8)] = T.Select(T.Broadcast(A[j], 8) < T.Broadcast(A[j + 1], 8), T.Cast("float32x8", T.Broadcast(T.Cast("int32", A[j]), 8)), T.exp(T.Broadcast(A[j], 8)))
    C[T.Ramp(T.Cast("int32", A[j]), 1, 8)] = T.Cast("int32x8", T.Broadcast(A[j + 1], 8))
    B[T.Ramp(0, 1, 8)] = T.Select(not T.Broadcast(A[j] < A[j + 1], 8), T.Broadcast(A[j], 8), B[T.Ramp(0, 1, 8)] * T.Broadcast(A[j - 1], 8))
"""  # noqa: E501


def test_select_not_cast_call_and_ramp_lanes_compile_and_compute() -> None:
    func = parse(TEXT)["main"]
    a = np.array([2.0, 0.0, 3.0, 4.0], np.float32)
    b = np.zeros(8, np.float32)
    c = np.zeros(16, np.int32)
    run(func, {"a": a, "B": b, "C": c, "j": 2})
    assert b.tolist() == [3.0 * 0.0] * 8  # 3 < 4: cast(int(3)), then times A[1] = 0
    assert c.tolist() == [0, 0, 0] + [4] * 8 + [0] * 5
    a = np.array([2.0, 5.0, 3.0, 4.0], np.float32)
    b = np.zeros(8, np.float32)
    run(func, {"a": a, "B": b, "C": np.zeros(16, np.int32), "j": 1})
    # 5 >= 3: exp(5) in every lane, then A[1] = 5 by `not`
    assert b.tolist() == [5.0] * 8


def test_a_lane_source_out_of_bounds_is_still_a_fault() -> None:
    func = parse(TEXT)["main"]
    with pytest.raises(Exception, match="out-of-bounds load from A"):
        run(
            func,
            {
                "a": np.zeros(3, np.float32),
                "B": np.zeros(8, np.float32),
                "C": np.zeros(16, np.int32),
                "j": 2,
            },
        )

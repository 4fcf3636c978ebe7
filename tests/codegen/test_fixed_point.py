# ruff: noqa: E501 -- the programs are written one statement per line, as TVM prints them
"""T.q_multiply_shift and T.q_multiply_shift_per_axis compiled for the CPU against the
interpreter: constant and value shifts, both signs of s, q = 31, INT32_MIN and the largest
products, vector lanes, int64 operands, and a conformance program that uses them."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from tests.codegen.helpers import parse_text, run_both
from tirc.driver.compile import compile_file

INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
EDGES = [
    INT32_MIN,
    INT32_MIN + 1,
    -1_963_325_822,
    -65536,
    -3,
    -1,
    0,
    1,
    2,
    3,
    46341,
    1_963_325_822,
    INT32_MAX,
]
CONFORMANCE = Path("/work/shared/conformance/cases")


def edge_pairs(extra: int = 200, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Every pair of edge values, then random pairs over the whole int32 range."""
    x = [a for a in EDGES for _ in EDGES]
    y = [b for _ in EDGES for b in EDGES]
    rng = np.random.default_rng(seed)
    x += rng.integers(INT32_MIN, INT32_MAX, extra, endpoint=True).tolist()
    y += rng.integers(INT32_MIN, INT32_MAX, extra, endpoint=True).tolist()
    return np.array(x, np.int32), np.array(y, np.int32)


def constant_shifts(q: int, s: int) -> str:
    return f"""
@T.prim_func(s_tir=True)
def main(a: T.handle, b: T.handle, c: T.handle):
    n = T.int32()
    A = T.match_buffer(a, (n,), "int32")
    B = T.match_buffer(b, (n,), "int32")
    C = T.match_buffer(c, (n, 2), "int32")
    for i in range(n):
        with T.sblock("C"):
            vi = T.axis.spatial(n, i)
            C[vi, 0] = T.q_multiply_shift(A[vi], B[vi], {q}, {s})
            C[vi, 1] = T.q_multiply_shift(A[vi], 1963325822, {q}, {s})
"""


@pytest.mark.parametrize(
    ("q", "s"),
    [
        (31, 0),
        (31, 1),
        (31, -1),
        (31, -9),
        (31, 31),
        (31, -31),
        (31, -40),
        (0, 0),
        (0, 5),
        (15, -3),
        (31, 64),
    ],
)
def test_constant_shifts_agree_with_the_interpreter(q: int, s: int) -> None:
    x, y = edge_pairs()
    args = {"a": x, "b": y, "c": np.zeros((len(x), 2), np.int32)}
    run_both(parse_text(constant_shifts(q, s)), args)


VALUE_SHIFTS = """
@T.prim_func(s_tir=True)
def main(a: T.handle, b: T.handle, q: T.handle, s: T.handle, c: T.handle):
    n = T.int32()
    A = T.match_buffer(a, (n,), "int32")
    B = T.match_buffer(b, (n,), "int32")
    Q = T.match_buffer(q, (n,), "int32")
    S = T.match_buffer(s, (n,), "int32")
    C = T.match_buffer(c, (n, 2), "int32")
    for i in range(n):
        with T.sblock("C"):
            vi = T.axis.spatial(n, i)
            C[vi, 0] = T.q_multiply_shift(A[vi], B[vi], Q[vi], S[vi])
            C[vi, 1] = T.q_multiply_shift(A[vi], B[vi], 31, S[vi])
"""


def test_value_shifts_agree_with_the_interpreter() -> None:
    x, y = edge_pairs(extra=400, seed=1)
    rng = np.random.default_rng(2)
    q = rng.choice([0, 1, 15, 31, 32, 40], len(x)).astype(np.int32)
    s = rng.integers(-63, 63, len(x), endpoint=True).astype(np.int32)
    args = {"a": x, "b": y, "q": q, "s": s, "c": np.zeros((len(x), 2), np.int32)}
    run_both(parse_text(VALUE_SHIFTS), args)


VECTOR_LANES = """
@T.prim_func(s_tir=True)
def main(A: T.Buffer((32, 8), "int32"), B: T.Buffer((32, 8), "int32"), S: T.Buffer((32,), "int32"), C: T.Buffer((32, 8, 3), "int32")):
    T.func_attr({"tirx.noalias": True})
    for i in range(32):
        for j in T.vectorized(8):
            with T.sblock("C"):
                vi, vj = T.axis.remap("SS", [i, j])
                C[vi, vj, 0] = T.q_multiply_shift(A[vi, vj], B[vi, vj], 31, -3)
                C[vi, vj, 1] = T.q_multiply_shift(A[vi, vj], 1408572815, 31, 1)
                C[vi, vj, 2] = T.q_multiply_shift(A[vi, vj], B[vi, vj], 31, S[vi])
"""


def test_vector_lanes_agree_with_the_interpreter() -> None:
    x, y = edge_pairs(extra=256 - len(EDGES) ** 2, seed=3)
    rng = np.random.default_rng(4)
    args = {
        "A": x.reshape(32, 8),
        "B": y.reshape(32, 8),
        "S": rng.integers(-40, 8, 32).astype(np.int32),
        "C": np.zeros((32, 8, 3), np.int32),
    }
    run_both(parse_text(VECTOR_LANES), args)


def test_vectorized_code_keeps_vector_lanes() -> None:
    from tirc.codegen.llvm import compile_module
    from tirc.driver.lower import lower_module
    from tirc.driver.target import parse_target

    lowered = lower_module(parse_text(VECTOR_LANES), target="cpu")
    text = compile_module(lowered, parse_target("cpu"), 0).llvm_ir()
    assert "mul <8 x i64>" in text  # constant shifts: the product provably fits in 64 bits
    assert "mul <8 x i128>" in text  # a shift from memory: 128 bits


PER_AXIS = """
@T.prim_func(s_tir=True)
def main(a: T.handle, b: T.handle, l: T.handle, r: T.handle, c: T.handle):
    n = T.int32()
    A = T.match_buffer(a, (n,), "int32")
    B = T.match_buffer(b, (n,), "int32")
    L = T.match_buffer(l, (n,), "int32")
    R = T.match_buffer(r, (n,), "int32")
    C = T.match_buffer(c, (n, 5), "int32")
    for i in range(n):
        with T.sblock("C"):
            vi = T.axis.spatial(n, i)
            C[vi, 0] = T.q_multiply_shift_per_axis(A[vi], B[vi], L[vi], R[vi], 31, T.bool(False), T.bool(True))
            C[vi, 1] = T.q_multiply_shift_per_axis(A[vi], B[vi], L[vi], R[vi], 31, T.bool(True), T.bool(True))
            C[vi, 2] = T.q_multiply_shift_per_axis(A[vi], B[vi], L[vi], R[vi], 31, T.bool(True), T.bool(False))
            C[vi, 3] = T.q_multiply_shift_per_axis(A[vi], B[vi], 3, 7, 31, T.bool(True), T.bool(True))
            C[vi, 4] = T.q_multiply_shift_per_axis(A[vi], B[vi], 0, 0, 0, T.bool(False), T.bool(False))
"""


def test_per_axis_agrees_with_the_interpreter() -> None:
    x, y = edge_pairs(extra=300, seed=5)
    rng = np.random.default_rng(6)
    args = {
        "a": x,
        "b": y,
        "l": rng.integers(0, 40, len(x)).astype(np.int32),
        "r": rng.integers(-31, 80, len(x)).astype(np.int32),
        "c": np.zeros((len(x), 5), np.int32),
    }
    run_both(parse_text(PER_AXIS), args)


PER_AXIS_INT64_SHIFTS = """
@T.prim_func(s_tir=True)
def main(a: T.handle, b: T.handle, l: T.handle, r: T.handle, c: T.handle):
    n = T.int32()
    A = T.match_buffer(a, (n,), "int32")
    B = T.match_buffer(b, (n,), "int32")
    L = T.match_buffer(l, (n,), "int64")
    R = T.match_buffer(r, (n,), "int64")
    C = T.match_buffer(c, (n, 3), "int32")
    for i in range(n):
        with T.sblock("C"):
            vi = T.axis.spatial(n, i)
            C[vi, 0] = T.q_multiply_shift_per_axis(A[vi], B[vi], L[vi], R[vi], 31, T.bool(False), T.bool(True))
            C[vi, 1] = T.q_multiply_shift_per_axis(A[vi], 1963325822, L[vi], R[vi], 31, T.bool(False), T.bool(True))
            C[vi, 2] = T.q_multiply_shift_per_axis(A[vi], 1963325822, L[vi], R[vi], 31, T.bool(True), T.bool(True))
"""


def test_per_axis_with_int64_shifts_agrees_with_the_interpreter() -> None:
    """The conv2d requantization's shape: shifts from int64 buffers, a product that fits
    64 bits when the multiplier is a constant."""
    x, y = edge_pairs(extra=300, seed=8)
    rng = np.random.default_rng(9)
    args = {
        "a": x,
        "b": y,
        "l": rng.integers(0, 40, len(x)).astype(np.int64),
        "r": rng.integers(-31, 80, len(x)).astype(np.int64),
        "c": np.zeros((len(x), 3), np.int32),
    }
    run_both(parse_text(PER_AXIS_INT64_SHIFTS), args)


INT64 = """
@T.prim_func(s_tir=True)
def main(A: T.Buffer((64,), "int64"), B: T.Buffer((64,), "int64"), S: T.Buffer((64,), "int32"), C: T.Buffer((64, 2), "int64")):
    for i in range(64):
        with T.sblock("C"):
            vi = T.axis.spatial(64, i)
            C[vi, 0] = T.q_multiply_shift(A[vi], B[vi], T.int64(63), T.int64(-2))
            C[vi, 1] = T.q_multiply_shift(A[vi], B[vi], 63, S[vi])
"""


def test_int64_operands_agree_with_the_interpreter() -> None:
    rng = np.random.default_rng(7)
    edges = [-(2**63), -(2**63) + 1, -1, 0, 1, 2**63 - 1]
    x = np.array(edges * 6 + rng.integers(-(2**63), 2**63 - 1, 28).tolist(), np.int64)
    y = np.array(
        [b for b in edges for _ in range(6)] + rng.integers(-(2**63), 2**63 - 1, 28).tolist(),
        np.int64,
    )
    args = {
        "A": x,
        "B": y,
        "S": rng.integers(-70, 60, 64).astype(np.int32),
        "C": np.zeros((64, 2), np.int64),
    }
    run_both(parse_text(INT64), args)


@pytest.mark.skipif(not CONFORMANCE.exists(), reason="the conformance cases are not here")
def test_conv2d_int8_requantization_compiles_for_the_cpu(tmp_path: Path) -> None:
    case = CONFORMANCE / "test_meta_schedule_trace_apply__test_conv2d_int8_tensorcore__0"
    output = tmp_path / "conv.ll"
    assert compile_file(str(case / "input.tir"), emit="ll", output=str(output)) == 0
    text = output.read_text()
    assert "define" in text
    assert not re.search(r"[ <(]i128\b", text)  # x * constant << 1 fits in 64 bits

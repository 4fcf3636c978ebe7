"""Intrinsic calls: math (computed in float64, rounded to the call's dtype), C externs by
name, bit operations, reinterpret, fixed-point multiply, and the extension registries."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tests.interp.helpers import run_source
from tirc import interp
from tirc.diagnostics import DiagnosticError

UNARY = ["exp", "log", "sqrt", "tanh", "erf", "sigmoid", "sin", "floor", "ceil", "round", "log1p"]


@pytest.mark.parametrize("name", UNARY)
def test_unary_math_is_the_float64_result_rounded(name: str) -> None:
    source = f"""
    @T.prim_func
    def main(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32")):
        for i in range(8):
            B[i] = T.{name}(A[i])
    """
    a = np.array([0.5, 1.5, 2.5, 3.0, 0.125, 7.0, 0.75, 2.0], np.float32)
    b = np.zeros(8, np.float32)
    run_source(source, A=a, B=b)
    special = {
        "sigmoid": lambda x: 1 / (1 + math.exp(-x)),
        "round": lambda x: float(round(x)),  # half to even, as TVM's CPU code
    }
    reference = special[name] if name in special else getattr(math, name)
    expected = np.array([reference(float(x)) for x in a], np.float64).astype(np.float32)
    np.testing.assert_array_equal(b, expected)


def test_math_outside_the_domain_gives_inf_and_nan() -> None:
    source = """
    @T.prim_func
    def main(A: T.Buffer((4,), "float32"), B: T.Buffer((4,), "float32")):
        B[0] = T.log(A[0])
        B[1] = T.sqrt(A[1])
        B[2] = T.exp(A[2])
        B[3] = T.pow(A[0], A[1])
    """
    b = np.zeros(4, np.float32)
    run_source(source, A=np.array([0.0, -1.0, 1000.0, 0.0], np.float32), B=b)
    assert b[0] == -np.inf and np.isnan(b[1]) and b[2] == np.inf and b[3] == np.inf


def test_call_extern_knows_c_math() -> None:
    source = """
    @T.prim_func
    def main(A: T.Buffer((2,), "float32"), B: T.Buffer((2,), "float32")):
        B[0] = T.call_extern("float32", "expf", A[0])
        B[1] = T.call_pure_extern("float32", "powf", A[0], A[1])
    """
    b = np.zeros(2, np.float32)
    run_source(source, A=np.array([2.0, 3.0], np.float32), B=b)
    assert b[0] == np.float32(math.exp(2.0)) and b[1] == 8.0


def test_unknown_extern_is_an_error_until_registered() -> None:
    source = """
    @T.prim_func
    def main(B: T.Buffer((1,), "float32")):
        B[0] = T.call_extern("float32", "my_function", T.float32(2.0))
    """
    with pytest.raises(DiagnosticError, match="my_function"):
        run_source(source, B=np.zeros(1, np.float32))
    interp.EXTERNS["my_function"] = lambda x: x * 10
    try:
        b = np.zeros(1, np.float32)
        run_source(source, B=b)
        assert b[0] == 20.0
    finally:
        del interp.EXTERNS["my_function"]


def test_bit_operations() -> None:
    source = """
    @T.prim_func
    def main(A: T.Buffer((8,), "int32"), B: T.Buffer((8,), "uint8")):
        A[0] = T.shift_left(A[0], 4)
        A[1] = T.shift_right(A[1], 1)
        A[2] = T.bitwise_and(A[2], 12)
        A[3] = T.bitwise_xor(A[3], -1)
        A[4] = T.popcount(A[4])
        A[5] = T.bitwise_not(A[5])
        B[0] = T.bitwise_not(B[0])
        B[1] = T.shift_right(B[1], 1)
    """
    a = np.array([0x7FFFFFF, -7, 13, 5, 255, 0, 0, 0], np.int32)
    b = np.array([1, 200, 0, 0, 0, 0, 0, 0], np.uint8)
    run_source(source, A=a, B=b)
    assert a[:6].tolist() == [
        np.int32(0x7FFFFFF << 4 & 0xFFFFFFFF).view(np.int32),
        -4,
        12,
        -6,
        8,
        -1,
    ]
    assert b[:2].tolist() == [254, 100]


def test_shift_by_the_bit_width_is_an_error() -> None:
    source = """
    @T.prim_func
    def main(A: T.Buffer((1,), "int32"), n: T.int32):
        A[0] = T.shift_left(A[0], n)
    """
    with pytest.raises(DiagnosticError, match="shift"):
        run_source(source, A=np.ones(1, np.int32), n=32)


def test_reinterpret_keeps_the_bits() -> None:
    source = """
    @T.prim_func
    def main(A: T.Buffer((1,), "float32"), B: T.Buffer((1,), "int32")):
        B[0] = T.reinterpret("int32", A[0])
    """
    b = np.zeros(1, np.int32)
    run_source(source, A=np.array([1.0], np.float32), B=b)
    assert b[0] == 0x3F800000


def test_reinterpret_regroups_vector_lanes_into_a_scalar() -> None:
    """int8x4 -> int32 reads the four bytes as one word (it was a one-element tuple that the
    store then rejected with an internal TypeError)."""
    source = """
    @T.prim_func
    def main(A: T.Buffer((4,), "int8"), B: T.Buffer((1,), "int32")):
        B[0] = T.reinterpret("int32", A[T.Ramp(0, 1, 4)])
    """
    a = np.array([-16, 11, 84, -10], np.int8)
    b = np.zeros(1, np.int32)
    run_source(source, A=a, B=b)
    assert b[0] == a.view(np.int32)[0]


def test_q_multiply_shift_rounds_half_up() -> None:
    source = """
    @T.prim_func
    def main(A: T.Buffer((4,), "int32"), B: T.Buffer((4,), "int32")):
        for i in range(4):
            B[i] = T.q_multiply_shift(A[i], 1 << 30, 31, -1)
    """
    a = np.array([10, 11, -10, -11], np.int32)
    b = np.zeros(4, np.int32)
    run_source(source, A=a, B=b)
    # x * 0.5 * 2^-1 = x / 4, rounded half up
    assert b.tolist() == [3, 3, -2, -3]


def test_wmma_intrinsics_multiply_fragments() -> None:
    source = """
    @T.prim_func
    def main(A: T.Buffer((16, 16), "float16"), B: T.Buffer((16, 16), "float16"), C: T.Buffer((16, 16), "float32")):
        A_frag = T.alloc_buffer((16, 16), "float16", scope="wmma.matrix_a")
        B_frag = T.alloc_buffer((16, 16), "float16", scope="wmma.matrix_b")
        C_frag = T.alloc_buffer((16, 16), "float32", scope="wmma.accumulator")
        T.tvm_fill_fragment(C_frag.data, 16, 16, 16, 0, T.float32(1.0))
        T.tvm_load_matrix_sync(A_frag.data, 16, 16, 16, 0, T.tvm_access_ptr(T.type_annotation("float16"), A.data, 0, 256, 1), 16, "row_major")
        T.tvm_load_matrix_sync(B_frag.data, 16, 16, 16, 0, T.tvm_access_ptr(T.type_annotation("float16"), B.data, 0, 256, 1), 16, "col_major")
        T.tvm_mma_sync(C_frag.data, 0, A_frag.data, 0, B_frag.data, 0, C_frag.data, 0)
        T.tvm_store_matrix_sync(C_frag.data, 16, 16, 16, 0, T.tvm_access_ptr(T.type_annotation("float32"), C.data, 0, 256, 2), 16, "row_major")
    """  # noqa: E501
    rng = np.random.default_rng(0)
    a = (rng.integers(-4, 5, (16, 16)) / 4).astype(np.float16)
    b = (rng.integers(-4, 5, (16, 16)) / 4).astype(np.float16)
    c = np.zeros((16, 16), np.float32)
    run_source(source, A=a, B=b, C=c)
    # B was loaded column-major: the fragment holds B transposed
    expected = a.astype(np.float32) @ b.astype(np.float32).T + 1
    np.testing.assert_array_equal(c, expected)

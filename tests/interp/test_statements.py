"""tir statements and expressions: sequences and Binds, loops with steps, while with break and
continue, assert, Select against if_then_else, Let, vectors, and buffer views."""

from __future__ import annotations

import numpy as np
import pytest

from tests.interp.helpers import line_of, run_source
from tirc.diagnostics import DiagnosticError


def test_loops_while_break_and_continue() -> None:
    source = """
    @T.prim_func
    def main(B: T.Buffer((16,), "int32")):
        for i in range(1, 10, 3):
            B[i] = i
        n = T.alloc_buffer((1,), "int32")
        n[0] = 0
        while n[0] < 100:
            n[0] = n[0] + 1
            if n[0] == 5:
                continue
            if n[0] == 8:
                break
            B[10] = B[10] + n[0]
    """
    b = np.zeros(16, np.int32)
    run_source(source, B=b)
    assert b[[1, 4, 7]].tolist() == [1, 4, 7] and b[[0, 2, 3]].tolist() == [0, 0, 0]
    assert b[10] == 1 + 2 + 3 + 4 + 6 + 7


def test_assert_stops_with_its_message_at_its_line() -> None:
    source = """
    @T.prim_func
    def main(A: T.Buffer((4,), "float32"), n: T.int32):
        assert n > 0, "n must be positive"
        A[0] = T.float32(1.0)
    """
    a = np.zeros(4, np.float32)
    run_source(source, A=a, n=3)
    assert a[0] == 1.0
    with pytest.raises(DiagnosticError) as caught:
        run_source(source, A=a, n=0)
    diagnostic = caught.value.diagnostics[0]
    assert "n must be positive" in diagnostic.message
    assert diagnostic.span is not None and diagnostic.span.line == line_of(source, "assert")


def test_if_then_else_evaluates_one_branch() -> None:
    source = """
    @T.prim_func
    def main(A: T.Buffer((16,), "float32"), B: T.Buffer((18,), "float32")):
        for i in range(18):
            B[i] = T.if_then_else(1 <= i and i < 17, A[i - 1], T.float32(0.0))
    """
    a = np.arange(16, dtype=np.float32) + 1
    b = np.full(18, -1.0, np.float32)
    run_source(source, A=a, B=b)
    np.testing.assert_array_equal(b, np.concatenate([[0], a, [0]]))


def test_select_evaluates_both_values() -> None:
    source = """
    @T.prim_func
    def main(A: T.Buffer((16,), "float32"), B: T.Buffer((18,), "float32")):
        for i in range(18):
            B[i] = T.Select(1 <= i and i < 17, A[i - 1], T.float32(0.0))
    """
    with pytest.raises(DiagnosticError, match="index -1 is outside"):
        run_source(source, A=np.zeros(16, np.float32), B=np.zeros(18, np.float32))


def test_bind_and_let() -> None:
    source = """
    @T.prim_func
    def main(B: T.Buffer((4,), "int32"), n: T.int32):
        m: T.int32 = n * 3
        B[0] = m + 1
        x = T.int32()
        B[1] = T.Let(x * x, where={x: m})
    """
    b = np.zeros(4, np.int32)
    run_source(source, B=b, n=2)
    assert b[:2].tolist() == [7, 36]


def test_decl_buffer_views_the_same_memory() -> None:
    source = """
    @T.prim_func
    def main(A: T.Buffer((16,), "float32"), B: T.Buffer((4,), "float32")):
        C = T.alloc_buffer((16,), "float32")
        D = T.decl_buffer((4, 4), "float32", data=C.data)
        for i in range(16):
            C[i] = A[i]
        for j in range(4):
            B[j] = D[j, j]
    """
    a = np.arange(16, dtype=np.float32)
    b = np.zeros(4, np.float32)
    run_source(source, A=a, B=b)
    np.testing.assert_array_equal(b, [0, 5, 10, 15])


def test_vectors_ramp_and_broadcast() -> None:
    source = """
    @T.prim_func
    def main(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32")):
        B[T.Ramp(0, 2, 4)] = A[T.Ramp(1, 2, 4)] + T.Broadcast(T.float32(0.5), 4)
    """
    a = np.arange(8, dtype=np.float32)
    b = np.zeros(8, np.float32)
    run_source(source, A=a, B=b)
    np.testing.assert_array_equal(b, [1.5, 0, 3.5, 0, 5.5, 0, 7.5, 0])


def test_vector_load_out_of_bounds_names_the_lane_index() -> None:
    source = """
    @T.prim_func
    def main(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32")):
        B[T.Ramp(0, 1, 4)] = A[T.Ramp(6, 1, 4)]
    """
    with pytest.raises(DiagnosticError, match="index 8 is outside"):
        run_source(source, A=np.zeros(8, np.float32), B=np.zeros(8, np.float32))


def test_parallel_vectorized_and_unrolled_loops_run_in_order() -> None:
    source = """
    @T.prim_func
    def main(A: T.Buffer((8,), "int32")):
        for i in T.parallel(2):
            for j in T.vectorized(2):
                for k in T.unroll(2):
                    A[i * 4 + j * 2 + k] = i * 100 + j * 10 + k
    """
    a = np.zeros(8, np.int32)
    run_source(source, A=a)
    assert a.tolist() == [0, 1, 10, 11, 100, 101, 110, 111]


def test_shuffle_and_vector_halves() -> None:
    source = """
    @T.prim_func
    def main(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32")):
        B[T.Ramp(0, 1, 4)] = T.vectorhigh("float32x4", A[T.Ramp(0, 1, 8)])
        B[T.Ramp(4, 1, 4)] = T.Shuffle([A[T.Ramp(0, 1, 4)], A[T.Ramp(4, 1, 4)]], [7, 0, 6, 1])
    """
    a = np.arange(8, dtype=np.float32)
    b = np.zeros(8, np.float32)
    run_source(source, A=a, B=b)
    assert b.tolist() == [4, 5, 6, 7, 7, 0, 6, 1]


def test_vector_element_buffers() -> None:
    """A buffer of float32x4 holds four lanes per element."""
    source = """
    @T.prim_func
    def main(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32")):
        V = T.decl_buffer((2,), "float32x4", data=A.data)
        W = T.decl_buffer((2,), "float32x4", data=B.data)
        W[1] = V[0] * T.Broadcast(T.float32(2.0), 4)
    """
    a = np.arange(8, dtype=np.float32)
    b = np.zeros(8, np.float32)
    run_source(source, A=a, B=b)
    assert b.tolist() == [0, 0, 0, 0, 0, 2, 4, 6]

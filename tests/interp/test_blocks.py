"""s-tir blocks: bindings, `init` on the first reduction iteration, predicates, domains,
block allocations, match_buffer views, and thread bindings that mean serial loops."""

from __future__ import annotations

import numpy as np
import pytest

from tests.interp.helpers import line_of, run_source
from tirc.diagnostics import DiagnosticError

MATMUL = """
@T.prim_func(s_tir=True)
def main(
    A: T.Buffer((16, 16), "float32"),
    B: T.Buffer((16, 16), "float32"),
    C: T.Buffer((16, 16), "float32"),
):
    for i, j, k in T.grid(16, 16, 16):
        with T.sblock("C"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                C[vi, vj] = T.float32(0.0)
            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]
"""


def test_matmul_runs_init_then_accumulates() -> None:
    rng = np.random.default_rng(0)
    a = (rng.integers(-8, 9, (16, 16)) / 8).astype(np.float32)
    b = (rng.integers(-8, 9, (16, 16)) / 8).astype(np.float32)
    c = np.full((16, 16), 99.0, np.float32)  # init must overwrite what is there
    run_source(MATMUL, A=a, B=b, C=c)
    np.testing.assert_array_equal(c, a @ b)


def test_init_runs_when_reduction_variables_are_at_their_domain_minimum() -> None:
    """A reduction variable over [2, 10): init runs at vk == 2, not vk == 0 (TVM gives 128)."""
    source = """
    @T.prim_func(s_tir=True)
    def main(A: T.Buffer((8,), "float32"), B: T.Buffer((1,), "float32")):
        for k in range(8):
            with T.sblock("C"):
                vk = T.axis.reduce((2, 10), k + 2)
                with T.init():
                    B[0] = T.float32(100.0)
                B[0] = B[0] + A[vk - 2]
    """
    b = np.zeros(1, np.float32)
    run_source(source, A=np.arange(8, dtype=np.float32), B=b)
    assert b[0] == 128.0


def test_init_without_reduction_variables_runs_every_time() -> None:
    source = """
    @T.prim_func(s_tir=True)
    def main(A: T.Buffer((8,), "float32"), B: T.Buffer((1,), "float32")):
        for k in range(8):
            with T.sblock("C"):
                vk = T.axis.spatial(8, k)
                with T.init():
                    B[0] = T.float32(100.0)
                B[0] = B[0] + A[vk]
    """
    b = np.zeros(1, np.float32)
    run_source(source, A=np.arange(8, dtype=np.float32), B=b)
    assert b[0] == 107.0  # TVM 0.27 agrees


def test_predicate_skips_the_block() -> None:
    source = """
    @T.prim_func(s_tir=True)
    def main(A: T.Buffer((10,), "float32"), B: T.Buffer((10,), "float32")):
        for io, ii in T.grid(3, 4):
            with T.sblock("B"):
                vi = T.axis.spatial(10, io * 4 + ii)
                T.where(io * 4 + ii < 10)
                B[vi] = A[vi] + T.float32(1.0)
    """
    b = np.zeros(10, np.float32)
    run_source(source, A=np.arange(10, dtype=np.float32), B=b)
    np.testing.assert_array_equal(b, np.arange(10) + 1)


def test_binding_outside_the_domain_is_an_error() -> None:
    source = """
    @T.prim_func(s_tir=True)
    def main(A: T.Buffer((12,), "float32")):
        for i in range(12):
            with T.sblock("B"):
                vi = T.axis.spatial(10, i)
                A[vi] = T.float32(1.0)
    """
    with pytest.raises(DiagnosticError, match="vi = 10 is outside its domain"):
        run_source(source, A=np.zeros(12, np.float32))


def test_block_allocation_and_opaque_block() -> None:
    source = """
    @T.prim_func(s_tir=True)
    def main(A: T.Buffer((4,), "float32"), B: T.Buffer((4,), "float32")):
        T_tmp = T.sblock_alloc_buffer((4,))
        for i in range(4):
            with T.sblock("tmp"):
                vi = T.axis.spatial(4, i)
                T_tmp[vi] = A[vi] * T.float32(2.0)
        with T.sblock("opaque"):
            for i in range(4):
                B[i] = T_tmp[3 - i]
    """
    b = np.zeros(4, np.float32)
    run_source(source, A=np.arange(4, dtype=np.float32), B=b)
    np.testing.assert_array_equal(b, [6, 4, 2, 0])


def test_match_buffer_views_a_region() -> None:
    source = """
    @T.prim_func(s_tir=True)
    def main(A: T.Buffer((4, 8), "float32"), B: T.Buffer((4,), "float32")):
        for i in range(4):
            with T.sblock("rowsum"):
                vi = T.axis.spatial(4, i)
                row = T.match_buffer(A[vi, 2:6], (4,), offset_factor=1)
                B[vi] = row[0] + row[1] + row[2] + row[3]
    """
    a = np.arange(32, dtype=np.float32).reshape(4, 8)
    b = np.zeros(4, np.float32)
    run_source(source, A=a, B=b)
    np.testing.assert_array_equal(b, a[:, 2:6].sum(axis=1))


def test_thread_bindings_in_s_tir_mean_serial_loops() -> None:
    """A cross-thread reduction (the reduction variable bound to threadIdx.x) is valid s-tir:
    its meaning is that of the serial loop nest."""
    source = """
    @T.prim_func(s_tir=True)
    def main(A: T.Buffer((4, 64), "float32"), B: T.Buffer((4,), "float32")):
        for i in T.thread_binding(4, thread="blockIdx.x"):
            for k in T.thread_binding(64, thread="threadIdx.x"):
                with T.sblock("sum"):
                    vi, vk = T.axis.remap("SR", [i, k])
                    with T.init():
                        B[vi] = T.float32(0.0)
                    B[vi] = B[vi] + A[vi, vk]
    """
    a = np.arange(256, dtype=np.float32).reshape(4, 64) / 8
    b = np.zeros(4, np.float32)
    run_source(source, A=a, B=b)
    np.testing.assert_array_equal(b, a.sum(axis=1))


def test_domain_error_points_at_the_block() -> None:
    source = """
    @T.prim_func(s_tir=True)
    def main(A: T.Buffer((12,), "float32")):
        for i in range(12):
            with T.sblock("B"):
                vi = T.axis.spatial(10, i)
                A[vi] = T.float32(1.0)
    """
    with pytest.raises(DiagnosticError) as caught:
        run_source(source, A=np.zeros(12, np.float32))
    span = caught.value.diagnostics[0].span
    assert span is not None and span.line == line_of(source, 'T.sblock("B")')

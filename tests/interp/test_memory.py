"""Out-of-bounds loads and stores: errors at the access, naming buffer, index and shape; and
arguments checked against the parameters."""

from __future__ import annotations

import numpy as np
import pytest

from tests.interp.helpers import line_of, parse_function, run_source
from tirc import interp
from tirc.diagnostics import DiagnosticError

OFF_BY_ONE = """
@T.prim_func(s_tir=True)
def main(A: T.Buffer((8, 8), "float32"), B: T.Buffer((8, 8), "float32")):
    for i, j in T.grid(8, 8):
        with T.sblock("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj + 1]
"""


def test_out_of_bounds_load_points_at_the_load() -> None:
    with pytest.raises(DiagnosticError) as caught:
        run_source(OFF_BY_ONE, A=np.zeros((8, 8), np.float32), B=np.zeros((8, 8), np.float32))
    diagnostic = caught.value.diagnostics[0]
    assert diagnostic.message == (
        "out-of-bounds load from A (shape (8, 8)): index 8 is outside [0, 8) in dimension 1"
    )
    assert diagnostic.span is not None
    assert diagnostic.span.line == line_of(OFF_BY_ONE, "A[vi, vj + 1]")
    assert diagnostic.span.source.text[diagnostic.span.start :].startswith("A[vi, vj + 1]")


def test_out_of_bounds_store_points_at_the_store() -> None:
    source = """
    @T.prim_func
    def main(A: T.Buffer((4,), "int32"), n: T.int32):
        for i in range(n):
            A[i] = i
    """
    a = np.zeros(4, np.int32)
    run_source(source, A=a, n=4)
    with pytest.raises(DiagnosticError) as caught:
        run_source(source, A=a, n=5)
    diagnostic = caught.value.diagnostics[0]
    assert "index 4 is outside [0, 4)" in diagnostic.message and "store to A" in diagnostic.message
    assert diagnostic.span is not None and diagnostic.span.line == line_of(source, "A[i] = i")


def test_negative_index_is_out_of_bounds() -> None:
    source = """
    @T.prim_func
    def main(A: T.Buffer((4,), "int32"), n: T.int32):
        A[n] = 1
    """
    with pytest.raises(DiagnosticError, match="index -1 is outside"):
        run_source(source, A=np.zeros(4, np.int32), n=-1)


def test_symbolic_shape_takes_the_arguments_shape() -> None:
    source = """
    @T.prim_func
    def main(a: T.handle, b: T.handle):
        n = T.int32()
        A = T.match_buffer(a, (n,))
        B = T.match_buffer(b, (n,))
        for i in range(n):
            B[i] = A[i] * T.float32(2.0)
    """
    a = np.arange(5, dtype=np.float32)
    b = np.zeros(5, np.float32)
    run_source(source, a=a, b=b)
    np.testing.assert_array_equal(b, 2 * a)
    with pytest.raises(DiagnosticError, match="shape"):
        run_source(source, a=a, b=np.zeros(6, np.float32))


def test_arguments_are_checked() -> None:
    func = parse_function(OFF_BY_ONE)
    good = np.zeros((8, 8), np.float32)
    with pytest.raises(DiagnosticError, match="no argument given for B"):
        interp.run(func, {"A": good})
    with pytest.raises(DiagnosticError, match="unknown argument"):
        interp.run(func, {"A": good, "B": good, "C": good})
    with pytest.raises(DiagnosticError, match="dtype float64"):
        interp.run(func, {"A": good.astype(np.float64), "B": good})
    with pytest.raises(DiagnosticError, match="shape"):
        interp.run(func, {"A": np.zeros((8, 9), np.float32), "B": good})


def test_non_contiguous_arguments_are_written_back() -> None:
    source = """
    @T.prim_func
    def main(A: T.Buffer((4,), "float32")):
        for i in range(4):
            A[i] = A[i] + T.float32(1.0)
    """
    base = np.zeros(8, np.float32)
    view = base[::2]
    run_source(source, A=view)
    assert base.tolist() == [1, 0, 1, 0, 1, 0, 1, 0]


def test_fresh_allocations_are_zero() -> None:
    source = """
    @T.prim_func
    def main(B: T.Buffer((4,), "float32")):
        C = T.alloc_buffer((4,), "float32")
        for i in range(4):
            B[i] = C[i]
    """
    b = np.ones(4, np.float32)
    run_source(source, B=b)
    assert b.tolist() == [0, 0, 0, 0]


def test_an_index_into_one_element_is_still_checked() -> None:
    """Only index 0 passes the check of a dimension of extent 1, so the checked index's range
    was that one value: a constant, which folding put in the index's place, check and all
    (data[i * 3 + j] of a (1,) buffer read and wrote data[0]; TVM's hoist_if test programs)."""
    source = """
@T.prim_func(s_tir=True)
def main(data: T.Buffer((1,), "float32")):
    for i, j in T.grid(5, 10):
        if i >= 3:
            data[i * 3 + j] = data[i * 3 + j] + T.float32(0.5)
"""
    with pytest.raises(DiagnosticError) as caught:
        run_source(source, data=np.zeros(1, np.float32))
    assert caught.value.diagnostics[0].message == (
        "out-of-bounds load from data (shape (1,)): index 9 is outside [0, 1) in dimension 0"
    )
    in_bounds = source.replace("i * 3 + j", "i * 3 + j - i * 3 - j")
    data = np.zeros(1, np.float32)
    run_source(in_bounds, data=data)
    np.testing.assert_array_equal(data, [10.0])  # 2 values of i times 10 of j, + 0.5 each

"""Misaligned buffer pointers: a compiled function returns MISALIGNED (-2, docs/abi.md) rather
than fault on an aligned vector load; the JIT copies misaligned numpy arrays and gets the
right result. The cost of the check is measured by hand (the issue's note), not asserted."""

from __future__ import annotations

import ctypes
from pathlib import Path

import numpy as np

from tests.codegen.helpers import SAMPLES
from tirc.codegen.llvm.function import MISALIGNED
from tirc.driver.compile import compile_file
from tirc.driver.run_cpu import jit_function
from tirc.driver.schedule import apply_plan_file
from tirc.runtime.jit import aligned_copy
from tirc.text import parse

MATMUL = SAMPLES / "matmul.tir"
PLAN = SAMPLES / "matmul.cpu.plan.json"
N = 128


def offset_view(array: np.ndarray, offset: int) -> np.ndarray:
    """A dense copy of `array` that starts `offset` bytes past a 64-byte boundary."""
    raw = aligned_copy(np.zeros(array.nbytes + 64, np.uint8))
    view = raw[offset : offset + array.nbytes].view(array.dtype).reshape(array.shape)
    view[...] = array
    return view


def inputs() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    return (
        rng.standard_normal((N, N)).astype(np.float32),
        rng.standard_normal((N, N)).astype(np.float32),
    )


def test_misaligned_pointer_gets_the_status_from_a_shared_library(tmp_path: Path) -> None:
    library = tmp_path / "matmul.so"
    assert compile_file(str(MATMUL), plan=str(PLAN), emit="so", output=str(library)) == 0
    main = ctypes.CDLL(str(library)).main
    main.restype = ctypes.c_int32
    main.argtypes = [ctypes.c_void_p] * 3
    a, b = inputs()
    for offset in (16, 4):
        a_view, b_view = offset_view(a, offset), offset_view(b, 0)
        c_view = offset_view(np.full((N, N), 7, np.float32), 0)
        status = main(a_view.ctypes.data, b_view.ctypes.data, c_view.ctypes.data)
        assert status == MISALIGNED == -2
        assert (c_view == 7).all()  # nothing written
    a_view, b_view, c_view = (offset_view(x, 0) for x in (a, b, np.zeros((N, N), np.float32)))
    assert main(a_view.ctypes.data, b_view.ctypes.data, c_view.ctypes.data) == 0
    np.testing.assert_allclose(c_view, a @ b, rtol=1e-4, atol=1e-4)


def test_misaligned_views_through_the_jit_get_the_right_result() -> None:
    module, _ = apply_plan_file(parse(MATMUL.read_text(), name=str(MATMUL)), str(PLAN))
    call = jit_function(module, "main", "cpu")
    a, b = inputs()
    c = offset_view(np.zeros((N, N), np.float32), 16)
    assert call({"A": offset_view(a, 16), "B": offset_view(b, 4), "C": c}) == 0
    np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-4)

"""T.q_multiply_shift_per_axis in CUDA C: the per-channel requantization of quantized kernels
(meta-schedule's conv2d_int8 with constant scalars inlined) spelled through its helper, each
shift taken only where its flag says, and nvcc accepting it; both fixed-point multiplies in the
LLVM PTX path."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.codegen_cuda.helpers import nvcc_accepts, ptxas_accepts, require_tool
from tirc.codegen.cuda import emit_cuda
from tirc.codegen.nvptx import emit_ptx
from tirc.driver.lower import lower_module
from tirc.text import parse

KERNEL = """
@T.prim_func(s_tir=True)
def main(A: T.Buffer((64,), "int32"), B: T.Buffer((64,), "int32"), L: T.Buffer((64,), "int32"),
         R: T.Buffer((64,), "int32"), C: T.Buffer((64,), "int32")):
    for i in T.thread_binding(64, thread="threadIdx.x"):
        with T.sblock("C"):
            vi = T.axis.spatial(64, i)
            C[vi] = T.q_multiply_shift_per_axis(
                A[vi], B[vi], L[vi], R[vi], 31, T.bool(False), T.bool(True)
            )
"""


def _source() -> str:
    return emit_cuda(lower_module(parse(KERNEL, name="<kernel>"), target="cuda"))


def test_per_axis_multiply_is_spelled_with_its_helper() -> None:
    source = _source()
    assert "__device__ __forceinline__ T tirc_q_multiply_shift_per_axis(" in source
    assert "(int)31, (bool)false, (bool)true)" in source


def test_nvcc_accepts_the_per_axis_multiply(tmp_path: Path) -> None:
    complaint = nvcc_accepts(_source(), tmp_path)
    assert complaint == "", complaint


# T.q_multiply_shift with a shift the kernel reads: any left shift up to 63, so the product is
# computed in 256 bits
SHIFTED = """
@T.prim_func(s_tir=True)
def main(A: T.Buffer((64,), "int32"), B: T.Buffer((64,), "int32"), S: T.Buffer((64,), "int32"),
         C: T.Buffer((64,), "int32")):
    for i in T.thread_binding(64, thread="threadIdx.x"):
        with T.sblock("C"):
            vi = T.axis.spatial(64, i)
            C[vi] = T.q_multiply_shift(A[vi], B[vi], 31, S[vi])
"""


@pytest.mark.parametrize("source", [KERNEL, SHIFTED], ids=["per_axis", "dynamic_shift"])
def test_the_llvm_ptx_path_emits_them_and_ptxas_accepts_it(source: str, tmp_path: Path) -> None:
    """--ptx-via llvm emits both multiplies with the CPU backend's own lowering
    (codegen/llvm/fixed_point.py, checked against the interpreter in tests/codegen), in 128 or
    256 bits as the shifts need: the wide product is 64-bit multiplies (with the high half) in
    the PTX, which ptxas accepts."""
    require_tool("ptxas")
    ptx = emit_ptx(lower_module(parse(source, name="<kernel>"), target="cuda"), arch="sm_80")
    assert "mul.lo.s64" in ptx and "mul.hi." in ptx
    complaint = ptxas_accepts(ptx, tmp_path, arch="sm_80")
    assert complaint == "", complaint

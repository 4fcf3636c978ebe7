"""samples/gpu/matmul_fp16_tc: a float16 matmul tensorized onto wmma 16x16x16, at N=64.
Lowered for cuda it computes A x B in the interpreter's thread model; its CUDA C compiles with
nvcc and its PTX (through NVRTC, and through LLVM) assembles for sm_80 and sm_90."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests.codegen_cuda.helpers import GPU_SAMPLES, nvcc_accepts, ptxas_accepts
from tirc.codegen.cuda import emit_cuda
from tirc.codegen.nvptx import emit_ptx
from tirc.driver.cuda_toolchain import has_nvrtc, ptx_from_cuda
from tirc.driver.lower import lower_module
from tirc.driver.schedule import apply_plan_file
from tirc.interp import run
from tirc.ir.function import IRModule
from tirc.text import parse

SOURCE = GPU_SAMPLES / "matmul_fp16_tc.tir"
PLAN = GPU_SAMPLES / "matmul_fp16_tc.plan.json"


def lowered(n: int = 64) -> IRModule:
    module = parse(SOURCE.read_text(), name=str(SOURCE), defines={"N": str(n)})
    scheduled, _ = apply_plan_file(module, str(PLAN))
    return lower_module(scheduled, target="cuda")


def test_tensorized_sample_computes_the_product() -> None:
    rng = np.random.default_rng(1)
    a = rng.uniform(-1, 1, (64, 64)).astype(np.float16)
    b = rng.uniform(-1, 1, (64, 64)).astype(np.float16)
    args = {"A": a, "B": b, "C": np.full((64, 64), np.nan, np.float32)}
    module = lowered()
    run(module["main"], args, module=module)
    want = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(args["C"], want, rtol=1e-5, atol=1e-5)


def test_sample_uses_tensor_cores_and_shared_memory() -> None:
    text = emit_cuda(lowered())
    for piece in (
        "nvcuda::wmma::mma_sync(",
        "nvcuda::wmma::load_matrix_sync(",
        "nvcuda::wmma::store_matrix_sync(",
        "__shared__ __align__(16) half A_shared[512];",
        "(int)blockIdx.y",
        "(int)threadIdx.x",
    ):
        assert piece in text, piece


# nvcc on the same source for sm_80 repeats sm_90's check (several seconds each): slow
NVCC_ARCHS = [pytest.param("sm_80", marks=pytest.mark.slow), "sm_90"]


@pytest.mark.parametrize("arch", NVCC_ARCHS)
def test_sample_cuda_c_compiles(arch: str, tmp_path: Path) -> None:
    complaint = nvcc_accepts(emit_cuda(lowered()), tmp_path, arch=arch)
    assert not complaint, complaint


@pytest.mark.skipif(not has_nvrtc(), reason="cuda-python (NVRTC) is not installed")
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_sample_ptx_through_nvrtc_assembles(arch: str, tmp_path: Path) -> None:
    ptx = ptx_from_cuda(emit_cuda(lowered()), arch)
    assert "wmma.mma.sync.aligned" in ptx
    complaint = ptxas_accepts(ptx, tmp_path, arch=arch)
    assert not complaint, complaint


def test_llvm_path_emits_wmma(tmp_path: Path) -> None:
    ptx = emit_ptx(lowered(), arch="sm_90")
    assert "wmma.mma.sync.aligned.row.row.m16n16k16.f32.f32" in ptx
    complaint = ptxas_accepts(ptx, tmp_path, arch="sm_90")
    assert not complaint, complaint

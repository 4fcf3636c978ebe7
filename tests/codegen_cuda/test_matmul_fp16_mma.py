"""samples/gpu/matmul_fp16_mma: a float16 matmul tensorized onto ldmatrix + mma.sync m16n8k16
with the built-in intrinsics, operands in "warp" memory, at N=32. Lowered for cuda (where
lower-warp-memory turns the warp buffers into each lane's registers) it computes A x B in the
interpreter's thread model; its CUDA C compiles with nvcc and its PTX, from NVRTC and from
LLVM's NVPTX backend, assembles for sm_80 and sm_90."""

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
from tirc.ir import stmt as S
from tirc.ir.function import IRModule
from tirc.ir.functor import walk
from tirc.text import parse

SOURCE = GPU_SAMPLES / "matmul_fp16_mma.tir"
PLAN = GPU_SAMPLES / "matmul_fp16_mma.plan.json"
N = 32


def lowered(n: int = N) -> IRModule:
    module = parse(SOURCE.read_text(), name=str(SOURCE), defines={"N": str(n)})
    scheduled, _ = apply_plan_file(module, str(PLAN))
    return lower_module(scheduled, target="cuda")


def test_tensorized_sample_computes_the_product() -> None:
    rng = np.random.default_rng(1)
    a = rng.uniform(-1, 1, (N, N)).astype(np.float16)
    b = rng.uniform(-1, 1, (N, N)).astype(np.float16)
    args = {"A": a, "B": b, "C": np.full((N, N), np.nan, np.float32)}
    module = lowered()
    run(module["main"], args, module=module)
    want = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(args["C"], want, rtol=1e-5, atol=1e-5)


def test_warp_buffers_become_eight_registers_a_lane() -> None:
    scopes: dict[str, tuple[str, int]] = {}

    def look(node: object) -> None:
        if isinstance(node, S.AllocBuffer) and node.buffer.name.endswith("_warp"):
            (size,) = node.buffer.shape
            scopes[node.buffer.name] = (node.buffer.scope, size.value)  # type: ignore[attr-defined]

    walk(lowered(), look)  # the kernel's allocations
    assert scopes == {name: ("local", 8) for name in ("C_warp", "A_shared_warp", "B_shared_warp")}


def test_sample_uses_ldmatrix_and_mma() -> None:
    text = emit_cuda(lowered())
    for piece in (
        "ldmatrix.sync.aligned.m8n8.x4.shared.b16",
        "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16",
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32",
        "float C_warp[8];",
        "half A_shared_warp[8];",
    ):
        assert piece in text, piece


# nvcc on the same source for sm_80 repeats sm_90's check (several seconds each): slow
NVCC_ARCHS = [pytest.param("sm_80", marks=pytest.mark.slow), "sm_90"]


@pytest.mark.parametrize("arch", NVCC_ARCHS)
def test_sample_cuda_c_compiles(arch: str, tmp_path: Path) -> None:
    complaint = nvcc_accepts(emit_cuda(lowered()), tmp_path, arch=arch)
    assert not complaint, complaint


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_sample_nvptx_assembles(arch: str, tmp_path: Path) -> None:
    ptx = emit_ptx(lowered(), arch=arch)
    assert "mma.sync.aligned.m16n8k16" in ptx
    complaint = ptxas_accepts(ptx, tmp_path, arch=arch)
    assert not complaint, complaint


@pytest.mark.skipif(not has_nvrtc(), reason="cuda-python (NVRTC) is not installed")
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_sample_ptx_through_nvrtc_assembles(arch: str, tmp_path: Path) -> None:
    ptx = ptx_from_cuda(emit_cuda(lowered()), arch)
    assert "mma.sync.aligned.m16n8k16" in ptx
    complaint = ptxas_accepts(ptx, tmp_path, arch=arch)
    assert not complaint, complaint

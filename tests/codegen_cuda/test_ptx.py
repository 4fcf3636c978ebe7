"""Warp-level tensor-core PTX (mma.sync, ldmatrix, cp.async, mma_fill/mma_store): what the
interpreter computes lane by lane against numpy, the CUDA C and LLVM spellings, and both
backends' output through NVIDIA's tools (sm_80 and sm_90)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests.codegen_cuda.helpers import nvcc_accepts, ptxas_accepts
from tirc.codegen.cuda import emit_cuda
from tirc.codegen.nvptx import emit_ptx
from tirc.diagnostics import DiagnosticError
from tirc.driver.cuda_toolchain import has_nvrtc, ptx_from_cuda
from tirc.driver.lower import lower_module
from tirc.interp import run
from tirc.ir.function import IRModule
from tirc.text import parse

KERNELS = Path(__file__).parent / "kernels"
NAMES = ("mma_f16f32", "mma_f16f16_trans", "mma_s8s32")


def kernel(name: str) -> IRModule:
    path = KERNELS / f"{name}.tir"
    return parse(path.read_text(), name=str(path))


def inputs(name: str, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    if name == "mma_f16f32":
        return {
            "A": rng.uniform(-2, 2, (16, 16)).astype(np.float16),
            "B": rng.uniform(-2, 2, (16, 8)).astype(np.float16),
            "C": np.full((16, 8), 7, np.float32),  # mma_fill must clear the accumulator
        }
    if name == "mma_f16f16_trans":
        return {
            "A": rng.uniform(-1, 1, (16, 16)).astype(np.float16),
            "B": rng.uniform(-1, 1, (16, 16)).astype(np.float16),
            "C": np.zeros((16, 16), np.float16),
        }
    return {
        "A": rng.integers(-128, 128, (16, 32)).astype(np.int8),
        "B": rng.integers(-128, 128, (32, 8)).astype(np.int8),
        "C": rng.integers(-1000, 1000, (16, 8)).astype(np.int32),
    }


def expected(name: str, args: dict[str, np.ndarray]) -> np.ndarray:
    a, b = args["A"], args["B"]
    if name == "mma_s8s32":
        return a.astype(np.int64) @ b.astype(np.int64) + args["C"]
    return a.astype(np.float64) @ b.astype(np.float64)


@pytest.mark.parametrize("name", NAMES)
def test_interpreter_lanes_compute_the_product(name: str) -> None:
    module = kernel(name)
    args = inputs(name)
    want = expected(name, args)
    run(module["main"], args, module=module)
    if name == "mma_s8s32":
        np.testing.assert_array_equal(args["C"], want)
    elif name == "mma_f16f16_trans":  # one rounding to float16 at the end
        np.testing.assert_allclose(args["C"].astype(np.float64), want, rtol=1e-3, atol=2e-3)
    else:
        np.testing.assert_allclose(args["C"], want, rtol=1e-6, atol=1e-5)


def test_cuda_c_spells_the_ptx_instructions() -> None:
    text = emit_cuda(lower_module(kernel("mma_f16f32"), target="cuda"))
    assert (
        'asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, '
        '{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\\n" : '
        '"+f"(((float*)((float*)(AC) + (0)))[0])'
    ) in text
    assert (
        'asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\\n"' in text
    )
    assert (
        '"r"(((unsigned)__cvta_generic_to_shared(SA) + '
        "(unsigned)(tx % 16 * 16) * 2u + (unsigned)(tx / 16 * 8) * 2u))"
    ) in text
    assert 'asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\\n"' in text
    assert 'asm volatile("cp.async.commit_group;\\n" ::);' in text
    assert 'asm volatile("cp.async.wait_group 0;\\n" ::);' in text
    assert "tirc_mma_fill((float*)(AC) + (0), 4);" in text
    trans = emit_cuda(lower_module(kernel("mma_f16f16_trans"), target="cuda"))
    assert "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16" in trans
    assert "mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16 {%0, %1}, {%2, %3, %4, %5}" in trans
    assert "tirc_mma_store((half*)(C), (half*)(AC) + (0), 2, 16);" in trans
    assert "__device__ __forceinline__ void tirc_mma_store" in trans
    s8 = emit_cuda(lower_module(kernel("mma_s8s32"), target="cuda"))
    assert "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32" in s8


def test_llvm_spells_the_ptx_instructions() -> None:
    ptx = emit_ptx(lower_module(kernel("mma_f16f32"), target="cuda"), arch="sm_80")
    assert "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {" in ptx
    assert "ldmatrix.sync.aligned.m8n8.x4.shared.b16 {" in ptx
    assert "cp.async.cg.shared.global [" in ptx
    assert "cp.async.wait_group 0;" in ptx


# nvcc on the same source for sm_80 repeats sm_90's check (several seconds each): slow
NVCC_ARCHS = [pytest.param("sm_80", marks=pytest.mark.slow), "sm_90"]


@pytest.mark.parametrize("arch", NVCC_ARCHS)
@pytest.mark.parametrize("name", NAMES)
def test_cuda_c_compiles(name: str, arch: str, tmp_path: Path) -> None:
    text = emit_cuda(lower_module(kernel(name), target="cuda"))
    complaint = nvcc_accepts(text, tmp_path, arch=arch)
    assert not complaint, complaint


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.parametrize("name", NAMES)
def test_ptx_through_llvm_assembles(name: str, arch: str, tmp_path: Path) -> None:
    ptx = emit_ptx(lower_module(kernel(name), target="cuda"), arch=arch)
    complaint = ptxas_accepts(ptx, tmp_path, arch=arch)
    assert not complaint, complaint


@pytest.mark.skipif(not has_nvrtc(), reason="cuda-python (NVRTC) is not installed")
@pytest.mark.parametrize("name", NAMES)
def test_ptx_through_nvrtc_assembles(name: str, tmp_path: Path) -> None:
    text = emit_cuda(lower_module(kernel(name), target="cuda"))
    complaint = ptxas_accepts(ptx_from_cuda(text, "sm_80"), tmp_path, arch="sm_80")
    assert not complaint, complaint


# -- what is rejected, and where --------------------------------------------------------------


def _with(name: str, old: str, new: str) -> IRModule:
    text = (KERNELS / f"{name}.tir").read_text()
    assert old in text
    return parse(text.replace(old, new), name=f"{name}.tir")


def test_unsupported_mma_shape_is_a_located_error() -> None:
    module = _with("mma_f16f32", '"m16n8k16", "row"', '"m8n8k4", "row"')
    lowered = lower_module(module, target="cuda")
    for emit in (emit_cuda, lambda m: emit_ptx(m, arch="sm_80")):
        with pytest.raises(DiagnosticError, match="m8n8k4 with fp16 x fp16 -> fp32 is not supp"):
            emit(lowered)
    with pytest.raises(DiagnosticError, match="is not supported") as error:
        run(module["main"], inputs("mma_f16f32"), module=module)
    assert error.value.diagnostics[0].span is not None


def test_mma_layouts_other_than_row_col_are_rejected() -> None:
    module = _with("mma_f16f32", '"row", "col"', '"col", "col"')
    with pytest.raises(DiagnosticError, match="A must be 'row' and B 'col'"):
        emit_cuda(lower_module(module, target="cuda"))


def test_cp_async_size_is_checked() -> None:
    module = _with("mma_f16f32", "A.data, tx * 8, 16)", "A.data, tx * 8, 12)")
    with pytest.raises(DiagnosticError, match="copies 4, 8 or 16 bytes"):
        emit_cuda(lower_module(module, target="cuda"))
    with pytest.raises(DiagnosticError, match="copies 4, 8 or 16 bytes"):
        run(module["main"], inputs("mma_f16f32"), module=module)


def test_a_warp_instruction_needs_the_whole_warp() -> None:
    module = _with(
        "mma_f16f32", 'T.launch_thread("threadIdx.x", 32)', 'T.launch_thread("threadIdx.x", 16)'
    )
    with pytest.raises(DiagnosticError) as error:
        run(module["main"], inputs("mma_f16f32"), module=module)
    message = str(error.value)
    assert "ldmatrix is executed by 16 lanes of a warp; it needs all 32" in message
    assert "mma_f16f32.tir:17:5" in message  # the T.ptx_ldmatrix line


def test_a_warp_instruction_outside_a_kernel_is_rejected() -> None:
    text = """# from tvm.script import tirx as T

@T.prim_func
def main(A: T.Buffer((8,), "float16")):
    T.ptx_ldmatrix("float16", T.bool(False), 4, ".b16", A.data, 0, A.data, 0)
"""
    module = parse(text, name="outside.tir")
    with pytest.raises(DiagnosticError, match="warp instruction: it runs only inside a GPU kernel"):
        run(module["main"], {"A": np.zeros(8, np.float16)}, module=module)

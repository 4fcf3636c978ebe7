"""Hopper's warpgroup MMA (wgmma, sm_90a): the accumulator and shared-memory layouts against
small cases worked by hand from the PTX ISA's definitions, what the interpreter computes
thread by thread against numpy (no swizzle and 128-byte swizzle, K-major A and MN-major B),
the CUDA C and LLVM spellings, nvcc/ptxas for sm_90a, and the located refusals elsewhere."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from tirc.codegen.cuda import emit_cuda
from tirc.diagnostics import DiagnosticError
from tirc.driver.compile_cuda import cuda_artifact
from tirc.driver.lower import lower_module
from tirc.driver.schedule import apply_plan_file
from tirc.interp import run
from tirc.ir.function import IRModule
from tirc.ir.wgmma import accumulator_position, descriptor, operand_byte, swizzle
from tirc.text import parse

KERNELS = Path(__file__).parent / "kernels"
SAMPLES = Path(__file__).parents[2] / "samples" / "gpu"


def kernel(name: str) -> IRModule:
    path = KERNELS / f"{name}.tir"
    return lower_module(parse(path.read_text(), name=str(path)), target="cuda")


def sample(defines: dict[str, str], name: str = "gemm_wgmma") -> IRModule:
    path = SAMPLES / f"{name}.tir"
    module = parse(path.read_text(), name=str(path), defines=defines)
    scheduled, _ = apply_plan_file(module, str(SAMPLES / f"{name}.plan.json"))
    return lower_module(scheduled, target="cuda")


def test_accumulator_layout_by_hand() -> None:
    # warp w holds rows 16w..16w+15; lane l: row l / 4 (+8 for registers 2, 3 of each 4),
    # columns 2 (l % 4) and 2 (l % 4) + 1 of each 8-column slice
    assert [accumulator_position(0, i) for i in range(5)] == [
        (0, 0),
        (0, 1),
        (8, 0),
        (8, 1),
        (0, 8),
    ]
    assert accumulator_position(5, 0) == (1, 2)
    assert accumulator_position(37, 3) == (25, 3)
    assert accumulator_position(127, 63) == (63, 127)  # m64n128's last element
    held = {accumulator_position(t, i) for t in range(128) for i in range(8)}
    assert held == {(r, c) for r in range(64) for c in range(16)}  # m64n16: each once


def test_shared_layouts_by_hand() -> None:
    # K-major, no swizzle: 8x8 core matrices of 16-byte rows, LBO along k, SBO along m
    assert operand_byte(9, 10, lbo=128, sbo=512, width=0, mn_major=False) == 16 + 512 + 4 + 128
    # MN-major, no swizzle: a core matrix is 8 k-rows of 8 contiguous mn; SBO along mn
    assert operand_byte(10, 9, lbo=256, sbo=128, width=0, mn_major=True) == 4 + 128 + 16 + 256
    # 128-byte rows: K-major row m is 128 bytes, atoms of 8 rows SBO apart
    assert operand_byte(9, 5, lbo=16, sbo=1024, width=128, mn_major=False) == 128 + 1024 + 10
    assert operand_byte(5, 9, lbo=16, sbo=1024, width=128, mn_major=True) == 10 + 128 + 1024
    # the 128-byte swizzle: 16-byte chunk j of row r (within an 8-row atom) moves to j ^ r
    assert swizzle(0x80, 128) == 0x90  # row 1, chunk 0 -> chunk 1
    assert swizzle(7 * 128 + 7 * 16 + 6, 128) == 7 * 128 + 6  # row 7, chunk 7 -> chunk 0
    assert swizzle(1024 + 3 * 128 + 16, 128) == 1024 + 3 * 128 + 2 * 16  # next atom, same
    assert swizzle(0x90, 0) == 0x90
    # descriptor: start >> 4 in bits 0-13, LBO >> 4 in 16-29, SBO >> 4 in 32-45, mode 62-63
    assert descriptor(0x400, 128, 1024, 128) == 0x40 | 8 << 16 | 64 << 32 | 1 << 62


@pytest.mark.parametrize(
    ("name", "k", "n"), [("wgmma_f16f32", 32, 16), ("wgmma_swizzle128", 64, 64)]
)
def test_interpreter_computes_the_product(name: str, k: int, n: int) -> None:
    rng = np.random.default_rng(1)
    a = rng.uniform(-2, 2, (64, k)).astype(np.float16)
    b = rng.uniform(-2, 2, (k, n)).astype(np.float16)
    c = np.full((64, n), 5, np.float32)
    module = kernel(name)
    run(module["main"], {"A": a, "B": b, "C": c}, module=module)
    want = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(c, want, rtol=1e-6, atol=1e-5)


@pytest.mark.parametrize(
    ("name", "m", "n", "k"),
    [  # one block tile, two k stages each
        ("gemm_wgmma", 64, 128, 128),
        ("gemm_wgmma_tensorize", 64, 128, 128),
        ("gemm_wgmma_tensorize_bf16", 64, 256, 64),  # bfloat16, m64n256k16
        pytest.param("gemm_wgmma_128x256", 128, 256, 64, marks=pytest.mark.slow),  # 12 s
        pytest.param("gemm_wgmma_128x256_s3", 128, 256, 192, marks=pytest.mark.sweep),  # 27 s
    ],
)
def test_sample_matches_numpy_in_the_interpreter(name: str, m: int, n: int, k: int) -> None:
    module = sample({"M": str(m), "N": str(n), "K": str(k)}, name)
    rng = np.random.default_rng(2)
    element = ml_dtypes.bfloat16 if name.endswith("_bf16") else np.float16
    a = rng.uniform(-1, 1, (m, k)).astype(element)
    b = rng.uniform(-1, 1, (k, n)).astype(element)
    c = np.zeros((m, n), np.float32)
    run(module["main"], {"A": a, "B": b, "C": c}, module=module)
    np.testing.assert_allclose(c, a.astype(np.float64) @ b.astype(np.float64), atol=1e-5)


@pytest.mark.parametrize(
    ("name", "m", "n", "k"),
    [
        ("gemm_wgmma", 64, 128, 128),
        pytest.param("gemm_wgmma_128x256", 128, 256, 64, marks=pytest.mark.slow),  # 12 s
        pytest.param("gemm_wgmma_128x256_s3", 128, 256, 192, marks=pytest.mark.sweep),  # 37 s
    ],
)
def test_sample_as_written_is_race_free(name: str, m: int, n: int, k: int) -> None:
    """The hand-written samples as `tirc run --check` reads them, before lowering (whose
    thread-sync would add the barriers they lack): the thread model checks every shared
    access. Without their barriers, one thread's cp.async refilled a stage another thread's
    wgmma was still reading (found by `tirc run --check` on an H200)."""
    path = SAMPLES / f"{name}.tir"
    module = parse(
        path.read_text(), name=str(path), defines={"M": str(m), "N": str(n), "K": str(k)}
    )
    rng = np.random.default_rng(4)
    a = rng.uniform(-1, 1, (m, k)).astype(np.float16)
    b = rng.uniform(-1, 1, (k, n)).astype(np.float16)
    c = np.zeros((m, n), np.float32)
    run(module["main"], {"A": a, "B": b, "C": c}, module=module, gpu_model="threads")
    np.testing.assert_allclose(c, a.astype(np.float64) @ b.astype(np.float64), atol=1e-5)


def test_cuda_c_spells_the_instructions() -> None:
    text = emit_cuda(kernel("wgmma_f16f32"))
    assert (
        'asm volatile("{\\n.reg .pred p;\\nsetp.ne.b32 p, %10, 0;\\n'
        "wgmma.mma_async.sync.aligned.m64n16k16.f32.f16.f16 {%0, %1, %2, %3, %4, %5, %6, %7}, "
        '%8, %9, p, 1, 1, 0, 1;\\n}\\n" : "+f"(((float*)(AC) + (0))[0])'
    ) in text
    assert "((unsigned long long)((512) & 0x3FFFF) >> 4) << 32 | 0ULL << 62" in text
    assert 'asm volatile("fence.proxy.async.shared::cta;\\n" ::: "memory");' in text
    assert 'asm volatile("wgmma.fence.sync.aligned;\\n" ::: "memory");' in text
    assert 'asm volatile("wgmma.commit_group.sync.aligned;\\n" ::: "memory");' in text
    assert 'asm volatile("wgmma.wait_group.sync.aligned 0;\\n" ::: "memory");' in text
    assert "1ULL << 62" in emit_cuda(kernel("wgmma_swizzle128"))


def test_thread_sync_counts_wgmma_as_a_read() -> None:
    # one barrier between the copies into shared memory and the first wgmma, none in its loop
    text = emit_cuda(kernel("wgmma_f16f32"))
    assert text.count("__syncthreads();") == 1
    assert text.index("__syncthreads();") < text.index("wgmma.mma_async")


def _nvcc(directory: Path, *flags: str) -> subprocess.CompletedProcess[str]:
    """nvcc -arch=sm_90a on directory/k.cu (-cubin, not -c: -c also makes compute_90 PTX,
    which has no wgmma)."""
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        pytest.skip("nvcc is not installed")
    source, output = directory / "k.cu", directory / "k.out"
    command = [nvcc, "-arch=sm_90a", *flags, str(source), "-o", str(output)]
    return subprocess.run(command, capture_output=True, text=True)


@pytest.mark.parametrize(
    "name",
    [
        "wgmma_f16f32",
        "wgmma_swizzle128",
        "gemm_wgmma",
        "gemm_wgmma_128x256",
        "gemm_wgmma_128x256_s3",
        "gemm_wgmma_tensorize",
        "gemm_wgmma_tensorize_bf16",  # 128 accumulators a thread: 166 registers at 4096^3
    ],
)
def test_nvcc_and_ptxas_accept_it_for_sm_90a(name: str, tmp_path: Path) -> None:
    shape = {"M": "128", "N": "256", "K": "128"}
    module = sample(shape, name) if name.startswith("gemm") else kernel(name)
    (tmp_path / "k.cu").write_text(str(cuda_artifact(module, "cu", arch="sm_90a")))
    done = _nvcc(tmp_path, "-cubin", "-Xptxas", "-v")
    assert done.returncode == 0, done.stderr
    assert "0 bytes spill stores, 0 bytes spill loads" in done.stderr


def test_ptx_targets_sm_90a(tmp_path: Path) -> None:
    (tmp_path / "k.cu").write_text(emit_cuda(kernel("wgmma_f16f32")))
    assert _nvcc(tmp_path, "-ptx").returncode == 0
    ptx = (tmp_path / "k.out").read_text()
    assert ".target sm_90a" in ptx
    assert "wgmma.mma_async.sync.aligned.m64n16k16.f32.f16.f16" in ptx


@pytest.mark.parametrize(
    ("arch", "where", "message"),
    [
        ("sm_80", "19:5", "T.ptx_fence_proxy_async needs sm_90 or later"),  # sm_90's fence
        ("sm_90", "20:5", "T.ptx_wgmma_fence needs sm_90a (Hopper's wgmma)"),
    ],
)
def test_other_arches_are_refused_at_the_call(arch: str, where: str, message: str) -> None:
    with pytest.raises(DiagnosticError) as error:
        cuda_artifact(kernel("wgmma_f16f32"), "cu", arch=arch)
    text = str(error.value)
    assert (
        f"wgmma_f16f32.tir:{where}: error: {message}, but the target architecture is {arch}" in text
    )


@pytest.mark.parametrize("name", ["wgmma_f16f32", "wgmma_swizzle128", "gemm_wgmma"])
def test_llvm_path_spells_them_and_ptxas_accepts(name: str, tmp_path: Path) -> None:
    shape = {"M": "128", "N": "256", "K": "128"}
    module = sample(shape, name) if name.startswith("gemm") else kernel(name)
    ptx = str(cuda_artifact(module, "ptx", arch="sm_90a", ptx_via="llvm"))
    assert ".target sm_90a" in ptx
    assert "wgmma.fence.sync.aligned;" in ptx
    assert "fence.proxy.async.shared::cta;" in ptx
    assert "wgmma.commit_group.sync.aligned;" in ptx
    assert "wgmma.wait_group.sync.aligned 0;" in ptx
    assert "p, 1, 1, 0, 1; }" in ptx  # scale-d, scale-a, scale-b, K-major A, MN-major B
    ptxas = shutil.which("ptxas")
    if ptxas is None:
        pytest.skip("ptxas is not installed")
    (tmp_path / "k.ptx").write_text(ptx)
    command = [ptxas, "-arch=sm_90a", str(tmp_path / "k.ptx"), "-o", str(tmp_path / "k.cubin")]
    done = subprocess.run(command, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ('"m64n16k16"', "shape 'm64n12k16' is not m64nNk16 with N in 8..256 by 8"),
        ('"fp16", "fp16", "fp32"', "multiplies f16 or bf16 (both alike) into f32"),
        ("512, 0, 0", "the swizzle must be a constant 0, 32, 64 or 128"),
    ],
)
def test_bad_arguments_are_located(change: str, message: str) -> None:
    path = KERNELS / "wgmma_f16f32.tir"
    replacement = {
        '"m64n16k16"': '"m64n12k16"',
        '"fp16", "fp16", "fp32"': '"fp16", "bf16", "fp32"',
        "512, 0, 0": "512, 16, 0",
    }[change]
    text = path.read_text().replace(change, replacement, 1)
    module = lower_module(parse(text, name=str(path)), target="cuda")
    with pytest.raises(DiagnosticError) as error:
        emit_cuda(module)
    assert message in str(error.value)
    assert "wgmma_f16f32.tir:22:9" in str(error.value)


@pytest.mark.parametrize(
    ("name", "shape"),
    [
        ("gemm_wgmma", "m64n128k16"),
        ("gemm_wgmma_128x256", "m64n256k16"),
        ("gemm_wgmma_128x256_s3", "m64n256k16"),
        ("gemm_wgmma_tensorize", "m64n128k16"),
    ],
)
def test_samples_lower_at_the_benchmark_sizes(name: str, shape: str) -> None:
    for size in ("4096", "8192"):
        module = sample({"M": size, "N": size, "K": size}, name)
        text = str(cuda_artifact(module, "cu", arch="sm_90a"))
        assert f"wgmma.mma_async.sync.aligned.{shape}.f32.f16.f16" in text


def test_tensorize_keeps_the_accumulators_in_registers() -> None:
    """gemm_wgmma_tensorize's plan: the wgmma, fill and store intrinsics of cuda_wgmma.tir
    replace the blocks, the k loop is a 2-stage cp.async pipeline, the descriptors' LBO and
    SBO come from the transformed shared buffers' strides, and the (128, 64) warpgroup
    buffer becomes 64 floats a thread."""
    text = emit_cuda(sample({"M": "64", "N": "128", "K": "128"}, "gemm_wgmma_tensorize"))
    assert "float C_warp[64];" in text
    # software-pipelined: the loop's wgmma and the epilogue's, the copies a stage ahead
    assert text.count("wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16") == 2
    # the loop waits for the tile it reads before it issues the next tile's copies
    assert 'asm volatile("cp.async.wait_group 0;\\n" ::);' in text
    assert "cp.async.wait_group 1" not in text
    assert "((unsigned long long)((128) & 0x3FFFF) >> 4) << 16" in text  # A: LBO 128
    assert "((unsigned long long)((256) & 0x3FFFF) >> 4) << 32" in text  # A: SBO 256
    assert "((unsigned long long)((2048) & 0x3FFFF) >> 4) << 16" in text  # B: LBO 2048
    assert "tvm_warp_shuffle" not in text and "__shfl" not in text


WARPGROUP_SHUFFLE = """
@T.prim_func
def main(A: T.Buffer((128,), "float32")):
    tx = T.launch_thread("threadIdx.x", 128)
    W = T.alloc_buffer((128,), "float32", scope="warp")
    W[tx] = A[tx]
    A[tx] = W[(tx + 1) % 128]
"""


def test_warpgroup_registers_of_another_thread_are_refused() -> None:
    with pytest.raises(DiagnosticError) as error:
        lower_module(parse(WARPGROUP_SHUFFLE, name="shuffle.tir"), target="cuda")
    text = str(error.value)
    assert "shuffle.tir:7:" in text
    assert "reads warpgroup memory 'W' of another thread" in text


def test_bfloat16_operands(tmp_path: Path) -> None:
    """The same kernel on bfloat16 A and B: the interpreter's product, and nvcc for sm_90a."""
    path = KERNELS / "wgmma_f16f32.tir"
    text = path.read_text().replace('"float16"', '"bfloat16"')
    text = text.replace('"fp16", "fp16"', '"bf16", "bf16"')
    module = lower_module(parse(text, name=str(path)), target="cuda")
    rng = np.random.default_rng(4)
    a = rng.uniform(-2, 2, (64, 32)).astype(ml_dtypes.bfloat16)
    b = rng.uniform(-2, 2, (32, 16)).astype(ml_dtypes.bfloat16)
    c = np.zeros((64, 16), np.float32)
    run(module["main"], {"A": a, "B": b, "C": c}, module=module)
    np.testing.assert_allclose(c, a.astype(np.float64) @ b.astype(np.float64), atol=1e-5)
    source = emit_cuda(module)
    assert "wgmma.mma_async.sync.aligned.m64n16k16.f32.bf16.bf16" in source
    (tmp_path / "k.cu").write_text(source)
    done = _nvcc(tmp_path, "-cubin")
    assert done.returncode == 0, done.stderr


def test_accumulators_land_at_the_wait() -> None:
    """Stored before wgmma.wait_group, the accumulators still hold what they held before the
    wgmmas (7.0 here), as on a GPU; after the wait, the product (the first test)."""
    path = KERNELS / "wgmma_f16f32.tir"
    text = path.read_text().replace("    T.ptx_wgmma_wait_group(0)\n", "")
    text += "    T.ptx_wgmma_wait_group(0)\n"
    module = lower_module(parse(text, name=str(path)), target="cuda")
    c = np.zeros((64, 16), np.float32)
    a, b = np.ones((64, 32), np.float16), np.ones((32, 16), np.float16)
    run(module["main"], {"A": a, "B": b, "C": c}, module=module)
    np.testing.assert_array_equal(c, np.full((64, 16), 7, np.float32))

"""Warp specialization on Hopper: `T.ptx_setmaxnreg` (sm_90a) in CUDA C and through LLVM, its
operands checked where the call is, and samples/gpu/gemm_wgmma_ws.tir (a TMA producer
warpgroup that gives up registers, two wgmma consumer warpgroups that take them, `full` and
`empty` mbarriers between them): the interpreter's product against numpy, and nvcc/ptxas for
sm_90a."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from tirc.driver.compile_cuda import cuda_artifact
from tirc.driver.lower import lower_module
from tirc.interp import run
from tirc.ir.function import IRModule
from tirc.text import parse

SAMPLE = Path(__file__).parents[2] / "samples" / "gpu" / "gemm_wgmma_ws.tir"

ROLES = """\
@T.prim_func
def main(A: T.Buffer((256,), "float32")):
    tx = T.launch_thread("threadIdx.x", 256)
    if tx < 128:
        T.ptx_setmaxnreg("dec", 40)
        A[tx] = T.float32(1.0)
    else:
        T.ptx_setmaxnreg("inc", 232)
        A[tx] = T.float32(2.0)
"""


def roles(text: str = ROLES) -> IRModule:
    return lower_module(parse(text, name="roles.tir"), target="cuda -arch=sm_90a")


def _assemble(ptx: str, directory: Path) -> subprocess.CompletedProcess[str]:
    ptxas = shutil.which("ptxas")
    if ptxas is None:
        pytest.skip("ptxas is not installed")
    (directory / "k.ptx").write_text(ptx)
    command = [ptxas, "-arch=sm_90a", str(directory / "k.ptx"), "-o", str(directory / "k.cubin")]
    return subprocess.run(command, capture_output=True, text=True)


def _nvcc_cubin(source: str, directory: Path) -> subprocess.CompletedProcess[str]:
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        pytest.skip("nvcc is not installed")
    (directory / "k.cu").write_text(source)
    command = [nvcc, "-arch=sm_90a", "-cubin", "-Xptxas", "-v", str(directory / "k.cu")]
    return subprocess.run(
        command + ["-o", str(directory / "k.cubin")], capture_output=True, text=True
    )


def test_cuda_c_spells_setmaxnreg_and_nvcc_accepts_it(tmp_path: Path) -> None:
    source = str(cuda_artifact(roles(), "cu", arch="sm_90a"))
    assert 'asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\\n" ::: "memory");' in source
    assert 'asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\\n" ::: "memory");' in source
    # one block an SM fixes the registers a thread starts with; without it ptxas ignores
    # setmaxnreg ("C7508 ... unable to determine register count at entry")
    assert "__launch_bounds__(256, 1)" in source
    done = _nvcc_cubin(source, tmp_path)
    assert done.returncode == 0, done.stderr
    assert "C7508" not in done.stdout + done.stderr


def test_llvm_path_spells_setmaxnreg_and_ptxas_accepts_it(tmp_path: Path) -> None:
    ptx = str(cuda_artifact(roles(), "ptx", arch="sm_90a", ptx_via="llvm"))
    assert "setmaxnreg.dec.sync.aligned.u32 40;" in ptx
    assert "setmaxnreg.inc.sync.aligned.u32 232;" in ptx
    done = _assemble(ptx, tmp_path)
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_other_arches_are_refused_at_the_call(arch: str) -> None:
    from tirc.diagnostics import DiagnosticError

    with pytest.raises(DiagnosticError) as error:
        cuda_artifact(roles(), "cu", arch=arch)
    assert (
        f"roles.tir:5:9: error: T.ptx_setmaxnreg needs sm_90a (Hopper's setmaxnreg), but the "
        f"target architecture is {arch}" in str(error.value)
    )


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ('"dec", 40', '"up", 40'),
        ('"dec", 40', '"dec", 16'),
        ('"dec", 40', '"dec", 44'),
        ('"inc", 232', '"inc", 264'),
    ],
)
def test_bad_operands_are_located_in_the_backends_and_the_interpreter(
    change: str, message: str
) -> None:
    from tirc.diagnostics import DiagnosticError

    module = roles(ROLES.replace(change, message))
    expected = (
        'the first argument must be "inc" or "dec"'
        if '"up"' in message
        else "the register count must be a constant multiple of 8 in [24, 256]"
    )
    for attempt in (
        lambda: cuda_artifact(module, "cu", arch="sm_90a"),
        lambda: cuda_artifact(module, "ptx", arch="sm_90a", ptx_via="llvm"),
        lambda: run(module["main"], {"A": np.zeros(256, "float32")}, module=module),
    ):
        with pytest.raises(DiagnosticError) as error:
            attempt()
        assert f"T.ptx_setmaxnreg: {expected}" in str(error.value)
        assert "roles.tir:5:9" in str(error.value) or "roles.tir:8:9" in str(error.value)


def test_the_interpreter_runs_both_roles() -> None:
    module = roles()
    a = np.zeros(256, "float32")
    run(module["main"], {"A": a}, module=module)
    np.testing.assert_array_equal(a, np.repeat(np.float32([1, 2]), 128))


def _ws(m: int = 128, n: int = 256, k: int = 192, stages: int = 2) -> IRModule:
    defines = {"M": str(m), "N": str(n), "K": str(k), "STAGES": str(stages)}
    return parse(SAMPLE.read_text(), name=str(SAMPLE), defines=defines)


@pytest.mark.sweep  # about 40 s: 384 threads, 24 wgmma m64n256k16 a consumer thread
def test_warp_specialized_gemm_matches_numpy_as_written() -> None:
    # K = 192 in 2 stages: the producer refills stage 0 for k tile 2 only after both
    # consumers' 256 threads released it (the empty barrier's first phase)
    module = _ws()
    rng = np.random.default_rng(5)
    a = rng.standard_normal((128, 192)).astype("float16")
    b = rng.standard_normal((192, 256)).astype("float16")
    c = np.zeros((128, 256), "float32")
    run(module["main"], {"A": a, "B": b, "C": c}, module=module, gpu_model="threads")
    want = a.astype("float32") @ b.astype("float32")
    np.testing.assert_allclose(c, want, rtol=1e-5, atol=1e-4)


def test_warp_specialized_gemm_assembles_without_spills(tmp_path: Path) -> None:
    lowered = lower_module(_ws(4096, 4096, 4096, 4), target="cuda -arch=sm_90a", for_backend=True)
    source = str(cuda_artifact(lowered, "cu", arch="sm_90a"))
    assert "__launch_bounds__(384, 1)" in source
    assert "setmaxnreg.dec.sync.aligned.u32 40;" in source
    assert "setmaxnreg.inc.sync.aligned.u32 232;" in source
    assert "wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16" in source
    done = _nvcc_cubin(source, tmp_path)
    assert done.returncode == 0, done.stderr
    assert "0 bytes spill stores, 0 bytes spill loads" in done.stderr


@pytest.mark.slow  # about 20 s, as above
def test_one_arrival_per_consumer_warpgroup_is_a_race() -> None:
    """Were one thread per consumer warpgroup to release a stage, the other threads' wgmma
    reads would not be ordered before the refill: the race check says so."""
    from tirc.diagnostics import DiagnosticError

    text = SAMPLE.read_text()
    text = text.replace(
        "T.ptx_mbarrier_init(empty.data, s, 256)", "T.ptx_mbarrier_init(empty.data, s, 2)"
    )
    text = text.replace("            if k > 0:\n", "            if k > 0 and tx % 128 == 0:\n")
    module = parse(
        text, name=str(SAMPLE), defines={"M": "128", "N": "256", "K": "192", "STAGES": "2"}
    )
    a = np.ones((128, 192), "float16")
    b = np.ones((192, 256), "float16")
    c = np.zeros((128, 256), "float32")
    with pytest.raises(DiagnosticError) as error:
        run(module["main"], {"A": a, "B": b, "C": c}, module=module, gpu_model="threads")
    assert "data race on shared memory 'SA'" in str(error.value)
    assert "this TMA load" in str(error.value)

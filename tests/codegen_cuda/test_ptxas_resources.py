"""ptxas's account of every GPU sample plan (tirc.driver.kernel_resources), with no GPU: for
sm_80 and sm_90, each kernel of each samples/gpu plan (found by name, at the shape its
program gives tests) spills nothing to local memory and uses no more registers than a block
of its threads can have, with PTX from its CUDA C (NVRTC, or nvcc where cuda-python is not
installed) and from LLVM's NVPTX backend (both slow: CI runs them after the fast set). Skipped,
with the reason, where the CUDA toolkit is not installed."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.codegen_cuda.gpu_plans import GPU_SAMPLES, GpuPlan, gpu_plans
from tirc.codegen.cuda import emit_cuda
from tirc.codegen.cuda.kernels import module_kernels
from tirc.codegen.nvptx import emit_ptx
from tirc.diagnostics import DiagnosticError, Severity
from tirc.driver.compile import compile_file
from tirc.driver.cuda_toolchain import has_nvrtc, ptx_from_cuda
from tirc.driver.kernel_resources import (
    KernelResources,
    parse_ptxas_log,
    ptx_resources,
    register_budget,
    resource_warnings,
)
from tirc.ir.function import IRModule

ARCHS = ("sm_80", "sm_90")
PLANS = gpu_plans()
# what NVPTX refuses, CUDA C only: wmma fragments, bfloat16 values
CUDA_C_ONLY = ("need --ptx-via nvrtc", "use --ptx-via nvrtc", "(use NVRTC)")

# nvcc -arch=sm_80 -cubin -Xptxas -v -maxrregcount=32 on two kernels, one made to spill
SPILLING_LOG = """\
ptxas info    : Overriding maximum register limit 256 for 'light' with  32 of maxrregcount option
ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function 'light' for 'sm_80'
ptxas info    : Function properties for light
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 10 registers, used 1 barriers, 128 bytes smem, 360 bytes cmem[0]
ptxas info    : Compile time = 3.487 ms
ptxas info    : Function properties for _Z6helperf
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Compiling entry function 'heavy' for 'sm_80'
ptxas info    : Function properties for heavy
    1384 bytes stack frame, 1848 bytes spill stores, 2280 bytes spill loads
ptxas info    : Used 64 registers, used 0 barriers, 1384 bytes cumulative stack size, \
364 bytes cmem[0]
ptxas info    : Compile time = 171.057 ms
"""


def test_log_gives_each_entry_function() -> None:
    assert parse_ptxas_log(SPILLING_LOG) == [
        KernelResources("light", "sm_80", 10, 0, 0, 0, 128, 1),
        KernelResources("heavy", "sm_80", 64, 1848, 2280, 1384, 0, 0),
    ]


@pytest.mark.parametrize(
    ("threads", "budget"), [(32, 255), (128, 255), (256, 255), (384, 168), (512, 128), (1024, 64)]
)
def test_register_budget(threads: int, budget: int) -> None:
    assert register_budget(threads) == budget


def test_spills_and_register_overuse_are_warned() -> None:
    heavy = parse_ptxas_log(SPILLING_LOG)
    warnings = resource_warnings(heavy, {"light": 32, "heavy": 1024})
    assert [w.message for w in warnings] == [
        "kernel heavy spills registers to local memory on sm_80: 1848 bytes stored and 2280 "
        "loaded a thread (64 registers)"
    ]
    wide = KernelResources("wide", "sm_90", registers=96)  # launched with 1024 threads
    (over,) = resource_warnings([wide], {"wide": 1024})
    assert over.severity is Severity.WARNING
    assert over.message == (
        "kernel wide uses 96 registers a thread on sm_90, but a block of 1024 threads may "
        "have 64: its launch will fail"
    )


def _require(tool: str) -> str:
    path = shutil.which(tool)
    if path is None:
        pytest.skip(f"{tool} is not installed")
    return path


def _cuda_c_ptx(module: IRModule, arch: str, directory: Path) -> str:
    source = emit_cuda(module)
    if has_nvrtc():
        return ptx_from_cuda(source, arch)
    nvcc = _require("nvcc")
    cu = directory / "kernel.cu"
    cu.write_text(source)
    ptx = directory / "kernel.ptx"
    subprocess.run([nvcc, f"-arch={arch}", "-ptx", str(cu), "-o", str(ptx)], check=True)
    return ptx.read_text()


def _check(module: IRModule, resources: list[KernelResources], arch: str) -> None:
    threads = {kernel.name: kernel.threads_per_block() for kernel in module_kernels(module)}
    assert sorted(r.name for r in resources) == sorted(threads)
    for kernel in resources:
        assert kernel.arch == arch
        assert not kernel.spills, kernel.summary()
        assert kernel.registers <= 255, kernel.summary()
        count = threads[kernel.name]
        if count is not None:
            assert kernel.registers <= register_budget(count), (count, kernel.summary())
    assert not resource_warnings(resources, threads)


def _arch_for(plan: GpuPlan, arch: str) -> str:
    """The plan's own architecture where its program requires one (sm_90a: wgmma), once."""
    if plan.arch is None:
        return arch
    if arch != ARCHS[-1]:
        pytest.skip(f"{plan.id} runs only on {plan.arch}: checked once, with the last arch")
    return plan.arch


# the bandwidth samples' plans (a few registers a thread, no tensor cores) for sm_80 only in
# `make test-sweep`: CI compiles them for sm_90
_BANDWIDTH = ("elementwise_vec", "softmax_rows")


@pytest.mark.slow  # nvcc takes about half a second a plan and architecture
@pytest.mark.parametrize(
    ("plan", "arch"),
    [
        pytest.param(
            plan,
            arch,
            id=f"{plan.id}-{arch}",
            marks=[pytest.mark.sweep]
            if plan.id.startswith(_BANDWIDTH) and arch != ARCHS[-1]
            else [],
        )
        for plan in PLANS
        for arch in ARCHS
    ],
)
def test_cuda_c_kernels_fit_without_spills(plan: GpuPlan, arch: str, tmp_path: Path) -> None:
    _require("ptxas")
    arch = _arch_for(plan, arch)
    module = plan.lowered()
    resources = ptx_resources(_cuda_c_ptx(module, arch, tmp_path), arch)
    _check(module, resources, arch)
    for kernel in resources:  # nothing in local memory at all
        assert kernel.stack_frame == 0, kernel.summary()


@pytest.mark.slow  # lowering every plan: about 10 s of CPU for the ~30 plans, and growing
@pytest.mark.parametrize("arch", ARCHS[-1:])  # sm_80's registers: the CUDA C path above
@pytest.mark.parametrize("plan", PLANS, ids=[plan.id for plan in PLANS])
def test_llvm_kernels_fit_without_spills(plan: GpuPlan, arch: str) -> None:
    _require("ptxas")
    arch = _arch_for(plan, arch)
    module = plan.lowered()
    try:
        ptx = emit_ptx(module, arch=arch)
    except DiagnosticError as error:
        if any(reason in str(error) for reason in CUDA_C_ONLY):
            pytest.skip(str(error))
        raise
    _check(module, ptx_resources(ptx, arch), arch)


MMA = GpuPlan(GPU_SAMPLES / "matmul_fp16_mma.tir", GPU_SAMPLES / "matmul_fp16_mma.plan.json", ())


@pytest.mark.parametrize("emit", ["ptx", "cu"])
def test_compile_reports_resources_and_bank_conflicts(
    emit: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`tirc compile --resources`: ptxas's account of each kernel, and a warning at each
    ldmatrix of matmul_fp16_mma (its rows are 32 bytes apart); the output is written as
    without it."""
    _require("ptxas")
    out = tmp_path / f"mm.{emit}"
    status = compile_file(
        str(MMA.program),
        target="cuda -arch=sm_80",
        plan=str(MMA.plan),
        defines=["N=32"],
        emit=emit,
        output=str(out),
        ptx_via="llvm" if emit == "ptx" else None,  # for cu: the PTX tirc would make
        resources=True,
    )
    assert status == 0 and out.read_text()
    err = capsys.readouterr().err
    assert re.search(r"remark: main_kernel \(sm_80\): \d+ registers, 0 bytes spill stores", err)
    assert err.count("2-way shared-memory bank conflicts: 8 wavefronts where 4 would do") == 2
    assert "ldmatrix.x4.trans of B_shared in main_kernel" in err


def test_resources_for_cpu_is_refused(tmp_path: Path) -> None:
    with pytest.raises(DiagnosticError, match="--resources reports what CUDA kernels use"):
        compile_file(
            str(GPU_SAMPLES.parent / "matmul.tir"),
            target="cpu",
            output=str(tmp_path / "mm.o"),
            resources=True,
        )
    assert not (tmp_path / "mm.o").exists()


def test_resources_without_ptxas_names_the_toolkit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(shutil, "which", lambda name: None)
    with pytest.raises(DiagnosticError, match="--resources needs ptxas, which is not on PATH"):
        compile_file(
            str(MMA.program),
            target="cuda",
            plan=str(MMA.plan),
            defines=["N=32"],
            emit="ptx",
            output=str(tmp_path / "mm.ptx"),
            ptx_via="llvm",
            resources=True,
        )
    assert not (tmp_path / "mm.ptx").exists()

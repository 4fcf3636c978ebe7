"""The whole host side of `tirc run --target cuda` (lower, compile to PTX, load, copy, evaluate
and check every launch, copy back, release) over every GPU conformance case and every GPU
sample, against the fake driver: no GPU needed, no kernel run. Each case runs its scheduled
module on random inputs (symbolic sizes 16); it must finish with every launch accepted and
everything released, or be refused with a DiagnosticError listed below with its reason. Any
other exception is a tirc bug.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from tests.runtime.fake_cuda import FakeDriver, fake_device
from tests.sweep import case_marks
from tirc.diagnostics import DiagnosticError
from tirc.driver.cuda_toolchain import has_nvrtc
from tirc.driver.inputs import complete_arguments, shape_variables
from tirc.driver.run import pick_function
from tirc.driver.run_cuda import run_on_cuda
from tirc.driver.schedule import apply_plan_file
from tirc.ir.function import IRModule
from tirc.text import parse

ROOT = Path(__file__).parents[2]
CASES_DIR = ROOT.parent / "shared" / "conformance" / "cases"
CASES = sorted(
    path.parent
    for path in CASES_DIR.glob("*/meta.json")
    if json.loads(path.read_text()).get("targets") == "gpu"
    and json.loads(path.read_text()).get("kind") == "schedule"
    and (path.parent / "expected.tir").exists()
)
SIZE = 16  # every symbolic shape variable and integer scalar parameter

# case -> the start of the refusal it gets, and why that refusal is right
EXPECTED_REFUSALS = {
    # TVM's design-space sketches, untuned: their shared tiles are larger than any GPU's
    "test_meta_schedule_space_cuda__test_cuda_c3d__0": (
        "kernel main_kernel needs 7015264 bytes of shared memory",
        "a sketch stages a whole padded 3-d input in shared memory",
    ),
    "test_meta_schedule_space_cuda__test_cuda_dep__0": (
        "kernel main_kernel needs 1664640 bytes of shared memory",
        "a sketch stages the whole padded input in shared memory",
    ),
    "test_meta_schedule_space_cuda__test_cuda_grp__0": (
        "kernel main_kernel needs 388352 bytes of shared memory",
        "a sketch stages the whole padded input in shared memory",
    ),
    # TVM's trace binds 16 threads a block around warp-wide wmma calls (garbage on an H100)
    "test_meta_schedule_trace_apply__test_conv2d_int8_tensorcore__0": (
        "which the 32 threads of a warp perform together, but its blocks have 16 threads",
        "a warp-wide tensor-core call in a block of half a warp",
    ),
    "test_meta_schedule_trace_apply__test_conv2d_int8_tensorcore__1": (
        "which the 32 threads of a warp perform together, but its blocks have 16 threads",
        "a warp-wide tensor-core call in a block of half a warp",
    ),
    "test_tir_schedule_cache_read_write__test_inplace_cache_read__0": (
        "the program calls 'call_impl', which is not a CUDA built-in",
        "the case calls an extern function that nothing defines",
    ),
}
# what the LLVM path (no NVRTC installed) declines: tensor-core fragments and wmma calls,
# bfloat16 values ("(use NVRTC)")
NEEDS_NVRTC = re.compile(r"--ptx-via llvm.*(wmma|tvm_\w+_sync|tvm_fill_fragment|nvrtc|NVRTC)")
# lowering unrolls the 6x6 Winograd transforms and simplifies the result: ~9 s each
SLOW = {
    "test_meta_schedule_trace_apply__test_winograd_gpu__0",
    "test_meta_schedule_trace_apply__test_winograd_gpu__1",
}
# over 4.5 s each on a busy 2-core machine (5 to 28 s; the rest take 0.3 to 4): unrolled
# kernels that lowering then simplifies, or thousands of launches on the fake driver. The
# host path they take is the one the faster cases take; they run with the slow sweeps.
SLOW |= {
    "test_meta_schedule_postproc_rewrite_unbound_block__test_rewrite_cuda_loop_split_for_kind__0",
    "test_meta_schedule_schedule_rule_cross_thread_reduction__test_gpu_softmax_mn__0",
    "test_meta_schedule_schedule_rule_cross_thread_reduction__test_gpu_softmax_mn__1",
    "test_meta_schedule_schedule_rule_cross_thread_reduction__test_gpu_softmax_mn__2",
    "test_meta_schedule_space_cuda__test_cuda_c3d__0",
    "test_meta_schedule_space_cuda__test_cuda_grp__0",
    "test_meta_schedule_space_cuda__test_cuda_cap__0",
    "test_meta_schedule_space_cuda__test_cuda_tbg__0",
    "test_meta_schedule_space_cuda__test_cuda_dep__0",
    "test_meta_schedule_space_cuda__test_cuda_c1d__0",
    "test_gpu_matmul__test_fused_dequant_matmul_android__0",
    "test_gpu_matmul__test_inline_consumer_chain__0",
    "test_gpu_low_batch_gemv__test_batch_gemv__0",
    "test_gpu_gemv__test_decode_gemv2__0",
    "test_gpu_gemv__test_decode_gemv3__0",
    "test_gpu_gemv__test_decode_gemv_256_threads__0",
    "test_gpu_general_reduction__test_softmax_2__0",
    "test_tir_schedule_compute_at__test_compute_at_cuda_matmul_1_block_obj__0",
    "test_tir_schedule_compute_at__test_compute_at_cuda_matmul_2_block_obj__0",
}


def run_on_fake(module: IRModule, func: str | None = None, target: str = "cuda") -> FakeDriver:
    """Runs the module's function through run_on_cuda against a fresh fake driver, and checks
    what the host did: each buffer copied in and out whole, everything released."""
    name, function = pick_function(module, func)
    sizes = {var: SIZE for var in shape_variables(function)}
    sizes.update((p.name, SIZE) for p in function.params if p.dtype.is_integer)
    floats = {p.name: np.array(0.5, "float32") for p in function.params if p.dtype.is_float}
    args = complete_arguments(function, floats, 0, "", sizes)
    arrays = {key: value.nbytes for key, value in args.items() if isinstance(value, np.ndarray)}
    fake = FakeDriver()
    run_on_cuda(module, name, function, target, args, device=fake_device(fake))
    assert fake.leaks() == []
    copied_in = sorted(n for kind, _, n in fake.copies if kind == "HtoD")
    copied_out = sorted(n for kind, _, n in fake.copies if kind == "DtoH")
    whole = sorted(n for n in arrays.values() if n)
    assert copied_in == whole and copied_out == whole, (fake.copies, arrays)
    return fake


def _refusal(name: str, error: DiagnosticError) -> None:
    """Passes (or skips) when `error` is a refusal this case should get; fails otherwise."""
    text = str(error)
    if NEEDS_NVRTC.search(text) and not has_nvrtc():
        pytest.skip("tensor-core code needs NVRTC (pip install '.[cuda]')")
    expected = EXPECTED_REFUSALS.get(name)
    if expected is None:
        raise error
    assert expected[0] in text, text


def _case_params() -> list[object]:
    return [
        pytest.param(
            case,
            id=case.name,
            marks=([pytest.mark.slow] if case.name in SLOW else []) + case_marks(case.name),
        )
        for case in CASES
    ]


@pytest.mark.parametrize("case", _case_params())
def test_conformance_case_runs_on_the_fake_driver(case: Path) -> None:
    module = parse((case / "expected.tir").read_text(), name=str(case / "expected.tir"))
    try:
        fake = run_on_fake(module)
    except DiagnosticError as error:
        _refusal(case.name, error)
        return
    assert case.name not in EXPECTED_REFUSALS, "refused no longer: take it off the list"
    assert fake.launches, "no kernel was launched"


def test_every_expected_refusal_is_a_case() -> None:
    if not CASES:
        pytest.skip(f"no conformance cases at {CASES_DIR}")
    assert set(EXPECTED_REFUSALS) <= {case.name for case in CASES}


def _samples() -> list[tuple[Path, Path]]:
    gpu = [(p, p.with_suffix(".plan.json")) for p in sorted((ROOT / "samples/gpu").glob("*.tir"))]
    gallery = [
        (p, p.with_name(f"{p.stem}.cuda.plan.json"))
        for p in sorted((ROOT / "samples").glob("*.tir"))
        if p.with_name(f"{p.stem}.cuda.plan.json").exists()
    ]
    return gpu + gallery


@pytest.mark.parametrize(
    ("source", "plan"),
    _samples(),
    ids=lambda path: str(path.relative_to(ROOT)) if path.suffix == ".tir" else "",
)
def test_sample_runs_on_the_fake_driver(source: Path, plan: Path) -> None:
    text = source.read_text()
    scheduled, _ = apply_plan_file(parse(text, name=str(source)), str(plan))
    # a Hopper-only program names its target in a comment (`--target 'cuda -arch=sm_90a'`)
    target = re.search(r"^#.*--target '(cuda -arch=sm_\w+)'", text, re.MULTILINE)
    try:
        fake = run_on_fake(scheduled, target=target.group(1) if target else "cuda")
    except DiagnosticError as error:
        _refusal(source.name, error)
        return
    assert fake.launches

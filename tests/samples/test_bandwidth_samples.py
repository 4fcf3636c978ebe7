"""samples/gpu/elementwise_vec and samples/gpu/softmax_rows, every plan of each (the variants
benchmarks/bench_cuda.py times), at the shape the program's comment gives tests: lowered for
cuda and run in the interpreter's thread model (which catches a missing barrier), the result
is numpy's; the CUDA C moves global memory in 16-byte vectors, reduces across threads with
warp shuffles, synchronizes a block only where threads share memory (nvcc and ptxas take
every plan for sm_80 and sm_90 in tests/codegen_cuda/test_ptxas_resources.py)."""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import math
import re
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.codegen_cuda.gpu_plans import GpuPlan, gpu_plans
from tirc.codegen.cuda import emit_cuda
from tirc.interp import run

ROOT = Path(__file__).resolve().parents[2]
PLANS = gpu_plans("elementwise_vec") + gpu_plans("softmax_rows")
LARGE = 1 << 20  # elements: the interpreter's thread model takes tens of seconds beyond


def _numpy(plan: GpuPlan, a: np.ndarray) -> np.ndarray:
    if plan.program.stem == "elementwise_vec":
        return a * np.float32(2) + np.float32(1)
    x = a.astype(np.float64)
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def test_every_sample_has_its_plans() -> None:
    ids = {plan.id for plan in PLANS}
    wanted = {"elementwise_vec", "elementwise_vec.grid", "softmax_rows", "softmax_rows.regs"}
    assert wanted | {"softmax_rows.block", "softmax_rows.block_regs"} <= ids


def _shape_of(plan: GpuPlan) -> tuple[int, ...]:
    defines = dict(plan.defines)
    if plan.program.stem == "elementwise_vec":
        return (int(defines["N"]),)
    return (int(defines["M"]), int(defines["N"]))


def _smallest(plan: GpuPlan) -> GpuPlan:
    """An elementwise plan at the least N it takes: the product of its split's factors."""
    if plan.program.stem != "elementwise_vec":
        return plan
    steps = json.loads(plan.plan.read_text())["steps"]
    factors = next(step["factors"] for step in steps if step["op"] == "split")
    return dataclasses.replace(plan, defines=(("N", str(math.prod(f for f in factors if f))),))


def _by_size() -> list[object]:
    cases: list[object] = []
    for plan in map(_smallest, PLANS):
        large = math.prod(_shape_of(plan)) > LARGE
        cases.append(pytest.param(plan, id=plan.id, marks=[pytest.mark.slow] if large else []))
    return cases


@pytest.mark.parametrize("plan", _by_size())
def test_plan_in_the_thread_model_matches_numpy(plan: GpuPlan) -> None:
    lowered = plan.lowered()
    function = lowered["main"]
    a = np.random.default_rng(0).uniform(-4, 4, _shape_of(plan)).astype(np.float32)
    args: dict[str, np.ndarray | int] = {"A": a.copy(), "B": np.zeros_like(a)}
    run(function, args, module=lowered)
    np.testing.assert_allclose(np.asarray(args["B"]), _numpy(plan, a), rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("plan", PLANS, ids=lambda plan: plan.id)
def test_cuda_c_moves_memory_in_16_byte_vectors(plan: GpuPlan) -> None:
    source = emit_cuda(plan.lowered())
    assert re.search(r"= \*\(float4\*\)\(A \+ ", source), "A is not read as float4"
    assert re.search(r"\*\(float4\*\)\(B \+ [^;]*\) = ", source), "B is not written as float4"
    assert not re.search(r"\bA\[", source), "A is read element by element somewhere"
    if plan.program.stem == "softmax_rows":
        assert "__shfl_down_sync" in source, "the reductions do not use warp shuffles"
        shares = "shared" in plan.id or "block" in plan.id
        assert ("__syncthreads" in source) == shares, (
            "a block barrier where no thread reads another's shared memory"
            if not shares
            else "threads share memory without a barrier"
        )


# nvcc and ptxas on each plan, for sm_80 and sm_90: tests/codegen_cuda/test_ptxas_resources.py


def test_the_benchmark_times_every_plan_at_its_sizes() -> None:
    spec = importlib.util.spec_from_file_location(
        "bench_cuda", ROOT / "benchmarks" / "bench_cuda.py"
    )
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("bench_cuda", bench)  # its dataclasses look their module up
    spec.loader.exec_module(bench)
    rows = {row.name: row for row in bench.all_rows((4096,), 1 << 26)}
    for plan in PLANS:
        if plan.program.stem == "elementwise_vec":
            assert rows[plan.id].defines == {"N": str(1 << 26)}
        else:
            assert rows[f"{plan.id}@4096x1024"].shape == (4096, 1024)
            assert rows[f"{plan.id}@32768x4096"].defines == {"M": "32768", "N": "4096"}
    assert rows["matmul_fp16_tc@4096"].defines == {"N": "4096"}
    chosen = bench.select(list(rows.values()), ["*x1024"])
    assert sorted(row.name for row in chosen) == sorted(
        f"{plan.id}@4096x1024" for plan in PLANS if plan.program.stem == "softmax_rows"
    )

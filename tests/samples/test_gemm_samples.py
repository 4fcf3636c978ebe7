"""samples/gpu/gemm_mma and its plans (the variants benchmarks/bench_cuda.py times and
docs/gpu.md walks through): a plan of each feature, at the least shape it tiles (read off its
own splits and pipeline depth), lowered for cuda and run in the interpreter's lockstep GPU
model, computes numpy's product; every plan's CUDA C has the instructions the plan asks for
(ldmatrix, mma.sync, 16-byte global loads or cp.async with commit/wait groups) and keeps the
accumulators in registers."""

from __future__ import annotations

import importlib.util
import json

import numpy as np
import pytest

from tests.codegen_cuda.gpu_plans import GPU_SAMPLES, GpuPlan, gpu_plans
from tirc.codegen.cuda import emit_cuda
from tirc.driver.lower import lower_module
from tirc.driver.schedule import apply_plan_file
from tirc.interp import run
from tirc.ir.function import IRModule
from tirc.text import parse

PLANS = gpu_plans("gemm_mma")
FAST = {"gemm_mma_async2"}
# in the slow set (5-40 s each in the interpreter): one plan per feature the others combine
# (padding, fragment double buffering, 8 warps with K by 64 and 3 stages); every plan's code
# is checked below, and by the ptxas and bank-conflict tests
SLOW = {"gemm_mma", "gemm_mma_async2_regpipe", "gemm_mma_8warps_bk64_async3"}
RUN = [plan for plan in PLANS if plan.id in FAST | SLOW]


def _least_shape(plan: GpuPlan) -> dict[str, int]:
    """M, N, K of one block tile (times the grouped block order), K deep enough for the
    pipeline's stages, from the plan's splits and annotations."""
    steps = json.loads(plan.plan.read_text())["steps"]
    splits = {step["loop"]: step["factors"] for step in steps if step["op"] == "split"}
    tile = {axis: int(np.prod([f for f in splits[axis] if f is not None])) for axis in "ijk"}
    group = splits.get("i0", [None, 1])[-1]
    stages = [s["value"] for s in steps if s.get("key") == "software_pipeline_stage"]
    depth = max(stages[0]) + 1 if stages else 1
    return {"M": tile["i"] * group, "N": tile["j"], "K": tile["k"] * max(depth, 2)}


def _lowered(plan: GpuPlan, shape: dict[str, int]) -> IRModule:
    defines = {name: str(value) for name, value in shape.items()}
    module = parse(plan.program.read_text(), name=str(plan.program), defines=defines)
    scheduled, _ = apply_plan_file(module, str(plan.plan))
    return lower_module(scheduled, target="cuda")


def test_the_documented_steps_are_there() -> None:
    ids = {plan.id for plan in PLANS}
    assert {"gemm_mma", "gemm_mma_swizzle", "gemm_mma_async2", "gemm_mma_async3"} <= ids
    assert {"gemm_mma_async2_regpipe", "gemm_mma_async3_raster8"} <= ids


@pytest.mark.parametrize(
    "plan",
    [p if p.id in FAST else pytest.param(p, marks=pytest.mark.slow) for p in RUN],
    ids=[p.id for p in RUN],
)
def test_plan_computes_the_product(plan: GpuPlan) -> None:
    shape = _least_shape(plan)
    m, n, k = shape["M"], shape["N"], shape["K"]
    rng = np.random.default_rng(3)
    a = rng.uniform(-1, 1, (m, k)).astype(np.float16)
    b = rng.uniform(-1, 1, (k, n)).astype(np.float16)
    args = {"A": a, "B": b, "C": np.full((m, n), np.nan, np.float32)}
    lowered = _lowered(plan, shape)
    run(lowered["main"], args, module=lowered, gpu_model="lockstep")
    want = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(args["C"], want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("plan", PLANS, ids=[p.id for p in PLANS])
def test_cuda_c_has_the_instructions_the_plan_asks_for(plan: GpuPlan) -> None:
    text = emit_cuda(plan.lowered())
    steps = plan.plan.read_text()
    assert "ldmatrix.sync.aligned.m8n8.x4.shared.b16" in text
    assert "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16" in text
    assert "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32" in text
    steps_json = json.loads(steps)["steps"]
    splits = {step["loop"]: step["factors"] for step in steps_json if step["op"] == "split"}
    warp_tile = splits["i"][2] * 16 * splits["j"][2] * 16  # a warp's accumulators, in registers
    assert f"float C_warp[{warp_tile // 32}];" in text
    if "software_pipeline_async_stages" in steps:
        assert "cp.async.cg.shared.global" in text
        assert "cp.async.commit_group" in text and "cp.async.wait_group" in text
    else:
        assert "*(uint4*)(A_shared + " in text  # 16-byte copies into shared memory
    if "permuted_layout" in steps:
        assert " ^ " in text  # the XOR-swizzled chunk index


def test_least_shapes_read_off_the_plans() -> None:
    by_id = {plan.id: plan for plan in PLANS}
    assert _least_shape(by_id["gemm_mma"]) == {"M": 128, "N": 128, "K": 64}
    assert _least_shape(by_id["gemm_mma_async3_raster8"]) == {"M": 1024, "N": 128, "K": 96}
    assert _least_shape(by_id["gemm_mma_8warps_bk64_async3"]) == {"M": 128, "N": 128, "K": 192}


def test_the_plans_are_what_their_script_writes() -> None:
    """samples/gpu/gemm_mma*.plan.json are written by samples/gpu/gemm_mma_plans.py: a plan
    edited by hand, or an option changed without rewriting them, fails here."""
    path = GPU_SAMPLES / "gemm_mma_plans.py"
    spec = importlib.util.spec_from_file_location("gemm_mma_plans", path)
    assert spec is not None and spec.loader is not None
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    assert "gemm_mma_128x256_async4_raster8_prefetch" in script.PLANS
    for name, options in script.PLANS.items():
        written = json.loads((GPU_SAMPLES / f"{name}.plan.json").read_text())
        assert written == json.loads(json.dumps(script.plan(**options))), name

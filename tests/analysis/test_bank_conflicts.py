"""Shared-memory bank conflicts from the lowered program (tirc.analysis.bank_conflicts): the
wavefront model on hand-made warps, the lane evaluator against the simplifier's constant
folding, and the GPU samples: matmul_fp16_mma's 16-half rows (32 bytes apart) make every
ldmatrix phase 2-way, the same plan with rows padded to 40 halves (storage_align) is
conflict-free and still computes A x B in the interpreter, and the gemm_* plans are
conflict-free."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.codegen_cuda.gpu_plans import GPU_SAMPLES, GpuPlan, gpu_plans
from tirc.analysis.arith import Analyzer
from tirc.analysis.bank_conflicts import (
    AccessConflicts,
    bank_conflicts,
    lanes_per_phase,
    phase_wavefronts,
)
from tirc.analysis.lane_values import NotEvaluable, evaluate
from tirc.interp import random_inputs, run
from tirc.interp.memory.storage import view_of
from tirc.interp.threads import ptx as interpreted_ptx
from tirc.ir import dtype as dt
from tirc.ir import expr as E
from tirc.ir.function import IRModule
from tirc.ir.substitute import substitute
from tirc.text import parse

LANES = np.arange(32)


@pytest.mark.parametrize(
    ("addresses", "width", "expected"),
    [
        (LANES * 4, 4, [1]),  # consecutive words
        (LANES * 8, 4, [2]),  # every other word: two lanes a bank
        (LANES * 128, 4, [32]),  # one bank
        (np.zeros(32, int), 4, [1]),  # one word: a broadcast
        (LANES * 2, 2, [1]),  # halves, two lanes a word
        (LANES * 16, 16, [1, 1, 1, 1]),  # 16-byte vectors, 8 lanes a phase
        (LANES * 32, 16, [2, 2, 2, 2]),  # 16-byte vectors 32 bytes apart
        (LANES * 8, 8, [1, 1]),  # 8-byte vectors, 16 lanes a phase
    ],
)
def test_phase_wavefronts(addresses: np.ndarray, width: int, expected: list[int]) -> None:
    assert phase_wavefronts(addresses, width, lanes_per_phase(width)) == expected


def test_inactive_lanes_take_no_wavefronts() -> None:
    active = LANES < 8
    assert phase_wavefronts(LANES * 128, 4, 32, active) == [8]
    assert phase_wavefronts(LANES * 16, 16, 8, active) == [1, 0, 0, 0]


def _random_expr(rng: random.Random, leaves: list[E.PrimExpr], depth: int) -> E.PrimExpr:
    if depth == 0 or rng.random() < 0.25:
        return rng.choice(leaves)
    a, b = _random_expr(rng, leaves, depth - 1), _random_expr(rng, leaves, depth - 1)
    kind = rng.choice(["add", "sub", "mul", "floordiv", "floormod", "min", "max", "sel"])
    divisor = E.IntImm(rng.choice([2, 3, 8, 16]))
    return {
        "add": lambda: E.Add(a, b),
        "sub": lambda: E.Sub(a, b),
        "mul": lambda: E.Mul(a, b),
        "floordiv": lambda: E.FloorDiv(a, divisor),
        "floormod": lambda: E.FloorMod(a, divisor),
        "min": lambda: E.Min(a, b),
        "max": lambda: E.Max(a, b),
        "sel": lambda: E.Select(E.LT(a, b), a, b),
    }[kind]()


def test_lane_values_agree_with_constant_folding() -> None:
    """Differential: each lane's value is what the simplifier folds the expression to with
    that lane's values substituted."""
    rng = random.Random(7)
    tx, k = E.Var("tx"), E.Var("k")
    leaves: list[E.PrimExpr] = [tx, k, E.IntImm(-5), E.IntImm(3), E.IntImm(16)]
    analyzer = Analyzer()
    for _ in range(150):
        expr = _random_expr(rng, leaves, 4)
        got = np.broadcast_to(evaluate(expr, {tx: LANES, k: 5}), (32,))
        for lane in (0, 7, 13, 31):
            folded = analyzer.simplify(substitute(expr, {tx: E.IntImm(lane), k: E.IntImm(5)}))
            assert isinstance(folded, E.IntImm), folded
            assert got[lane] == folded.value, (expr, lane)


def test_lane_values_of_an_xor_swizzle() -> None:
    """The swizzle a conflict-free layout uses (the simplifier does not fold bitwise calls):
    chunk ^ (row % 8)."""
    tx = E.Var("tx")
    row, chunk = E.FloorDiv(tx, E.IntImm(4)), E.FloorMod(tx, E.IntImm(4))
    swizzled = E.Call(dt.INT32, "bitwise_xor", (chunk, E.FloorMod(row, E.IntImm(8))))
    got = evaluate(swizzled, {tx: LANES})
    assert got.tolist() == [(lane % 4) ^ (lane // 4 % 8) for lane in range(32)]


def test_lane_values_name_what_they_miss() -> None:
    with pytest.raises(NotEvaluable, match="'n' has no known value"):
        evaluate(E.Add(E.Var("n"), E.IntImm(1)), {})


def _ldmatrix(found: list[AccessConflicts]) -> list[AccessConflicts]:
    return [item for item in found if item.access.instruction.startswith("ldmatrix")]


def _mma_plan(plan: Path) -> GpuPlan:
    return GpuPlan(GPU_SAMPLES / "matmul_fp16_mma.tir", plan, (("N", "32"),))


def test_mma_sample_ldmatrix_is_two_way() -> None:
    """Rows of 16 halves are 32 bytes apart: the 8 rows of a phase fall in 4 of the 8
    16-byte bank groups, two rows each, so every phase of ldmatrix.x4 takes 2 wavefronts:
    8 where 4 would do, for A and for B (.trans), once per k step."""
    found = _ldmatrix(
        bank_conflicts(_mma_plan(GPU_SAMPLES / "matmul_fp16_mma.plan.json").lowered())
    )
    assert [(f.access.instruction, f.access.buffer) for f in found] == [
        ("ldmatrix.x4", "A_shared"),
        ("ldmatrix.x4.trans", "B_shared"),
    ]
    for item in found:
        assert (item.instructions, item.wavefronts, item.ideal, item.ways) == (1, 8, 4, 2)
        assert item.excess == 4 and item.exhaustive and item.unknown is None


def _interpreted_ldmatrix_wavefronts(
    module: IRModule, monkeypatch: pytest.MonkeyPatch
) -> list[list[int]]:
    """Differential: the wavefronts of each ldmatrix as the interpreter runs it, from the
    row addresses its lanes give there (every block, every k step)."""
    requests: list[list[int]] = []
    original = interpreted_ptx.ldmatrix

    def recording(by_thread: dict[int, tuple[Any, ...]], site: int) -> dict[int, None]:
        addresses = [0] * 32
        for thread, (_, _, _, _, shared, offset) in by_thread.items():
            _, base = view_of(shared, dt.parse_dtype("uint16"))
            addresses[thread % 32] = (base + offset) * 2
        requests.append(phase_wavefronts(addresses, 16, 8))
        return original(by_thread, site)

    monkeypatch.setattr(interpreted_ptx, "ldmatrix", recording)
    inputs = random_inputs(module["main"], 0)
    run(module["main"], inputs, module=module)
    return requests


def test_interpreter_sees_the_same_ldmatrix_phases(monkeypatch: pytest.MonkeyPatch) -> None:
    lowered = _mma_plan(GPU_SAMPLES / "matmul_fp16_mma.plan.json").lowered()
    seen = _interpreted_ldmatrix_wavefronts(lowered, monkeypatch)
    assert len(seen) == 2 * 2 * 2 * 2  # blocks (2 x 2) x k steps x (A, B)
    assert all(phases == [2, 2, 2, 2] for phases in seen)


def _padded_plan(directory: Path) -> Path:
    """The sample's plan with A_shared and B_shared rows padded to 40 halves (a stride with
    stride % 32 == 8, as storage_align asks), before the ldmatrix tensorize."""
    plan = json.loads((GPU_SAMPLES / "matmul_fp16_mma.plan.json").read_text())
    steps = plan["steps"]
    first = next(i for i, step in enumerate(steps) if step["op"] == "tensorize")
    steps[first:first] = [
        {
            "op": "storage_align",
            "block": name,
            "buffer_index": 0,
            "axis": 0,
            "factor": 32,
            "offset": 8,
        }
        for name in ("A_shared", "B_shared")
    ]
    path = directory / "padded.plan.json"
    path.write_text(json.dumps(plan))
    return path


def test_padded_rows_make_ldmatrix_conflict_free(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Rows 80 bytes apart fall in 8 distinct bank groups (80 / 16 = 5 is odd); the padded
    kernel still computes what the unscheduled program does (interpreter differential)."""
    padded = _mma_plan(_padded_plan(tmp_path))
    lowered = padded.lowered()
    found = _ldmatrix(bank_conflicts(lowered))
    assert len(found) == 2
    for item in found:
        assert (item.wavefronts, item.ideal, item.ways) == (4, 4, 1)
        assert item.is_conflict_free
    seen = _interpreted_ldmatrix_wavefronts(lowered, monkeypatch)
    assert len(seen) == 16 and all(phases == [1, 1, 1, 1] for phases in seen)
    original = parse(padded.program.read_text(), defines=dict(padded.defines))
    inputs = random_inputs(original["main"], 0)
    expected = {key: np.array(value, copy=True) for key, value in inputs.items()}
    got = {key: np.array(value, copy=True) for key, value in inputs.items()}
    run(original["main"], expected)
    run(lowered["main"], got, module=lowered)
    np.testing.assert_allclose(got["C"], expected["C"], rtol=1e-3, atol=1e-3)


def test_sample_without_ldmatrix_reports_plain_accesses() -> None:
    """samples/gpu/matmul: float32 tiles, 4-byte loads and stores, all conflict-free."""
    (plan,) = [plan for plan in gpu_plans("matmul") if plan.id == "matmul"]
    found = bank_conflicts(plan.lowered())
    assert {item.access.instruction for item in found} == {"st.shared 4 B", "ld.shared 4 B"}
    assert all(item.is_conflict_free for item in found)


GEMM_PLANS = gpu_plans("gemm_")


@pytest.mark.parametrize("plan", GEMM_PLANS, ids=[plan.id for plan in GEMM_PLANS])
def test_gemm_plans_load_fragments_without_conflicts(plan: GpuPlan) -> None:
    """ldmatrix and cp.async of the fast GEMM plans: every phase one wavefront."""
    found = bank_conflicts(plan.lowered())
    checked = [
        item for item in found if item.access.instruction.startswith(("ldmatrix", "cp.async"))
    ]
    if "wgmma" not in plan.id:  # wgmma reads its operands through descriptors, not ldmatrix
        assert _ldmatrix(checked), "the plan uses no ldmatrix"
    conflicts = [_describe(item) for item in checked if not item.is_conflict_free]
    assert not conflicts, "\n".join(conflicts)


# The padded plan is the step before the swizzle (docs/gpu.md): its A tile's rows of 32 halves
# padded to 40 (80 bytes) are conflict-free for ldmatrix, but a phase of eight 16-byte stores
# covers two rows, whose 64 bytes each overlap in 4 banks: 2-way. No padding serves both; the
# XOR swizzle of the other plans does.
STORE_WAYS = {("gemm_mma", "A_shared"): 2}


@pytest.mark.parametrize("plan", GEMM_PLANS, ids=[plan.id for plan in GEMM_PLANS])
def test_gemm_plans_store_tiles_without_conflicts(plan: GpuPlan) -> None:
    """16-byte stores into shared memory (the global -> shared copy without cp.async)."""
    found = bank_conflicts(plan.lowered())
    stores = [item for item in found if item.access.instruction == "st.shared 16 B"]
    wrong = [
        _describe(item)
        for item in stores
        if item.ways != STORE_WAYS.get((plan.id, item.access.buffer), 1)
    ]
    assert not wrong, "\n".join(wrong)


def _describe(item: AccessConflicts) -> str:
    access = item.access
    return (
        f"{access.kernel}: {access.instruction} into {access.buffer}: {item.wavefronts} "
        f"wavefronts for {item.ideal} ({item.ways}-way) over {item.instructions} warp "
        f"instructions{'' if item.unknown is None else ', unknown: ' + item.unknown}"
    )


CP_ASYNC = """
@T.prim_func
def copy(A: T.handle("float16", "global")):
    threadIdx_x = T.launch_thread("threadIdx.x", 64)
    A_shared = T.alloc_shared((8192,), "float16")
    for i in range(2):
        T.ptx_cp_async("float16", A_shared.data, OFFSET, A, threadIdx_x * 8, 16)
    T.ptx_commit_group()
    T.ptx_wait_group(0)
"""


@pytest.mark.parametrize(
    ("offset", "expected"),
    [
        # 16-byte chunks one after another: each phase of 8 lanes covers 128 bytes
        ("(i * 64 + threadIdx_x) * 8", (4, 16, 16, 1)),
        # one chunk from each 128-byte row: all 8 lanes of a phase in one bank group
        ("(i * 64 + threadIdx_x) * 64", (4, 128, 16, 8)),
        # the same rows with the chunk swizzled by the row (chunk ^ row % 8)
        ("(i * 64 + threadIdx_x) * 64 + (threadIdx_x % 8 ^ i) * 8", (4, 16, 16, 1)),
    ],
)
def test_cp_async_rows(offset: str, expected: tuple[int, int, int, int]) -> None:
    """2 warps x 2 iterations = 4 warp requests of 4 phases each."""
    (found,) = bank_conflicts(parse(CP_ASYNC.replace("OFFSET", offset)))
    assert found.access.instruction == "cp.async 16 B"
    assert (found.instructions, found.wavefronts, found.ideal, found.ways) == expected


VECTOR_STORE = """
@T.prim_func
def store(A: T.handle("float32", "global"), n: T.int32):
    A_1 = T.decl_buffer((4096,), data=A)
    threadIdx_x = T.launch_thread("threadIdx.x", 32)
    S = T.alloc_shared((4096,))
    if threadIdx_x < LIMIT:
        S[T.Ramp(threadIdx_x * STRIDE, 1, 4)] = A_1[T.Ramp(threadIdx_x * 4, 1, 4)]
    A_1[threadIdx_x] = S[threadIdx_x * n]
"""


@pytest.mark.parametrize(
    ("limit", "stride", "expected"),
    [
        (32, 4, (1, 4, 4, 1)),  # float4 stores one after another: 4 phases
        (32, 8, (1, 8, 4, 2)),  # 32 bytes apart: 2-way
        (8, 8, (1, 2, 1, 2)),  # lanes 8-31 masked off: one phase, 2-way
        (0, 4, (0, 0, 0, 0)),  # no lane stores
    ],
)
def test_vector_store_under_a_condition(
    limit: int, stride: int, expected: tuple[int, int, int, int]
) -> None:
    text = VECTOR_STORE.replace("LIMIT", str(limit)).replace("STRIDE", str(stride))
    store, load = bank_conflicts(parse(text))
    assert store.access.instruction == "st.shared 16 B"
    assert (store.instructions, store.wavefronts, store.ideal, store.ways) == expected
    assert load.access.instruction == "ld.shared 4 B"
    assert load.unknown == "'n' has no known value"  # a shape variable, given by value:
    _, load = bank_conflicts(parse(text), {"n": 2})
    assert (load.wavefronts, load.ways) == (2, 2)

"""The consumers' k loop of a TMA-fed, warp-specialized wgmma GEMM (inject-warp-specialization
with `software_pipeline_tma` 1 over wgmma-only later stages; golden
inject_warp_specialization/tma_wgmma): the shape of the fast Hopper GEMMs
(samples/gpu/matmul_fp16_hopper.tir), from the plan gemm_wgmma_tensorize.swizzle128_tma.

- in a ring of 2 or more versions: wait full; wgmma.fence; the k tile's wgmmas; one commit;
  wait_group(1); release the previous version (__syncwarp, then one arrival a consumer warp,
  by its first lane: `empty` counts the consumer warps); wait_group(0) after the loop; no
  proxy fence or barrier (each consumer's own wait on full acquires what TMA wrote). It
  matches numpy in the thread model, which reports any shared-memory race, a wgmma's reads
  lasting until its group retires, on every version of the ring;
- in a ring of one version (the consumer's stage ordered before the copies) the previous
  version is the one the next fill needs: the release stays after a wait_group(0), or the
  consumers would wait on a fill that waits on them. It too matches numpy;
- a stage whose wgmmas read shared memory TMA did not fill, or that does more than wgmmas,
  keeps the intrinsic's fences, barriers and waits;
- a ring its producer threads fill themselves (stores or cp.async: golden
  inject_warp_specialization/cp_async_wgmma, from the plan gemm_wgmma_tensorize.named_barrier_ws)
  runs the same loop with one proxy fence a k tile after the wait on full (their stores are the
  generic proxy's, the wgmmas read through the async one), no barrier, and matches numpy;
- the k16 loop of a k tile's wgmmas is unrolled: the emitted CUDA C has one wgmma a k16 step,
  with constant descriptor offsets, as matmul_fp16_hopper.tir's T.unroll(4).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from tests.codegen_cuda.gpu_plans import GPU_SAMPLES
from tirc.codegen.cuda import emit_cuda
from tirc.driver.lower import lower_module
from tirc.interp import run
from tirc.ir import dtype as dt
from tirc.ir import expr as E
from tirc.ir import stmt as S
from tirc.ir.function import IRModule
from tirc.ir.functor import walk
from tirc.ir.node import Node
from tirc.schedule.apply import apply_plan
from tirc.schedule.plan import read_plan
from tirc.text import parse
from tirc.transform.passes.inject_warp_specialization import wgmma_issue

PROGRAM = GPU_SAMPLES / "gemm_wgmma_tensorize.tir"
PLAN = GPU_SAMPLES / "gemm_wgmma_tensorize.swizzle128_tma.plan.json"
THREAD_FED = GPU_SAMPLES / "gemm_wgmma_tensorize.named_barrier_ws.plan.json"


def _lowered(m: int, n: int, k: int, plan_path: Path = PLAN, **annotations: list[int]) -> IRModule:
    """The GEMM at m x n x k, scheduled by `plan_path` with `annotations` on its pipelined
    loop (replacing or adding to the plan's)."""
    module = parse(PROGRAM.read_text(), name=str(PROGRAM), defines={"M": m, "N": n, "K": k})
    plan = json.loads(plan_path.read_text())
    steps = plan["steps"]
    for step in steps:
        if step["op"] == "annotate" and step["key"] in annotations:
            step["value"] = annotations.pop(step["key"])
    for key, value in annotations.items():
        steps.append({"op": "annotate", "target": "uk0", "key": key, "value": value})
    scheduled, _ = apply_plan(module, read_plan(json.dumps(plan)), {})
    return lower_module(scheduled, target="cuda")


def _consumer_loop(module: IRModule) -> list[S.Stmt]:
    """The statements of the loop that waits on `full`, the consumers'."""
    found: list[list[S.Stmt]] = []

    def look(node: Node) -> None:
        if isinstance(node, S.For) and isinstance(node.body, S.SeqStmt):
            for stmt in node.body.stmts:
                call = _call(stmt)
                if call is not None and call.op == "ptx_mbarrier_wait":
                    if isinstance(call.args[0], E.Var) and call.args[0].name == "full":
                        found.append(list(node.body.stmts))

    walk(module["main_kernel"].body, look)
    (loop,) = found
    return loop


def _call(stmt: S.Stmt) -> E.Call | None:
    if isinstance(stmt, S.Evaluate) and isinstance(stmt.value, E.Call):
        return stmt.value
    return None


def _shape(stmts: list[S.Stmt]) -> list[str]:
    """Each statement as its call's name (a warp's barrier `syncwarp`), a loop as `for`, a
    condition as `if (<its statements' shape>)`."""
    shape: list[str] = []
    for stmt in stmts:
        call = _call(stmt)
        if call is not None and call.op == "ptx_wgmma_wait_group":
            shape.append(f"wait{E.int_value(call.args[0])}")
        elif call is not None and call.op == "tvm_storage_sync":
            scope = call.args[0]
            warp = isinstance(scope, E.StringImm) and scope.value == "warp"
            shape.append("syncwarp" if warp else "syncthreads")
        elif call is not None:
            shape.append(call.op)
        elif isinstance(stmt, S.For):
            shape.append("for")
        elif isinstance(stmt, S.IfThenElse):
            then = stmt.then_case
            inner = list(then.stmts) if isinstance(then, S.SeqStmt) else [then]
            shape.append(f"if ({', '.join(_shape(inner))})")
    return shape


# the release of a version: after __syncwarp, the first lane of each consumer warp arrives
ELECTED = "if (syncwarp, if (ptx_mbarrier_arrive))"


def _matches_numpy(module: IRModule, m: int, n: int, k: int) -> None:
    rng = np.random.default_rng(5)
    a = rng.uniform(-1, 1, (m, k)).astype(np.float16)
    b = rng.uniform(-1, 1, (k, n)).astype(np.float16)
    c = np.full((m, n), np.nan, np.float32)
    run(module["main"], {"A": a, "B": b, "C": c}, module=module, gpu_model="threads")
    np.testing.assert_allclose(c, a.astype(np.float64) @ b.astype(np.float64), atol=1e-4)


def test_one_group_in_flight_and_the_previous_version_released() -> None:
    """Four k tiles in the 3-deep ring: the producer refills the first version once the
    consumers released it, a k tile later than it used to."""
    lowered = _lowered(64, 64, 256)
    assert _shape(_consumer_loop(lowered)) == [
        "ptx_mbarrier_wait",
        "ptx_wgmma_fence",
        *["ptx_wgmma"] * 4,  # the k16 loop, unrolled
        "ptx_wgmma_commit_group",
        "wait1",
        ELECTED,
    ]
    calls: list[str] = []
    counts: dict[str, int] = {}

    def look(node: Node) -> None:
        if isinstance(node, E.Call):
            calls.append(node.op)
            if node.op == "ptx_mbarrier_init" and isinstance(node.args[0], E.Var):
                counts[node.args[0].name] = E.int_value(node.args[2])

    walk(lowered["main_kernel"].body, look)
    # one arrival a phase on full (the producer's, with the TMA bytes), one a consumer warp
    # (the warpgroup's 4) on empty
    assert counts == {"full": 1, "empty": 4}
    assert "ptx_bar_sync" not in calls
    assert calls.count("ptx_fence_proxy_async") == 1  # the mbarriers' initialization's
    assert calls.count("ptx_wgmma_wait_group") == 2  # wait_group(1) in the loop, (0) after it
    _matches_numpy(lowered, 64, 64, 256)


def test_a_ring_of_one_version_releases_after_waiting_for_all() -> None:
    """The consumers' stage ordered before the copies: one version, which the next fill needs
    at once. Released after wait_group(1) one k tile late, the consumers would wait for a fill
    that waits for them; after wait_group(0) the ring turns (two k tiles)."""
    stages = {"software_pipeline_stage": [0, 0, 1], "software_pipeline_order": [1, 2, 0]}
    lowered = _lowered(64, 64, 128, **stages)
    shape = _shape(_consumer_loop(lowered))
    assert shape[-4:] == ["ptx_wgmma_commit_group", "wait0", "syncwarp", "if (ptx_mbarrier_arrive)"]
    _matches_numpy(lowered, 64, 64, 128)


def test_a_ring_of_two_versions_turns() -> None:
    """The fewest versions the late release allows: the producer's third fill waits for the
    first version, which the consumers release in their second k tile, after its wait on the
    second fill (three k tiles)."""
    lowered = _lowered(64, 64, 192, software_pipeline_stage=[0, 0, 1])
    assert _shape(_consumer_loop(lowered))[-2:] == ["wait1", ELECTED]
    _matches_numpy(lowered, 64, 64, 192)


def test_only_wgmmas_of_tma_filled_tiles_lose_their_fences_and_waits() -> None:
    """The intrinsic's statements in the golden's k loop: with A_shared and B_shared the TMA
    ring's, the wgmma stays alone; with either not, or beside a store, nothing changes."""
    golden = Path(__file__).parent / "golden/inject_warp_specialization/tma_wgmma.before.tir"
    func = parse(golden.read_text())["main"]
    loops: list[S.For] = []
    buffers: dict[str, E.Var] = {}

    def look(node: Node) -> None:
        if isinstance(node, S.For) and node.loop_var.name == "k_1":
            loops.append(node)
        if isinstance(node, S.SBlock):
            buffers.update((b.name, b.data) for b in node.alloc_buffers)

    walk(func.body, look)
    (loop,) = loops
    tiles = {buffers["A_shared"], buffers["B_shared"]}
    kept = wgmma_issue([loop], tiles)
    assert kept is not None
    calls: list[str] = []
    walk(kept[0], lambda node: isinstance(node, E.Call) and calls.append(node.op))
    assert [op for op in calls if op.startswith("ptx_")] == ["ptx_wgmma"]
    assert wgmma_issue([loop], {buffers["A_shared"]}) is None
    store = S.BufferStore(
        func.buffer_map[2][1], E.FloatImm(0.0, dt.FLOAT32), (E.IntImm(0, dt.INT32),) * 2
    )
    assert wgmma_issue([loop, store], tiles) is None


def test_a_ring_the_producers_fill_with_cp_async_runs_the_fast_loop() -> None:
    """cp.async copies by the producer warpgroup, 2 versions, 3 k tiles: one proxy fence a k
    tile where the TMA ring has none, and no barrier among the consumers."""
    lowered = _lowered(64, 128, 192, THREAD_FED, software_pipeline_async_stages=[0])
    assert _shape(_consumer_loop(lowered)) == [
        "ptx_mbarrier_wait",
        "ptx_fence_proxy_async",
        "ptx_wgmma_fence",
        "ptx_wgmma",  # the k16 loop, unrolled
        "ptx_wgmma",
        "ptx_wgmma",
        "ptx_wgmma",
        "ptx_wgmma_commit_group",
        "wait1",
        ELECTED,
    ]
    calls: list[str] = []

    def look(node: Node) -> None:
        if isinstance(node, E.Call):
            calls.append(node.op)

    walk(lowered["main_kernel"].body, look)
    assert "ptx_bar_sync" not in calls
    assert "ptx_cp_async" in calls
    _matches_numpy(lowered, 64, 128, 192)


@pytest.mark.sweep  # too long for CI: make test-sweep
@pytest.mark.slow  # about 15 s; test_named_barrier_sync runs the 2-version ring of stores
def test_a_ring_the_producers_fill_with_stores_in_one_version_matches_numpy() -> None:
    """Synchronous stores into a one-version ring (the consumers' stage ordered before the
    copies): the release stays after wait_group(0), the proxy fence after the wait."""
    stages = {"software_pipeline_order": [1, 2, 0]}
    lowered = _lowered(64, 128, 128, THREAD_FED, **stages)
    shape = _shape(_consumer_loop(lowered))
    assert shape[:2] == ["ptx_mbarrier_wait", "ptx_fence_proxy_async"]
    assert shape[-4:] == ["ptx_wgmma_commit_group", "wait0", "syncwarp", "if (ptx_mbarrier_arrive)"]
    _matches_numpy(lowered, 64, 128, 128)


def test_the_k16_loop_is_unrolled_in_the_cuda_c() -> None:
    """Four wgmmas a k tile in the source, at constant offsets from the version's tiles."""
    source = emit_cuda(_lowered(64, 64, 256))
    assert source.count("wgmma.mma_async") == 4
    assert "for (int k_1" not in source

"""inject-tma-store: a copy from shared memory into a box of a global buffer parameter, in a
block annotated `tma_store`, becomes a proxy fence, a barrier and TMA stores by the first
thread (one bulk group, waited for).

- the golden input (golden/inject_tma_store/slabs: a tile staged as four 16 x 8 slabs) lowered
  for cuda matches numpy in the thread model, which checks the TMA store's reads of shared
  memory against every thread's stores; one barrier, between the fence and the stores;
- the plan samples/gpu/gemm_wgmma_tensorize_128x256.tma_store (the warp-specialized wgmma GEMM,
  its accumulators staged in shared memory by the consumer warpgroups as 32 slabs of 128 x 8
  floats, wgmma_store_m64n256_f32_shared_slabs8) stores its 128 x 256 tile with 32 TMA stores
  after the consumers' named barrier, and matches numpy; the staging tile lies over its 4-deep
  ring (merge-shared-memory-allocations), behind the consumers' barrier after their wgmmas'
  `wait_group(0)`, in 192 KB;
- `tirc run` builds C's tensor map on the host for the store (the fake driver: its box, no
  swizzle);
- a copy inside a condition, or one that computes its elements, is refused at the block or the
  store.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests.codegen_cuda.gpu_plans import GpuPlan, gpu_plans
from tests.codegen_cuda.test_tma import _nvcc_ptx
from tests.runtime.fake_cuda import CUtensorMapSwizzle, FakeDriver
from tirc.analysis.bank_conflicts import bank_conflicts
from tirc.cli.main import main
from tirc.diagnostics import DiagnosticError
from tirc.driver import run_cuda
from tirc.driver.lower import lower_module
from tirc.interp import run
from tirc.ir import expr as E
from tirc.ir import stmt as S
from tirc.ir.functor import walk
from tirc.ir.node import Node
from tirc.runtime.cuda_driver import Device
from tirc.text import parse

GOLDEN = Path(__file__).parent / "golden" / "inject_tma_store" / "slabs.before.tir"


def _nodes(node: Node) -> list[Node]:
    found: list[Node] = []
    walk(node, found.append)
    return found


def _calls(node: Node) -> list[E.Call]:
    found: list[E.Call] = []
    walk(node, lambda item: found.append(item) if isinstance(item, E.Call) else None)
    return found


def test_the_golden_input_lowered_matches_numpy_in_the_thread_model() -> None:
    lowered = lower_module(parse(GOLDEN.read_text(), name=str(GOLDEN)), target="cuda")
    ops = [call.op for call in _calls(lowered["main_kernel"].body)]
    assert ops.count("ptx_tma_store") == 4
    a = np.random.default_rng(1).standard_normal((32, 32)).astype(np.float32)
    c = np.full((32, 32), np.nan, np.float32)
    run(lowered["main"], {"A": a, "C": c}, module=lowered, gpu_model="threads")
    np.testing.assert_array_equal(c, a * 2)


def test_one_barrier_between_the_fence_and_the_stores() -> None:
    """thread-sync keeps the pass's barrier (and would put one there itself: the TMA store
    reads what every thread stored), adding none."""
    lowered = lower_module(parse(GOLDEN.read_text(), name=str(GOLDEN)), target="cuda")
    ops = [call.op for call in _calls(lowered["main_kernel"].body)]
    assert ops.count("tvm_storage_sync") == 1
    fence, barrier = ops.index("ptx_fence_proxy_async"), ops.index("tvm_storage_sync")
    assert fence < barrier < ops.index("ptx_tma_store")
    assert ops[-2:] == ["ptx_tma_store_commit", "ptx_tma_store_wait"]


def test_tirc_run_builds_the_stores_tensor_map(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Up to the launch (the fake driver runs no kernel): C's map, its box innermost first."""
    driver = FakeDriver()
    monkeypatch.setattr(run_cuda, "module_image", _nvcc_ptx(tmp_path))
    monkeypatch.setattr(run_cuda, "Device", lambda: Device(driver, load_ptx=True))
    code = main(["run", str(GOLDEN), "--target", "cuda -arch=sm_90a"])
    assert code == 0, capsys.readouterr()
    maps = [(made.box, made.swizzle) for made in driver.tensor_maps]
    assert maps == [((8, 16), CUtensorMapSwizzle.CU_TENSOR_MAP_SWIZZLE_NONE)]
    (launch,) = driver.launches
    assert launch.block == (32, 1, 1)


def _gemm_plan() -> GpuPlan:
    (plan,) = [p for p in gpu_plans("gemm_wgmma_tensorize_128x256") if p.id.endswith("tma_store")]
    return plan


@pytest.mark.slow  # lowering the plan: about 5 s of CPU, shared with the ptxas tests' cache
def test_the_gemm_plans_staging_tile_lies_over_its_ring_behind_the_consumers_barrier() -> None:
    """32 TMA stores of 128 x 8 boxes, from the one pool of shared.dyn the 4-deep ring is in
    (192 KB: the 128 KB staging tile takes the ring's memory); the consumers' barrier between
    their last wgmma retirement (`wait_group(0)`) and their first staging store, then the one
    before the TMA store."""
    plan = _gemm_plan()
    kernel = plan.lowered()["main_kernel"].body
    calls = _calls(kernel)
    stores = [call for call in calls if call.op == "ptx_tma_store"]
    assert len(stores) == 32  # the staging tile's slabs, each a 128 x 8 box
    assert {tuple(E.int_value(a) for a in call.args[5:7]) for call in stores} == {(128, 8)}
    pools = [n.buffer for n in _nodes(kernel) if isinstance(n, S.AllocBuffer)]
    (pool,) = [buffer for buffer in pools if buffer.scope == "shared.dyn"]
    assert E.int_value(pool.shape[0]) == 4 * 48 * 1024
    loads = [call for call in calls if call.op == "ptx_tma_load"]
    assert {call.args[7] for call in loads} == {call.args[7] for call in stores} == {pool.data}
    events = []
    for node in _nodes(kernel):
        if isinstance(node, E.Call) and node.op in ("ptx_wgmma_wait_group", "ptx_bar_sync"):
            events.append((node.op, *(E.int_value(a) for a in node.args)))
        elif isinstance(node, S.BufferStore) and node.buffer.data is pool.data:
            events.append(("staging store",))
    first_store = events.index(("staging store",))
    assert events[first_store - 2 : first_store] == [
        ("ptx_wgmma_wait_group", 0),
        ("ptx_bar_sync", 1, 256),
    ]
    assert events.count(("ptx_bar_sync", 1, 256)) == 2  # and the one before the TMA store
    # the staging stores: a thread's accumulator pairs as 8-byte stores (one ramp once the
    # simplifier has folded the slab and row offsets into it), every bank once a half warp
    staging = [
        item
        for item in bank_conflicts(plan.lowered())
        if item.access.instruction.startswith("st.shared") and item.access.kernel == "main_kernel"
    ]
    assert len(staging) == 64 and all(
        item.access.instruction == "st.shared 8 B" for item in staging
    )
    assert all(item.unknown is None and item.excess == 0 for item in staging)


@pytest.mark.sweep  # too long for CI: make test-sweep
@pytest.mark.slow  # about 40 s: 384 threads, 20 wgmma m64n256k16 a consumer thread
def test_the_gemm_plan_stores_its_tile_by_tma_and_matches_numpy() -> None:
    """At 128 x 256 x 320 (the plan's test shape: five k tiles, the fifth waiting for a
    released version), with the staging tile over the ring: the thread model checks every
    access to the shared bytes they share."""
    plan = _gemm_plan()
    lowered = plan.lowered()
    shape = dict(plan.defines)
    m, n, k = int(shape["M"]), int(shape["N"]), int(shape["K"])
    rng = np.random.default_rng(3)
    a = rng.uniform(-1, 1, (m, k)).astype(np.float16)
    b = rng.uniform(-1, 1, (k, n)).astype(np.float16)
    args = {"A": a, "B": b, "C": np.full((m, n), np.nan, np.float32)}
    run(lowered["main"], args, module=lowered, gpu_model="threads")
    np.testing.assert_allclose(
        args["C"], a.astype(np.float64) @ b.astype(np.float64), rtol=1e-4, atol=1e-4
    )


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        (
            "                for i, j in T.grid(16, 32):\n",
            "                for i, j in T.grid(16, 32):\n                  if tx < 16:\n",
            "must sit directly in its kernel's thread loops",
        ),
        (
            "C[by * 16 + i, j] = S[j // 8, i, j % 8]",
            "C[by * 16 + i, j] = S[j // 8, i, j % 8] + T.float32(1.0)",  # computed
            "cannot be a TMA store: it stores into 'C' what it does not read from shared memory",
        ),
    ],
)
def test_refused(old: str, new: str, message: str) -> None:
    text = GOLDEN.read_text()
    assert old in text
    with pytest.raises(DiagnosticError) as error:
        lower_module(parse(text.replace(old, new), name="copy.tir"), target="cuda")
    assert message in error.value.diagnostics[0].message
    assert error.value.diagnostics[0].span is not None

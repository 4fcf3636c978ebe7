"""merge-shared-memory-allocations through a warp-specialized split: the epilogue's staging
tile takes the operand ring's memory only where that is safe, behind the consumers' barrier.

The golden input (golden/merge_shared_memory_allocations/warp_specialized_staging: a TMA ring
R that a producer fills and the consumers sum, a staging tile D that they store by TMA):

- with the barrier the pass puts before D's first store, the result matches numpy in the
  thread model; without it, the thread model reports the race on the bytes D and R share
  (a consumer overwrites what another may still read);
- D stays apart from R where that is not safe: the producer loads a tile more than the
  consumers wait for (it may land any time), the consumers' wait on `full` is conditional, the
  consumers read R after D, or the ring is read by a wgmma that no `wait_group(0)` retires
  before D;
- a barrier of the consumers' own between the two is used, none added.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests.transform.helpers import run_passes
from tirc.diagnostics import DiagnosticError
from tirc.interp import run
from tirc.ir import expr as E
from tirc.ir import stmt as S
from tirc.ir.function import IRModule, PrimFunc
from tirc.ir.functor import walk
from tirc.text import parse

GOLDEN = Path(__file__).parent / "golden" / "merge_shared_memory_allocations"
BEFORE = (GOLDEN / "warp_specialized_staging.before.tir").read_text()
AFTER = (GOLDEN / "warp_specialized_staging.after.tir").read_text()
PUT = "            T.ptx_bar_sync(1, 32)\n            D[31 - tx] = acc\n"
LOOP_END = "                T.ptx_mbarrier_arrive(empty.data, k % 2)\n"
WGMMA = (
    '                T.ptx_wgmma("m64n256k16", "float16", "float16", "fp32", '
    'T.tvm_access_ptr(T.type_annotation("float32"), R.data, 0, 64, 1), 0, 16, 1024, 128, 0, '
    'T.tvm_access_ptr(T.type_annotation("float32"), R.data, 0, 64, 1), 0, 8192, 1024, 128, 0, '
    "acc.data, 0, 1)\n"
)


def _main(module: IRModule) -> PrimFunc:
    return module["main"] if "main" in module else module.functions[0][1]


def _merged(text: str) -> tuple[int, int]:
    """(D's element offset in the merged buffer, as its TMA store reads it; the consumers'
    barriers) after the pass."""
    calls: list[E.Call] = []
    merged = run_passes(parse(text, name="split.tir"), "merge-shared-memory-allocations")
    walk(_main(merged).body, lambda n: calls.append(n) if isinstance(n, E.Call) else None)
    (store,) = [call for call in calls if call.op == "ptx_tma_store"]
    return E.int_value(store.args[6]), [call.op for call in calls].count("ptx_bar_sync")


def _sums(text: str) -> np.ndarray:
    a = np.random.default_rng(5).standard_normal((4, 32)).astype(np.float32)
    c = np.full(32, np.nan, np.float32)
    run(_main(parse(text, name="split.tir")), {"A": a, "C": c}, gpu_model="threads")
    np.testing.assert_allclose(c, a.sum(axis=0)[::-1], rtol=1e-6)
    return c


def test_the_staging_tile_takes_the_rings_memory_behind_the_consumers_barrier() -> None:
    assert _merged(BEFORE) == (0, 2)
    _sums(AFTER)


def test_without_that_barrier_the_thread_model_reports_the_race() -> None:
    assert PUT in AFTER
    with pytest.raises(DiagnosticError, match="data race on shared memory 'buf_dyn_shmem'"):
        _sums(AFTER.replace(PUT, "            D[31 - tx] = acc\n"))


def test_a_barrier_the_consumers_have_is_used() -> None:
    text = BEFORE.replace(LOOP_END, LOOP_END + "            T.ptx_bar_sync(1, 32)\n", 1)
    assert _merged(text) == (0, 2)


def test_a_named_barrier_of_a_computed_id_is_not_the_consumers() -> None:
    """`bar.sync tx // 32 + 2, 32` (an id known where it runs) orders no one the pass can
    name: the consumers' barrier still goes before D."""
    text = BEFORE.replace(LOOP_END, LOOP_END + "            T.ptx_bar_sync(tx // 32 + 2, 32)\n", 1)
    assert _merged(text) == (0, 3)


@pytest.mark.parametrize(
    ("old", "new"),
    [
        pytest.param(
            "                for k in range(4):\n                    if k >= 2:",
            "                for k in range(5):\n                    if k >= 2:",
            id="the-producer-loads-a-tile-no-consumer-waits-for",
        ),
        pytest.param(
            "                T.ptx_mbarrier_wait(full.data, k % 2, k // 2 % 2)\n",
            "                if k < 3:\n"
            "                    T.ptx_mbarrier_wait(full.data, k % 2, k // 2 % 2)\n",
            id="the-consumers-wait-on-full-conditionally",
        ),
        pytest.param(
            "            T.ptx_fence_proxy_async()\n            T.ptx_bar_sync",
            "            acc[0] = acc[0] + R[tx]\n            T.ptx_fence_proxy_async()\n"
            "            T.ptx_bar_sync",
            id="the-consumers-read-the-ring-after-staging",
        ),
        pytest.param(
            "                acc[0] = acc[0] + R[k % 2 * 32 + tx]\n",
            WGMMA,
            id="a-wgmma-reads-the-ring-and-no-wait-retires-it",
        ),
    ],
)
def test_unsafe_reuse_stays_apart(old: str, new: str) -> None:
    assert old in BEFORE
    assert _merged(BEFORE.replace(old, new, 1)) == (64, 1)  # D after R's 256 bytes


def test_a_wgmma_retired_before_the_staging_is_safe() -> None:
    text = BEFORE.replace("                acc[0] = acc[0] + R[k % 2 * 32 + tx]\n", WGMMA)
    text = text.replace(LOOP_END, LOOP_END + "            T.ptx_wgmma_wait_group(0)\n", 1)
    assert _merged(text) == (0, 2)


WARP_SYNC = """
@T.prim_func(s_tir=True)
def main(A: T.Buffer((32,), "float32"), C: T.Buffer((32,), "float32")):
    tx = T.launch_thread("threadIdx.x", 64)
    S1 = T.alloc_buffer((32,), scope="shared.dyn")
    S2 = T.alloc_buffer((32,), scope="shared.dyn")
    if tx < 32:
        S1[tx] = A[tx]
    T.tvm_storage_sync("SCOPE")
    if tx >= 32:
        C[tx - 32] = S1[63 - tx]
    T.tvm_storage_sync("SCOPE")
    if tx >= 32:
        S2[tx - 32] = C[tx - 32]
"""


@pytest.mark.parametrize(("scope", "reused"), [("shared", True), ("warp", False)])
def test_only_a_block_barrier_lets_a_buffer_reuse_memory(scope: str, reused: bool) -> None:
    """A `__syncwarp` (`tvm_storage_sync("warp")`) orders one warp: S1's readers (the second
    warp) are not its writers', so S2 may not take S1's bytes across it."""
    merged = run_passes(parse(WARP_SYNC.replace("SCOPE", scope)), "merge-shared-memory-allocations")
    pools = []
    walk(_main(merged).body, lambda n: pools.append(n) if isinstance(n, S.AllocBuffer) else None)
    (pool,) = pools
    assert E.int_value(pool.buffer.shape[0]) == (128 if reused else 256)

"""A wgmma reads its shared operands asynchronously (the PTX ISA: at any time until the
`wgmma.wait_group` that retires its group), and the thread model's race tracker holds its
reads pending until then (tirc.interp.threads.wgmma, RaceTracker.read_async): a write to the
tiles before the retirement is a data race at the write, with a note at the wgmma, whoever
writes (the issuer too) and whatever barrier stands between; once retired, the reads are the
thread's reads of that moment, which only a release after the retirement orders before a
refill. The consumers' k loop of the fast Hopper GEMMs (wait_group(1), then release the
previous stage) is exactly right; releasing before the wait, or the current stage after
wait_group(1), is a race at the TMA load that refills the stage. Elected arrivals: __syncwarp
orders the lanes of its warp (and no other), so one arrival a warp after it releases what
every lane did. In a cluster, a peer block's write through mapa races with a pending wgmma
too, a cluster barrier notwithstanding."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from tirc.diagnostics import Diagnostic, DiagnosticError
from tirc.interp.runner import run
from tirc.text import parse

# one warpgroup, one wgmma m64n8k16: A (64 x 16) K-major in 8 x 8 core matrices (LBO 128,
# SBO 256 bytes), B (16 x 8) MN-major; AFTER follows the commit (indented for the kernel)
SINGLE = """
@T.prim_func
def main(
    A: T.Buffer((64, 16), "float16"), B: T.Buffer((16, 8), "float16"),
    C: T.Buffer((64, 8), "float32"),
):
    tx = T.launch_thread("threadIdx.x", 128)
    acc = T.alloc_buffer((4,), "float32", scope="local")
    SA = T.alloc_buffer((1024,), "float16", scope="shared")
    SB = T.alloc_buffer((128,), "float16", scope="shared")
    for e in range(8):
        m: T.int32 = (e * 128 + tx) // 16
        SA[m % 8 * 8 + m // 8 * 128 + tx % 8 + tx % 16 // 8 * 64] = A[m, tx % 16]
    SB[tx] = B[tx // 8, tx % 8]
    T.tvm_storage_sync("shared")
    T.ptx_wgmma_fence()
    T.ptx_wgmma(
        "m64n8k16", "fp16", "fp16", "fp32",
        SA.data, 0, 128, 256, 0, 0, SB.data, 0, 128, 128, 0, 1, acc.data, 0, 0
    )
    T.ptx_wgmma_commit_group()
AFTER
    for i in range(4):
        C[tx // 32 * 16 + tx % 32 // 4 + i // 2 * 8, tx % 4 * 2 + i % 2] = acc[i]
"""

RNG = np.random.default_rng(6)
A16 = RNG.uniform(1, 2, (64, 16)).astype(np.float16)  # never 0 or -1, the values stored
B16 = RNG.uniform(1, 2, (16, 8)).astype(np.float16)


def _single_text(after: str) -> str:
    lines = after.strip("\n").splitlines()
    return SINGLE.replace("AFTER", "\n".join("    " + line for line in lines))


def _single(text: str) -> np.ndarray:
    module = parse(text)
    c = np.full((64, 8), np.nan, np.float32)
    run(module["main"], {"A": A16, "B": B16, "C": c}, module=module, gpu_model="threads")
    return c


def _race(execute: Callable[[str], object], text: str) -> Diagnostic:
    with pytest.raises(DiagnosticError) as error:
        execute(text)
    diagnostic = error.value.diagnostics[0]
    assert "data race on shared memory" in diagnostic.message, diagnostic.message
    return diagnostic


def _line(text: str, marker: str) -> int:
    (line,) = [i for i, item in enumerate(text.splitlines(), 1) if marker in item]
    return line


def _lines(diagnostic: Diagnostic) -> tuple[int, list[int]]:
    """The diagnostic's line and its notes' lines."""
    assert diagnostic.span is not None
    return diagnostic.span.line, [note.span.line for note in diagnostic.notes if note.span]


def test_a_barrier_after_the_wait_orders_the_reads_before_a_store() -> None:
    after = 'T.ptx_wgmma_wait_group(0)\nT.tvm_storage_sync("shared")\nSA[tx] = T.float16(-1)'
    c = _single(_single_text(after))
    np.testing.assert_allclose(c, A16.astype(np.float64) @ B16.astype(np.float64), rtol=1e-6)


def _single_race(after: str) -> tuple[Diagnostic, str]:
    text = _single_text(after)
    return _race(_single, text), text


def test_the_issuers_own_store_before_the_wait_is_a_race_with_its_wgmma() -> None:
    """Thread 0 stores into a row its own wgmma reads, in program order after the issue: the
    wgmma may read it later still."""
    diagnostic, text = _single_race("SA[tx] = T.float16(-1)\nT.ptx_wgmma_wait_group(0)")
    line, notes = _lines(diagnostic)
    assert line == _line(text, "SA[tx] = T.float16(-1)")
    assert notes == [_line(text, "T.ptx_wgmma(")]
    assert "thread (0, 0, 0) of block (0, 0, 0) writes it while a wgmma" in diagnostic.message
    assert "issued may still read it" in diagnostic.message


def test_a_barrier_does_not_retire_a_wgmma() -> None:
    """__syncthreads between the issue and the store: every thread has issued its wgmma, none
    has retired it."""
    diagnostic, text = _single_race(
        'T.tvm_storage_sync("shared")\nSA[tx] = T.float16(-1)\nT.ptx_wgmma_wait_group(0)'
    )
    line, notes = _lines(diagnostic)
    assert (line, notes) == (_line(text, "SA[tx] = T.float16(-1)"), [_line(text, "T.ptx_wgmma(")])


def test_a_cp_async_into_a_pending_tile_is_a_race() -> None:
    diagnostic, text = _single_race(
        'T.ptx_cp_async("float16", SB.data, tx // 16 * 8, A.data, 0, 16)\n'
        "T.ptx_commit_group()\nT.ptx_wait_group(0)\nT.ptx_wgmma_wait_group(0)"
    )
    line, notes = _lines(diagnostic)
    assert (line, notes) == (_line(text, "T.ptx_cp_async("), [_line(text, "T.ptx_wgmma(")])


def test_a_store_to_bytes_no_wgmma_reads_is_not() -> None:
    """SB holds 128 halves: the wgmma reads them all; SA past them is not read (a store there
    before the wait is fine)."""
    text = _single_text("SA[1024 + tx] = T.float16(-1)\nT.ptx_wgmma_wait_group(0)")
    c = _single(text.replace("(1024,)", "(1152,)"))
    np.testing.assert_allclose(c, A16.astype(np.float64) @ B16.astype(np.float64), rtol=1e-6)


# a TMA-fed ring of 2 stages: thread 128 (of the producer warpgroup) loads A's 64 x 64 and B's
# 64 x 64 tiles of each k tile with the 128-byte swizzle; the warpgroup of threads 0-127
# multiplies them with 4 wgmma m64n64k16 a k tile (the loop of matmul_fp16_hopper.tir) and
# releases stages on `empty` as RELEASE says (indented for the loop body)
RING = """
@T.prim_func
def main(
    A: T.Buffer((64, 192), "float16"), B: T.Buffer((192, 64), "float16"),
    C: T.Buffer((64, 64), "float32"),
):
    tx = T.launch_thread("threadIdx.x", 256)
    acc = T.alloc_buffer((32,), "float32", scope="local")
    S = T.alloc_buffer((16384,), "float16", scope="shared")
    full = T.alloc_buffer((2,), "uint64", scope="shared")
    empty = T.alloc_buffer((2,), "uint64", scope="shared")
    if tx == 0:
        for s in range(2):
            T.ptx_mbarrier_init(full.data, s, 1)
            T.ptx_mbarrier_init(empty.data, s, 128)
        T.ptx_fence_proxy_async()
    T.tvm_storage_sync("shared")
    if tx == 128:
        for k in range(3):
            if k >= 2:
                T.ptx_mbarrier_wait(empty.data, k % 2, (k // 2 - 1) % 2)
            T.ptx_mbarrier_arrive_expect_tx(full.data, k % 2, 16384)
            T.ptx_tma_load(
                "float16", A.data, 2, 128, 64, 192, 64, 64, S.data, k % 2 * 8192,
                full.data, k % 2, 0, k * 64
            )
            T.ptx_tma_load(
                "float16", B.data, 2, 128, 192, 64, 64, 64, S.data, k % 2 * 8192 + 4096,
                full.data, k % 2, k * 64, 0
            )
    elif tx < 128:
        for i in range(32):
            acc[i] = T.float32(0)
        for k in range(3):
            T.ptx_mbarrier_wait(full.data, k % 2, k // 2 % 2)
            T.ptx_wgmma_fence()
            for kk in T.unroll(4):
                T.ptx_wgmma(
                    "m64n64k16", "fp16", "fp16", "fp32",
                    S.data, k % 2 * 8192 + kk * 16, 16, 1024, 128, 0,
                    S.data, k % 2 * 8192 + 4096 + kk * 1024, 8192, 1024, 128, 1,
                    acc.data, 0, 1
                )
            T.ptx_wgmma_commit_group()
RELEASE
        T.ptx_wgmma_wait_group(0)
        for i in range(32):
            row: T.int32 = tx // 32 * 16 + tx % 32 // 4 + i % 4 // 2 * 8
            C[row, i // 4 * 8 + tx % 4 * 2 + i % 2] = acc[i]
"""

RIGHT = """
T.ptx_wgmma_wait_group(1)
if k > 0:
    T.ptx_mbarrier_arrive(empty.data, (k - 1) % 2)
"""


def _ring_text(release: str) -> str:
    lines = release.strip("\n").splitlines()
    return RING.replace("RELEASE", "\n".join(" " * 12 + line for line in lines))


def _ring(text: str) -> np.ndarray:
    module = parse(text)
    rng = np.random.default_rng(18)
    a = rng.uniform(-1, 1, (64, 192)).astype(np.float16)
    b = rng.uniform(-1, 1, (192, 64)).astype(np.float16)
    c = np.full((64, 64), np.nan, np.float32)
    run(module["main"], {"A": a, "B": b, "C": c}, module=module, gpu_model="threads")
    np.testing.assert_allclose(c, a.astype(np.float64) @ b.astype(np.float64), atol=1e-4)
    return c


def test_the_previous_stage_released_after_wait_group_1_is_race_free() -> None:
    """The third fill waits for stage 0, released in the second k tile once the first
    k tile's group retired, while the second k tile's wgmmas may still run."""
    _ring(_ring_text(RIGHT))


RETIRED = "lands there after thread (0, 0, 0) of block (0, 0, 0) read it, and no release"
IN_FLIGHT = "lands on it while a wgmma thread (0, 0, 0) of block (0, 0, 0) issued may still"


@pytest.mark.parametrize(
    ("release", "found"),
    [
        # the stage released before its wgmmas retire; the refill lands when the producer
        # waits, after the consumers retired the group: their read of the stage ended after
        # their release, which the producer acquired
        ("T.ptx_mbarrier_arrive(empty.data, k % 2)\nT.ptx_wgmma_wait_group(0)", RETIRED),
        # one group left in flight, and the stage it reads released
        ("T.ptx_wgmma_wait_group(1)\nT.ptx_mbarrier_arrive(empty.data, k % 2)", RETIRED),
        # no wait in the loop: the refill lands while the first k tile's wgmmas may still run
        ("T.ptx_mbarrier_arrive(empty.data, k % 2)", IN_FLIGHT),
    ],
    ids=["release_before_wait", "current_stage_after_wait_1", "no_wait"],
)
def test_a_release_before_the_retirement_races_with_the_refill(release: str, found: str) -> None:
    text = _ring_text(release)
    diagnostic = _race(_ring, text)
    message = diagnostic.message
    line, notes = _lines(diagnostic)
    assert line == _line(text, '"float16", A.data') - 1  # the A load's T.ptx_tma_load(
    assert "this TMA load (issued by thread (128, 0, 0) of block (0, 0, 0))" in message
    assert found in message
    assert notes == [_line(text, "T.ptx_wgmma(")]


# elected arrivals: `__syncwarp` orders the lanes of a warp (each lane's accesses before it
# before what every lane does after), so the first lane's arrival releases what all did
WARP = """
@T.prim_func
def main(A: T.Buffer((64,), "float32"), B: T.Buffer((64,), "float32")):
    tx = T.launch_thread("threadIdx.x", 64)
    S = T.alloc_buffer((64,), "float32", scope="shared")
    bar = T.alloc_buffer((1,), "uint64", scope="shared")
    if tx == 0:
        T.ptx_mbarrier_init(bar.data, 0, 1)
    T.tvm_storage_sync("shared")
    if tx < 32:
        S[tx] = A[tx]
BODY
"""
A64 = np.arange(64, dtype=np.float32) + 1


def _warp(body: str) -> np.ndarray:
    lines = body.strip("\n").splitlines()
    module = parse(WARP.replace("BODY", "\n".join("    " + line for line in lines)))
    b = np.zeros(64, np.float32)
    run(module["main"], {"A": A64, "B": b}, module=module, gpu_model="threads")
    return b


# the first warp's lanes exchange their elements (lane l reads lane 31 - l's)
EXCHANGE = "if tx < 32:\n    SYNC\n    B[tx] = S[31 - tx]"


def test_syncwarp_orders_the_lanes_of_its_warp() -> None:
    b = _warp(EXCHANGE.replace("SYNC", 'T.tvm_storage_sync("warp")'))
    np.testing.assert_array_equal(b[:32], A64[:32][::-1])


def test_without_syncwarp_the_lanes_race() -> None:
    with pytest.raises(DiagnosticError, match="data race on shared memory 'S'"):
        _warp(EXCHANGE.replace("SYNC", "T.evaluate(0)"))


def test_syncwarp_does_not_order_another_warp() -> None:
    """The second warp reads after both warps' __syncwarp: the first warp's stores are still
    unordered before it."""
    body = 'T.tvm_storage_sync("warp")\nif tx >= 32:\n    B[tx] = S[tx - 32]'
    with pytest.raises(DiagnosticError) as error:
        _warp(body)
    message = error.value.diagnostics[0].message
    assert "thread (32, 0, 0) of block (0, 0, 0) reads it after thread (0, 0, 0)" in message


# the first lane arrives on the barrier after __syncwarp (or not); the second warp waits on
# it and reads what every lane of the first stored
ELECTED = """
if tx < 32:
    SYNC
    if tx == 0:
        T.ptx_mbarrier_arrive(bar.data, 0)
else:
    T.ptx_mbarrier_wait(bar.data, 0, 0)
    B[tx] = S[63 - tx]
"""


def test_the_first_lanes_arrival_after_syncwarp_releases_every_lane() -> None:
    b = _warp(ELECTED.replace("SYNC", 'T.tvm_storage_sync("warp")'))
    np.testing.assert_array_equal(b[32:], A64[:32][::-1])


def test_without_syncwarp_the_first_lanes_arrival_releases_its_own_stores_only() -> None:
    with pytest.raises(DiagnosticError) as error:
        _warp(ELECTED.replace("SYNC", "T.evaluate(0)"))
    message = error.value.diagnostics[0].message
    # thread 32 reads lane 31's element first
    assert "thread (32, 0, 0) of block (0, 0, 0) reads it after thread (31, 0, 0)" in message


ELECTED_RING = """
T.ptx_wgmma_wait_group(1)
if k > 0:
    SYNC
    if tx % 32 == 0:
        T.ptx_mbarrier_arrive(empty.data, (k - 1) % 2)
"""


def _elected_ring(sync: str) -> str:
    text = _ring_text(ELECTED_RING.replace("SYNC", sync))
    return text.replace(
        "T.ptx_mbarrier_init(empty.data, s, 128)", "T.ptx_mbarrier_init(empty.data, s, 4)"
    )


def test_one_arrival_a_warp_after_syncwarp_releases_the_stage() -> None:
    """The consumer warpgroup's 4 warps each arrive once (`empty` counts 4): the lanes'
    retirements, ordered before the first lane's arrival by __syncwarp."""
    _ring(_elected_ring('T.tvm_storage_sync("warp")'))


def test_one_arrival_a_warp_without_syncwarp_races_with_the_refill() -> None:
    text = _elected_ring("T.evaluate(0)")
    diagnostic = _race(_ring, text)
    line, notes = _lines(diagnostic)
    assert line == _line(text, '"float16", A.data') - 1  # the A load's T.ptx_tma_load(
    assert "lands there after thread (1, 0, 0) of block (0, 0, 0) read it" in diagnostic.message
    assert notes == [_line(text, "T.ptx_wgmma(")]


# two blocks in a cluster: block 0's warpgroup issues the wgmma and later retires it, a cluster
# barrier after each; block 1's threads write block 0's A tile through mapa after one of them
CLUSTER = """
@T.prim_func
def main(
    A: T.Buffer((64, 16), "float16"), B: T.Buffer((16, 8), "float16"),
    C: T.Buffer((64, 8), "float32"),
):
    T.func_attr({"cluster_dims": [2, 1, 1]})
    bx = T.launch_thread("blockIdx.x", 2)
    tx = T.launch_thread("threadIdx.x", 128)
    acc = T.alloc_buffer((4,), "float32", scope="local")
    SA = T.alloc_buffer((1024,), "float16", scope="shared")
    SB = T.alloc_buffer((128,), "float16", scope="shared")
    for e in range(8):
        m: T.int32 = (e * 128 + tx) // 16
        SA[m % 8 * 8 + m // 8 * 128 + tx % 8 + tx % 16 // 8 * 64] = A[m, tx % 16]
    SB[tx] = B[tx // 8, tx % 8]
    T.tvm_storage_sync("shared")
    if bx == 0:
        T.ptx_wgmma_fence()
        T.ptx_wgmma(
            "m64n8k16", "fp16", "fp16", "fp32",
            SA.data, 0, 128, 256, 0, 0, SB.data, 0, 128, 128, 0, 1, acc.data, 0, 0
        )
        T.ptx_wgmma_commit_group()
    T.ptx_barrier_cluster_arrive()
    T.ptx_barrier_cluster_wait()
    EARLY
    T.ptx_barrier_cluster_arrive()
    T.ptx_barrier_cluster_wait()
    if bx == 0:
        T.ptx_wgmma_wait_group(0)
    MIDDLE
    T.ptx_barrier_cluster_arrive()
    T.ptx_barrier_cluster_wait()
    LATE
    T.ptx_barrier_cluster_arrive()
    T.ptx_barrier_cluster_wait()
    if bx == 0:
        for i in range(4):
            C[tx // 32 * 16 + tx % 32 // 4 + i // 2 * 8, tx % 4 * 2 + i % 2] = acc[i]
"""
PEER_WRITE = """if bx == 1:
        peer: T.let[T.handle("float16", "shared")] = T.ptx_map_shared_cluster(SA.data, 0)
        R = T.decl_buffer((1024,), "float16", data=peer, scope="shared")
        R[tx] = T.float16(-1)"""


def _cluster(at: str) -> str:
    """CLUSTER with block 1's write at `at` (EARLY, MIDDLE or LATE)."""
    text = CLUSTER.replace(at, PEER_WRITE)
    for place in ("EARLY", "MIDDLE", "LATE"):
        text = text.replace(place, "T.evaluate(0)")
    return text


def test_a_peer_blocks_write_after_a_cluster_barrier_races_with_a_pending_wgmma() -> None:
    """The cluster barrier orders block 1's write after the issue, not after the retirement."""
    text = _cluster("EARLY")
    diagnostic = _race(_single, text)
    line, notes = _lines(diagnostic)
    assert (line, notes) == (_line(text, "R[tx] = T.float16(-1)"), [_line(text, "T.ptx_wgmma(")])
    assert "a thread of block (1, 0, 0) writes it while a wgmma" in diagnostic.message


def test_a_peer_blocks_write_right_after_the_retirement_races_with_the_read() -> None:
    """Block 0 retires the wgmma, and block 1 writes with no cluster barrier between."""
    text = _cluster("MIDDLE")
    diagnostic = _race(_single, text)
    line, notes = _lines(diagnostic)
    assert (line, notes) == (_line(text, "R[tx] = T.float16(-1)"), [_line(text, "T.ptx_wgmma(")])
    assert "after a thread of block (0, 0, 0) read it" in diagnostic.message


def test_a_peer_blocks_write_after_the_retirement_and_a_cluster_barrier_is_not() -> None:
    c = _single(_cluster("LATE"))
    np.testing.assert_allclose(c, A16.astype(np.float64) @ B16.astype(np.float64), rtol=1e-6)

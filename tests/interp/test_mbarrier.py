"""The thread model's mbarriers and TMA loads (tirc.interp.threads.mbarrier) as the PTX ISA
defines them: phases complete when the expected arrivals and the transaction bytes are all in,
a wait on a parity returns once that phase has completed, a TMA copy lands only when waited
for (a read before the wait races with it), out-of-bounds box elements are zeros, the
swizzled layout is the hardware's, and a block whose threads all wait forever is an error at
the wait."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tirc.diagnostics import DiagnosticError
from tirc.interp.runner import run
from tirc.ir.tma import swizzled_byte
from tirc.text import parse

SAMPLE = Path(__file__).parents[2] / "samples" / "gpu" / "tma_copy.tir"


def _run(text: str, **arrays: np.ndarray) -> None:
    module = parse(text)
    run(module["main"], arrays, module=module, gpu_model="threads")


def test_sample_tma_copy_matches_numpy() -> None:
    from tirc.api import parse as parse_file

    module = parse_file(SAMPLE, defines={"M": 64, "N": 128})
    a = np.random.default_rng(1).standard_normal((64, 128)).astype("float16")
    b = np.zeros_like(a)
    run(module["main"], {"A": a, "B": b}, module=module, gpu_model="threads")
    np.testing.assert_array_equal(b[:64], a * np.float16(2))


# two threads arrive on a barrier expecting 2; thread 0 also counts a copy of 64 floats
# (256 bytes) of a 4 x 16 box at (y, x) of a 8 x 32 tensor; every thread then waits on
# the parity and copies the tile (as it lies in shared memory, the swizzle applied) out
PHASES = """
@T.prim_func
def main(A: T.Buffer((8, 32), "float32"), B: T.Buffer((65,), "float32")):
    tx = T.launch_thread("threadIdx.x", 64)
    S = T.alloc_buffer((64,), "float32", scope="shared")
    bar = T.alloc_buffer((2,), "uint64", scope="shared")
    if tx == 0:
        T.ptx_mbarrier_init(bar.data, 1, 2)
    T.tvm_storage_sync("shared")
    if tx == 0:
        T.ptx_mbarrier_arrive_expect_tx(bar.data, 1, 256)
        T.ptx_tma_load(
            "float32", A.data, 2, {swizzle}, 8, 32, 4, 16, S.data, 0, bar.data, 1, {y}, {x}
        )
    {early}
    if tx == 1:
        T.ptx_mbarrier_arrive(bar.data, 1)
    T.ptx_mbarrier_wait(bar.data, 1, {parity})
    B[tx] = S[tx]
"""


def _phases(y: int = 2, x: int = 8, parity: int = 0, swizzle: int = 0, early: str = "") -> str:
    return PHASES.format(swizzle=swizzle, parity=parity, y=y, x=x, early=early)


def _box(a: np.ndarray, y: int, x: int) -> np.ndarray:
    padded = np.zeros((8 + 8, 32 + 32), "float32")
    padded[4 : 4 + 8, 16 : 16 + 32] = a
    return padded[4 + y : 4 + y + 4, 16 + x : 16 + x + 16].reshape(-1)


A = np.arange(256, dtype="float32").reshape(8, 32) + 1


@pytest.mark.parametrize(("y", "x"), [(2, 8), (-2, 0), (6, 24), (0, -8)])
def test_box_lands_after_the_phase_completes_with_zeros_outside(y: int, x: int) -> None:
    b = np.full(65, -1, "float32")
    _run(_phases(y, x), A=A.copy(), B=b)
    np.testing.assert_array_equal(b[:64], _box(A, y, x))


def test_swizzled_box_lands_where_the_hardware_puts_it() -> None:
    b = np.full(65, -1, "float32")
    # 64-byte rows (16 floats) under the 64-byte swizzle; 4 rows of the box: 256 bytes
    _run(_phases(0, 0, swizzle=64), A=A.copy(), B=b)
    tile = _box(A, 0, 0)
    expected = np.empty(64, "float32")
    for element in range(64):
        expected[swizzled_byte(element * 4, 64) // 4] = tile[element]
    np.testing.assert_array_equal(b[:64], expected)
    assert not np.array_equal(b[:64], tile)


def test_a_read_before_the_wait_races_with_the_copy() -> None:
    # thread 5 reads the tile while the copy is in flight: the copy may land before or after
    early = "if tx == 5:\n        B[64] = S[5] + T.float32(100)"
    with pytest.raises(DiagnosticError) as error:
        _run(_phases(early=early), A=A.copy(), B=np.full(65, -1, "float32"))
    diagnostic = error.value.diagnostics[0]
    assert diagnostic.message.startswith(
        "data race on shared memory 'S' at byte 20: this TMA load (issued by thread (0, 0, 0) "
        "of block (0, 0, 0)) lands there after thread (5, 0, 0) of block (0, 0, 0) read it"
    )
    assert diagnostic.span is not None and diagnostic.span.line == 12  # the TMA load
    (note,) = diagnostic.notes
    assert note.span is not None and note.span.line == 16  # the read


def test_waiting_on_the_completed_phase_parity_returns_at_once() -> None:
    # parity 1 is the phase before phase 0, complete from the start (PTX's convention): the
    # threads go on without the copy, and read the tile before it lands
    b = np.full(65, -1, "float32")
    _run(_phases(parity=1), A=A.copy(), B=b)
    np.testing.assert_array_equal(b[:64], np.zeros(64, "float32"))


DEADLOCK = """
@T.prim_func
def main(B: T.Buffer((32,), "float32")):
    tx = T.launch_thread("threadIdx.x", 32)
    bar = T.alloc_buffer((1,), "uint64", scope="shared")
    if tx == 0:
        T.ptx_mbarrier_init(bar.data, 0, COUNT)
    T.tvm_storage_sync("shared")
    T.ptx_mbarrier_arrive(bar.data, 0)
    T.ptx_mbarrier_wait(bar.data, 0, PARITY)
    B[tx] = T.float32(1)
"""


def test_all_threads_arriving_complete_phase_zero() -> None:
    b = np.zeros(32, "float32")
    _run(DEADLOCK.replace("COUNT", "32").replace("PARITY", "0"), B=b)
    assert (b == 1).all()


@pytest.mark.parametrize(
    ("count", "parity", "state"),
    [
        ("33", "0", "phase 0 with 1 of 33 arrivals and 0 transaction bytes pending"),
        ("32", "1", "phase 1 with 32 of 32 arrivals and 0 transaction bytes pending"),
    ],
)
def test_a_wait_that_never_completes_is_an_error_at_the_wait(
    count: str, parity: str, state: str
) -> None:
    with pytest.raises(DiagnosticError) as error:
        _run(DEADLOCK.replace("COUNT", count).replace("PARITY", parity), B=np.zeros(32, "float32"))
    diagnostic = error.value.diagnostics[0]
    assert "every thread of the block waits and none can go on" in diagnostic.message
    assert state in diagnostic.message
    assert diagnostic.span is not None and diagnostic.span.line == 10


def test_arrivals_past_a_phase_count_toward_the_next() -> None:
    # 32 threads arrive on a barrier of 16: phases 0 and 1 complete; the wait for parity 1
    # (phase 1) returns, as its phase has completed
    text = DEADLOCK.replace("COUNT", "16").replace("PARITY", "1")
    b = np.zeros(32, "float32")
    _run(text, B=b)
    assert (b == 1).all()


def test_an_arrival_count_of_zero_is_an_error() -> None:
    with pytest.raises(DiagnosticError) as error:
        _run(DEADLOCK.replace("COUNT", "0").replace("PARITY", "0"), B=np.zeros(32, "float32"))
    assert "the arrival count is 1 to 1048575, not 0" in error.value.diagnostics[0].message


# a producer warp (its lane 0) streams the K // 16 tiles of 16 x 32 floats of A through
# STAGES shared stages by TMA; a consumer warp sums them into B. Stage s is full (full[s]:
# one arrival and the tile's bytes) and empty again (empty[s]: the 32 consumers' arrivals);
# use n of a stage waits for full parity n % 2, the producer for empty parity (n + 1) % 2,
# which a fresh barrier has already passed
PRODUCER_CONSUMER = """
@T.prim_func
def main(A: T.Buffer((K, 32), "float32"), B: T.Buffer((32,), "float32")):
    tx = T.launch_thread("threadIdx.x", 64)
    S = T.alloc_buffer((STAGES * 512,), "float32", scope="shared")
    full = T.alloc_buffer((STAGES,), "uint64", scope="shared")
    empty = T.alloc_buffer((STAGES,), "uint64", scope="shared")
    acc = T.alloc_buffer((1,), "float32", scope="local")
    if tx == 0:
        for s in range(STAGES):
            T.ptx_mbarrier_init(full.data, s, 1)
            T.ptx_mbarrier_init(empty.data, s, 32)
        T.ptx_fence_proxy_async()
    T.tvm_storage_sync("shared")
    if tx == 32:
        for k in range(K // 16):
            T.ptx_mbarrier_wait(empty.data, k % STAGES, (k // STAGES + 1) % 2)
            T.ptx_mbarrier_arrive_expect_tx(full.data, k % STAGES, 2048)
            T.ptx_tma_load(
                "float32", A.data, 2, 128, K, 32, 16, 32, S.data, k % STAGES * 512,
                full.data, k % STAGES, k * 16, 0
            )
    if tx < 32:
        acc[0] = T.float32(0)
        for k in range(K // 16):
            T.ptx_mbarrier_wait(full.data, k % STAGES, k // STAGES % 2)
            for r in range(16):
                acc[0] = acc[0] + S[k % STAGES * 512 + r * 32 + T.bitwise_xor(tx, r % 8 * 4)]
            ARRIVE
        B[tx] = acc[0]
"""


@pytest.mark.parametrize("stages", [1, 2, 3])
def test_producer_and_consumers_through_full_and_empty_barriers(stages: int) -> None:
    text = PRODUCER_CONSUMER.replace("STAGES", str(stages)).replace("K", "128")
    text = text.replace("ARRIVE", f"T.ptx_mbarrier_arrive(empty.data, k % {stages})")
    a = np.random.default_rng(6).standard_normal((128, 32)).astype("float32")
    b = np.zeros(32, "float32")
    _run(text, A=a, B=b)
    np.testing.assert_allclose(b, a.sum(axis=0), rtol=1e-5)


def test_a_consumer_that_never_frees_its_stage_deadlocks_the_producer() -> None:
    text = PRODUCER_CONSUMER.replace("STAGES", "2").replace("K", "128").replace("ARRIVE", "")
    with pytest.raises(DiagnosticError) as error:
        _run(text, A=np.zeros((128, 32), "float32"), B=np.zeros(32, "float32"))
    message = error.value.diagnostics[0].message
    assert "every thread of the block waits and none can go on" in message
    # the consumers wait for stage 0's second fill, which the producer, waiting for stage 0
    # to be emptied, never issues
    assert "parity 1: phase 1 with 1 of 1 arrivals" in message and "(33 threads waiting)" in message
    ((span, note),) = [(n.span, n.message) for n in error.value.diagnostics[0].notes]
    assert note == (
        "1 thread waits here, for the mbarrier's parity 0: phase 0 with 32 of 32 arrivals and "
        "0 transaction bytes pending"
    )
    assert span is not None and span.line == 17


def test_the_deadlock_is_reported_while_other_threads_wait_at_a_barrier() -> None:
    """Threads the roles leave idle reach the block's last barrier and wait there: the block
    is still deadlocked on the mbarriers (the barrier needs the waiting roles too), which is
    what is reported, not a mismatch of barriers."""
    text = PRODUCER_CONSUMER.replace("STAGES", "2").replace("K", "128").replace("ARRIVE", "")
    text = text.replace(
        "        B[tx] = acc[0]\n", '        B[tx] = acc[0]\n    T.tvm_storage_sync("shared")\n'
    )
    with pytest.raises(DiagnosticError) as error:
        _run(text, A=np.zeros((128, 32), "float32"), B=np.zeros(32, "float32"))
    message = error.value.diagnostics[0].message
    assert "every thread of the block waits and none can go on" in message
    assert "(64 threads waiting)" in message
    notes = sorted(n.message for n in error.value.diagnostics[0].notes)
    assert notes[0] == (
        "1 thread waits here, for the mbarrier's parity 0: phase 0 with 32 of 32 arrivals and "
        "0 transaction bytes pending"
    )
    assert notes[1] == "31 threads wait here, at a barrier"


def test_consumers_freeing_a_stage_before_reading_it_race_with_its_refill() -> None:
    text = PRODUCER_CONSUMER.replace("STAGES", "2").replace("K", "128").replace("ARRIVE", "")
    text = text.replace(
        "k // 2 % 2)\n", "k // 2 % 2)\n            T.ptx_mbarrier_arrive(empty.data, k % 2)\n"
    )
    assert text.count("ptx_mbarrier_arrive(empty.data") == 1
    with pytest.raises(DiagnosticError) as error:
        _run(text, A=np.zeros((128, 32), "float32"), B=np.zeros(32, "float32"))
    message = error.value.diagnostics[0].message
    assert "this TMA load (issued by thread (32, 0, 0)" in message and "read it" in message

"""The thread model's named barriers (tirc.interp.threads.named_barrier), as the PTX ISA has
bar.sync / bar.arrive: warps arrive whole, each counting the warp size; an instance completes
when its count of threads has arrived; sync waits for that and arrive does not; the accesses
of the arriving threads before their arrival are ordered before what the waiting threads do
after, and nothing else is (threads that did not take part still race, transitively ordered
chains do not); a barrier that can never complete is a deadlock at the wait; one instance
has one count; ids and counts are checked where they are written."""

from __future__ import annotations

import numpy as np
import pytest

from tirc.diagnostics import Diagnostic, DiagnosticError
from tirc.interp.runner import run
from tirc.text import parse

# 256 threads of one block; BODY is indented for the kernel
KERNEL = """
@T.prim_func
def main(A: T.Buffer((256,), "float32"), B: T.Buffer((256,), "float32")):
    tx = T.launch_thread("threadIdx.x", 256)
    S = T.alloc_buffer((256,), "float32", scope="shared")
BODY
"""
A = np.arange(256, dtype="float32") + 1


def _text(body: str) -> str:
    lines = body.strip("\n").splitlines()
    return KERNEL.replace("BODY", "\n".join("    " + line for line in lines))


def _run(body: str) -> np.ndarray:
    module = parse(_text(body))
    b = np.zeros(256, "float32")
    run(module["main"], {"A": A.copy(), "B": b}, module=module, gpu_model="threads")
    return b


def _error(body: str) -> tuple[Diagnostic, str]:
    with pytest.raises(DiagnosticError) as error:
        _run(body)
    return error.value.diagnostics[0], _text(body)


def _line(text: str, marker: str) -> int:
    (line,) = [i for i, item in enumerate(text.splitlines(), 1) if marker in item]
    return line


# the first 128 threads exchange through S (each reads another's element); the others idle
EXCHANGE = """
if tx < 128:
    S[tx] = A[tx]
    BARRIER
    B[tx] = S[127 - tx]
"""


def test_a_barrier_among_part_of_the_block_completes_and_orders_its_threads() -> None:
    b = _run(EXCHANGE.replace("BARRIER", "T.ptx_bar_sync(1, 128)"))
    np.testing.assert_array_equal(b[:128], A[:128][::-1])
    np.testing.assert_array_equal(b[128:], 0)


def test_without_the_barrier_the_exchange_races() -> None:
    diagnostic, _ = _error(EXCHANGE.replace("BARRIER", ""))
    assert diagnostic.message.startswith("data race on shared memory 'S'")


def test_the_barrier_is_reused_instance_after_instance() -> None:
    # four rounds, each a write, a barrier, a read of another thread's element, a barrier
    body = """
if tx < 64:
    for k in range(4):
        S[tx] = A[k * 64 + tx]
        T.ptx_bar_sync(3, 64)
        B[k * 64 + tx] = S[63 - tx]
        SECOND
"""
    b = _run(body.replace("SECOND", "T.ptx_bar_sync(3, 64)"))
    np.testing.assert_array_equal(b, A.reshape(4, 64)[:, ::-1].reshape(-1))
    # without the second barrier the next round's write races with this round's read
    diagnostic, text = _error(body.replace("SECOND", ""))
    # (thread 0 is first to run on into the next round: its store and a slower thread's
    # read of the same element meet, in whichever order the schedule gives)
    assert diagnostic.message.startswith("data race on shared memory 'S'")
    lines = {_line(text, "S[tx] = A"), _line(text, "S[63 - tx]")}
    assert diagnostic.span is not None and diagnostic.span.line in lines


def test_a_thread_that_did_not_take_part_still_races() -> None:
    # the other 128 threads read what the first 128 wrote before their barrier
    body = EXCHANGE.replace("BARRIER", "T.ptx_bar_sync(1, 128)") + "else:\n    B[tx] = S[tx - 128]"
    diagnostic, text = _error(body)
    assert diagnostic.message.startswith(
        "data race on shared memory 'S' at byte 0: thread (128, 0, 0) of block (0, 0, 0) reads "
        "it after thread (0, 0, 0) of block (0, 0, 0) wrote it"
    )
    assert diagnostic.span is not None and diagnostic.span.line == _line(text, "S[tx - 128]")
    (note,) = diagnostic.notes
    assert note.span is not None and note.span.line == _line(text, "S[tx] = A[tx]")


def test_a_member_write_after_the_barrier_races_with_a_non_member_read() -> None:
    body = """
if tx < 128:
    T.ptx_bar_sync(1, 128)
    S[tx] = A[tx]
else:
    B[tx] = S[tx - 128]
"""
    diagnostic, _ = _error(body)
    assert diagnostic.message.startswith("data race on shared memory 'S'")


# producer threads (128..255) fill S and arrive without waiting; consumers sync and read
PRODUCE = """
if tx >= 128:
    FIRST
    SECOND
else:
    T.ptx_bar_sync(2, 256)
    B[tx] = S[127 - tx]
"""
STORE, ARRIVE = "S[tx - 128] = A[tx - 128] * T.float32(2)", "T.ptx_bar_arrive(2, 256)"


def test_arrive_releases_the_stores_before_it_to_the_threads_that_sync() -> None:
    b = _run(PRODUCE.replace("FIRST", STORE).replace("SECOND", ARRIVE))
    np.testing.assert_array_equal(b[:128], 2 * A[:128][::-1])


def test_a_store_after_the_arrival_races_with_the_readers() -> None:
    diagnostic, text = _error(PRODUCE.replace("FIRST", ARRIVE).replace("SECOND", STORE))
    assert diagnostic.message.startswith("data race on shared memory 'S'")
    # (at the store or at the read, whichever the schedule runs second)
    lines = {_line(text, "B[tx] = S"), _line(text, "S[tx - 128] = A")}
    assert diagnostic.span is not None and diagnostic.span.line in lines


def test_arrive_does_not_wait() -> None:
    # 128 arrivals at a barrier counting 256: it never completes, and nobody waits for it
    b = _run("if tx < 128:\n    T.ptx_bar_arrive(4, 256)\n    B[tx] = A[tx]")
    np.testing.assert_array_equal(b[:128], A[:128])


def test_threads_that_only_arrive_are_not_ordered_after_each_other() -> None:
    # warp 0 writes and arrives, warp 1 arrives and reads: it did not wait, so it races
    body = """
if tx < 32:
    S[tx] = A[tx]
    T.ptx_bar_arrive(1, 96)
elif tx < 64:
    T.ptx_bar_arrive(1, 96)
    B[tx] = S[tx - 32]
elif tx < 96:
    T.ptx_bar_sync(1, 96)
"""
    diagnostic, text = _error(body)
    assert diagnostic.message.startswith("data race on shared memory 'S'")
    assert diagnostic.span is not None and diagnostic.span.line == _line(text, "S[tx - 32]")


CHAIN = """
if tx < 32:
    S[tx] = A[tx]
    FIRST
elif tx < 64:
    FIRST
    T.ptx_bar_sync(2, 64)
elif tx < 96:
    T.ptx_bar_sync(2, 64)
    B[tx] = S[tx - 64]
"""


def test_ordering_is_transitive_through_a_chain_of_barriers() -> None:
    # warp 0 -> (barrier 1) -> warp 1 -> (barrier 2) -> warp 2 reads warp 0's stores
    b = _run(CHAIN.replace("FIRST", "T.ptx_bar_sync(1, 64)"))
    np.testing.assert_array_equal(b[64:96], A[:32])
    diagnostic, _ = _error(CHAIN.replace("FIRST", ""))
    assert diagnostic.message.startswith("data race on shared memory 'S'")


def test_a_barrier_that_cannot_complete_is_a_deadlock_at_the_wait() -> None:
    diagnostic, text = _error(EXCHANGE.replace("BARRIER", "T.ptx_bar_sync(1, 256)"))
    assert diagnostic.message.startswith("every thread of the block waits and none can go on")
    assert diagnostic.message.endswith(
        "this wait (in thread (0, 0, 0) of block (0, 0, 0)) is for named barrier 1: 128 of 256 "
        "threads have arrived (128 threads waiting) (ptx_bar_sync)"
    )
    assert diagnostic.span is not None and diagnostic.span.line == _line(text, "T.ptx_bar_sync")


def test_a_deadlock_beside_a_block_barrier_notes_both_places() -> None:
    body = 'if tx < 128:\n    T.ptx_bar_sync(1, 160)\nelse:\n    T.tvm_storage_sync("shared")'
    diagnostic, text = _error(body)
    assert "named barrier 1: 128 of 160" in diagnostic.message
    (note,) = diagnostic.notes
    assert note.span is not None and note.span.line == _line(text, "tvm_storage_sync")
    assert note.message == "128 threads wait here, at a barrier"


def test_arrivals_with_different_counts_at_one_instance_are_an_error() -> None:
    body = "if tx < 64:\n    T.ptx_bar_sync(5, 128)\nelse:\n    T.ptx_bar_sync(5, 256)"
    diagnostic, text = _error(body)
    assert diagnostic.message.startswith(
        "T.ptx_bar_sync: named barrier 5 is counting 128 threads (64 have arrived), not 256"
    )
    assert diagnostic.span is not None and diagnostic.span.line == _line(text, "(5, 256)")
    (note,) = diagnostic.notes
    assert note.span is not None and note.span.line == _line(text, "(5, 128)")


@pytest.mark.parametrize(
    ("call", "message"),
    [
        ("T.ptx_bar_sync(0, 128)", "barrier 0 is __syncthreads'"),
        ("T.ptx_bar_arrive(16, 128)", "a named barrier is 1 to 15, not 16"),
        ("T.ptx_bar_sync(1, 100)", "the thread count must be a constant multiple of 32"),
        ("T.ptx_bar_sync(1, tx)", "the thread count must be a constant multiple of 32"),
        ("T.ptx_bar_sync(1, 2048)", "from 32 to 1024"),
    ],
)
def test_ids_and_counts_are_checked_where_written(call: str, message: str) -> None:
    diagnostic, text = _error(call)
    assert message in diagnostic.message
    assert diagnostic.span is not None and diagnostic.span.line == _line(text, call)


def test_a_computed_id_is_checked_where_it_runs() -> None:
    # warpgroup g of the block syncs on barrier g + 1: 1 and 2, fine
    b = _run("T.ptx_bar_sync(tx // 128 + 1, 128)\nB[tx] = A[tx]")
    np.testing.assert_array_equal(b, A)
    diagnostic, _ = _error("T.ptx_bar_sync(tx // 128 + 15, 128)")
    assert "a named barrier is 1 to 15, not 16 (in thread (128, 0, 0)" in diagnostic.message


def test_outside_a_kernel_it_is_an_error() -> None:
    text = '@T.prim_func\ndef main(A: T.Buffer((1,), "float32")):\n    T.ptx_bar_sync(1, 32)\n'
    module = parse(text)
    with pytest.raises(DiagnosticError) as error:
        run(module["main"], {"A": np.zeros(1, "float32")}, module=module, gpu_model="threads")
    diagnostic = error.value.diagnostics[0]
    assert "runs only inside a GPU kernel" in diagnostic.message
    assert diagnostic.span is not None and diagnostic.span.line == 3


# every thread reads S, then (BARRIER) thread 0 refills S by a TMA load, which all wait for
REFILL = """
@T.prim_func
def main(A: T.Buffer((8, 32), "float32"), B: T.Buffer((64,), "float32")):
    tx = T.launch_thread("threadIdx.x", 64)
    S = T.alloc_buffer((64,), "float32", scope="shared")
    bar = T.alloc_buffer((1,), "uint64", scope="shared")
    S[tx] = T.float32(1)
    if tx == 0:
        T.ptx_mbarrier_init(bar.data, 0, 1)
    T.tvm_storage_sync("shared")
    B[tx] = S[63 - tx]
    BARRIER
    if tx == 0:
        T.ptx_mbarrier_arrive_expect_tx(bar.data, 0, 256)
        T.ptx_tma_load("float32", A.data, 2, 0, 8, 32, 4, 16, S.data, 0, bar.data, 0, 0, 0)
    T.ptx_mbarrier_wait(bar.data, 0, 0)
    B[tx] = B[tx] + S[tx]
"""


def test_a_tma_refill_after_a_named_barrier_is_ordered_after_the_reads() -> None:
    module = parse(REFILL.replace("BARRIER", "T.ptx_bar_sync(1, 64)"))
    a = np.arange(256, dtype="float32").reshape(8, 32)
    b = np.zeros(64, "float32")
    run(module["main"], {"A": a, "B": b}, module=module, gpu_model="threads")
    np.testing.assert_array_equal(b, 1 + a[:4, :16].reshape(-1))
    # without it, another thread's read and the landing copy race
    module = parse(REFILL.replace("BARRIER", ""))
    with pytest.raises(DiagnosticError) as error:
        run(module["main"], {"A": a, "B": b}, module=module, gpu_model="threads")
    assert "this TMA load (issued by thread (0, 0, 0)" in error.value.diagnostics[0].message


def test_a_warp_counts_as_the_warp_size_whatever_lanes_it_has() -> None:
    # 48 threads: warp 1 has 16 lanes, yet the two warps complete a barrier of 64 (PTX: the
    # arrival count goes up by the warp size, not by the warp's active threads)
    text = """
@T.prim_func
def main(A: T.Buffer((48,), "float32"), B: T.Buffer((48,), "float32")):
    tx = T.launch_thread("threadIdx.x", 48)
    S = T.alloc_buffer((48,), "float32", scope="shared")
    S[tx] = A[tx]
    T.ptx_bar_sync(1, 64)
    B[tx] = S[47 - tx]
"""
    module = parse(text)
    b = np.zeros(48, "float32")
    run(module["main"], {"A": A[:48].copy(), "B": b}, module=module, gpu_model="threads")
    np.testing.assert_array_equal(b, A[:48][::-1])


def test_the_lanes_of_a_warp_give_one_id() -> None:
    diagnostic, text = _error("T.ptx_bar_sync(tx % 2 + 1, 128)")
    assert diagnostic.message.startswith(
        "T.ptx_bar_sync: the lanes of a warp give different barrier ids or counts"
    )
    assert "(in thread (0, 0, 0) of block (0, 0, 0))" in diagnostic.message
    assert diagnostic.span is not None and diagnostic.span.line == _line(text, "T.ptx_bar_sync")

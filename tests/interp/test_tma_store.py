"""TMA stores in the thread model (tirc.interp.threads.mbarrier) as the PTX ISA defines
cp.async.bulk.tensor to global memory: the tensor is written only when
`T.ptx_tma_store_wait(n)` of the issuing thread completes the store's bulk group (the groups
older than the n newest), a store still in flight when its thread returns is an error at the
store, and a write to the source
between the issue and that wait is a data race, reported where it can be located."""

from __future__ import annotations

import numpy as np
import pytest

from tirc.diagnostics import DiagnosticError
from tirc.interp.runner import run
from tirc.text import parse

# S holds two rows (1..64 and 101..164), written for the async proxy
PROLOGUE = """
@T.prim_func
def main(B: T.Buffer((2, 64), "float32"), R: T.Buffer((6, 64), "float32")):
    tx = T.launch_thread("threadIdx.x", 64)
    S = T.alloc_buffer((128,), "float32", scope="shared")
    S[tx] = T.Cast("float32", tx + 1)
    S[tx + 64] = T.Cast("float32", tx + 101)
    T.ptx_fence_proxy_async()
    T.tvm_storage_sync("shared")
"""
# thread 0 stores row 0 and row 1 of B in two bulk groups, and copies B into R before the
# waits, between them and after them
GROUPS = (
    PROLOGUE
    + """    if tx == 0:
        T.ptx_tma_store("float32", B.data, 2, 0, 2, 64, 1, 64, S.data, 0, 0, 0)
        T.ptx_tma_store_commit()
        T.ptx_tma_store("float32", B.data, 2, 0, 2, 64, 1, 64, S.data, 64, 1, 0)
        T.ptx_tma_store_commit()
        for i in range(64):
            R[0, i] = B[0, i]
            R[1, i] = B[1, i]
        T.ptx_tma_store_wait({first})
        for i in range(64):
            R[2, i] = B[0, i]
            R[3, i] = B[1, i]
        T.ptx_tma_store_wait(0)
        for i in range(64):
            R[4, i] = B[0, i]
            R[5, i] = B[1, i]
"""
)

ROW0 = np.arange(1, 65, dtype="float32")
ROW1 = np.arange(101, 165, dtype="float32")
OLD = np.full(64, -1, "float32")


def _run(text: str) -> tuple[np.ndarray, np.ndarray]:
    module = parse(text, name="store.tir")
    b = np.full((2, 64), -1, "float32")
    r = np.zeros((6, 64), "float32")
    run(module["main"], {"B": b, "R": r}, module=module, gpu_model="threads")
    return b, r


def test_the_tensor_is_written_when_the_wait_completes_the_group() -> None:
    b, r = _run(GROUPS.format(first=1))
    np.testing.assert_array_equal(b, [ROW0, ROW1])
    # before any wait neither row is there; wait_group 1 completes the older group only
    np.testing.assert_array_equal(r, [OLD, OLD, ROW0, OLD, ROW0, ROW1])


def test_wait_group_0_completes_both_groups() -> None:
    _, r = _run(GROUPS.format(first=0))
    np.testing.assert_array_equal(r, [OLD, OLD, ROW0, ROW1, ROW0, ROW1])


def test_a_store_never_waited_for_is_an_error_when_its_thread_returns() -> None:
    # row 1's group is never completed: it may read shared memory the block has freed, and
    # land or not; the error is at that store (line 13), naming the thread
    text = GROUPS.format(first=1).replace("        T.ptx_tma_store_wait(0)\n", "")
    with pytest.raises(DiagnosticError) as error:
        _run(text)
    (diagnostic,) = error.value.diagnostics
    assert diagnostic.message.startswith("1 TMA store(s) still in flight when the thread returns")
    assert "(in thread (0, 0, 0) of block (0, 0, 0))" in diagnostic.message
    assert diagnostic.span is not None and diagnostic.span.line == 13


def _race(text: str) -> str:
    """The error and its notes, one a line (`file:line:col: note`)."""
    with pytest.raises(DiagnosticError) as error:
        _run(text)
    (diagnostic,) = error.value.diagnostics
    notes = [f"{note.span.line}:{note.span.column}: {note.message}" for note in diagnostic.notes]
    return "\n".join([str(error.value), *notes])


def test_the_issuer_writing_the_source_before_its_wait_is_a_race() -> None:
    text = GROUPS.format(first=1).replace(
        "        for i in range(64):\n            R[0, i]",
        "        S[69] = T.float32(0)\n        for i in range(64):\n            R[0, i]",
    )
    message = _race(text)
    # row 1's source (S[64:128]) changed before wait_group 0 completed it: located at its
    # store, the write named by the race tracker
    assert "store.tir:13:9: error: data race on shared memory 'S' at byte 276" in message
    assert "written after this TMA store was issued and before T.ptx_tma_store_wait" in message
    assert "15:9: thread (0, 0, 0) of block (0, 0, 0) wrote it here" in message


def test_another_thread_writing_the_source_in_the_same_interval_is_a_race() -> None:
    text = GROUPS.format(first=1).replace(
        "    if tx == 0:\n", "    if tx == 1:\n        S[3] = T.float32(0)\n    if tx == 0:\n"
    )
    message = _race(text)
    assert "store.tir:11:9: error: data race on shared memory 'S' at byte 12" in message
    assert "thread (1, 0, 0) of block (0, 0, 0) writes it after thread (0, 0, 0)" in message
    assert "13:9: thread (0, 0, 0) of block (0, 0, 0) read it here" in message  # the store


# the store's group is completed after a barrier that another thread then writes the source
# past: the barrier does not order the store's asynchronous read
AFTER_BARRIER = (
    PROLOGUE
    + """    if tx == 0:
        T.ptx_tma_store("float32", B.data, 2, 0, 2, 64, 1, 64, S.data, 0, 0, 0)
        T.ptx_tma_store_commit()
    T.tvm_storage_sync("shared")
    if tx == {writer}:
        S[{index}] = T.float32(0)
    if tx == 0:
        T.ptx_tma_store_wait(0)
"""
)


def test_a_write_after_a_barrier_but_before_the_wait_is_a_race() -> None:
    message = _race(AFTER_BARRIER.format(writer=5, index=7))
    assert "store.tir:11:9: error: data race on shared memory 'S' at byte 28" in message
    assert "15:9: thread (5, 0, 0) of block (0, 0, 0) wrote it here" in message


def test_a_write_after_a_barrier_outside_the_box_is_not() -> None:
    b, _ = _run(AFTER_BARRIER.format(writer=5, index=70))
    np.testing.assert_array_equal(b, [ROW0, OLD])

"""The GPU model: blocks of threads as coroutines, barriers, races on shared memory, warp
shuffles and all-reduce; and thread bindings in s-tir, which mean serial loops."""

from __future__ import annotations

import numpy as np
import pytest

from tests.interp.build import buffer, function, i32, launch, span, sync, thread_loop
from tirc import interp
from tirc.diagnostics import DiagnosticError
from tirc.interp.threads import scheduler
from tirc.ir import dtype as dt
from tirc.ir.expr import (
    EQ,
    LT,
    Add,
    BufferLoad,
    Call,
    Cast,
    CommReducer,
    FloatImm,
    IntImm,
    Mul,
    Sub,
    Var,
)
from tirc.ir.function import PrimFunc
from tirc.ir.stmt import AllocBuffer, AttrStmt, BufferStore, Evaluate, IfThenElse, SeqStmt, Stmt


def reverse_through_shared(with_barrier: bool, shared_reverse: bool = True) -> PrimFunc:
    """Each block of 32 threads reverses its 32 elements through shared memory."""
    A, B, S = buffer("A", 64), buffer("B", 64), buffer("S", 32, scope="shared")
    bx, tx = Var("bx"), Var("tx")
    element = Add(Mul(bx, i32(32)), tx)
    read_index = Sub(i32(31), tx) if shared_reverse else tx
    body: list[Stmt] = [BufferStore(S, BufferLoad(A, (element,)), (tx,), span=span(1))]
    if with_barrier:
        body.append(sync())
    body.append(
        BufferStore(B, BufferLoad(S, (read_index,), span=span(2)), (element,), span=span(2))
    )
    kernel = thread_loop(
        bx,
        2,
        "blockIdx.x",
        SeqStmt((AllocBuffer(S), thread_loop(tx, 32, "threadIdx.x", SeqStmt(tuple(body))))),
    )
    return function([A, B], kernel)


def test_barrier_makes_other_threads_writes_visible() -> None:
    a = np.arange(64, dtype=np.float32)
    b = np.zeros(64, np.float32)
    interp.run(reverse_through_shared(with_barrier=True), {"A": a, "B": b})
    np.testing.assert_array_equal(b, np.concatenate([a[31::-1], a[:31:-1]]))


def test_missing_barrier_is_a_race_between_the_store_and_the_load() -> None:
    with pytest.raises(DiagnosticError) as caught:
        interp.run(
            reverse_through_shared(with_barrier=False),
            {"A": np.zeros(64, np.float32), "B": np.zeros(64, np.float32)},
        )
    diagnostic = caught.value.diagnostics[0]
    assert "data race on shared memory 'S'" in diagnostic.message
    # threads run in order until a barrier, so the race shows when thread 16 overwrites the
    # element thread 15 read: the error points at one access, its note at the other
    assert diagnostic.span is not None and diagnostic.notes and diagnostic.notes[0].span is not None
    assert {diagnostic.span.line, diagnostic.notes[0].span.line} == {1, 2}


def test_each_thread_reading_its_own_element_is_no_race() -> None:
    a = np.arange(64, dtype=np.float32)
    b = np.zeros(64, np.float32)
    interp.run(reverse_through_shared(with_barrier=False, shared_reverse=False), {"A": a, "B": b})
    np.testing.assert_array_equal(b, a)


def test_write_write_race() -> None:
    S, B = buffer("S", 1, scope="shared"), buffer("B", 1)
    tx = Var("tx")
    store = BufferStore(S, Cast(dt.FLOAT32, tx), (i32(0),), span=span(1))
    kernel = thread_loop(tx, 4, "threadIdx.x", SeqStmt((AllocBuffer(S), store)))
    with pytest.raises(DiagnosticError, match="writes it after thread"):
        interp.run(function([B], kernel), {"B": np.zeros(1, np.float32)})


def test_threads_writing_one_value_do_not_race() -> None:
    """All threads copying the same value (TVM's copies not bound to threads) is no race."""
    S, B = buffer("S", 1, scope="shared"), buffer("B", 4)
    tx = Var("tx")
    body = SeqStmt(
        (
            AllocBuffer(S),
            BufferStore(S, BufferLoad(B, (i32(0),)), (i32(0),)),
            sync(),
            BufferStore(B, BufferLoad(S, (i32(0),)), (tx,)),
        )
    )
    b = np.array([5, 0, 0, 0], np.float32)
    interp.run(function([B], thread_loop(tx, 4, "threadIdx.x", body)), {"B": b})
    assert b.tolist() == [5, 5, 5, 5]


def test_a_failure_of_the_scheduler_is_not_reported_as_a_fault_of_the_program(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A Python error raised inside the thread scheduler is the interpreter's own bug: it
    must surface as such, not as 'memory access out of bounds' at the kernel's launch (as a
    bad note of the cluster scheduler once did)."""

    def broken(waiting: dict, block: object) -> list[int]:
        raise IndexError("an IndexError of the scheduler's own")

    monkeypatch.setattr(scheduler, "release_barrier", broken)
    b = np.zeros(64, np.float32)
    with pytest.raises(IndexError):
        interp.run(reverse_through_shared(True), {"A": np.ones(64, np.float32), "B": b})


def test_barrier_reached_by_some_threads_only_is_an_error() -> None:
    B = buffer("B", 4)
    tx = Var("tx")
    body = IfThenElse(LT(tx, i32(2)), sync())
    with pytest.raises(DiagnosticError, match="different barriers"):
        interp.run(
            function([B], launch(tx, 4, "threadIdx.x", SeqStmt((body, sync())))),
            {"B": np.zeros(4, np.float32)},
        )


def test_warp_shuffle_down_sums_a_warp() -> None:
    """The classic tree: after shuffles by 16, 8, 4, 2, 1, lane 0 holds the warp's sum."""
    A, B, V = buffer("A", 32), buffer("B", 1), buffer("V", 1, scope="local")
    tx = Var("tx")
    steps = [AllocBuffer(V), BufferStore(V, BufferLoad(A, (tx,)), (i32(0),))]
    for delta in (16, 8, 4, 2, 1):
        value = BufferLoad(V, (i32(0),))
        shuffled = Call(
            dt.FLOAT32,
            "tvm_warp_shuffle_down",
            (IntImm(0xFFFFFFFF, dt.UINT32), value, i32(delta), i32(32), i32(32)),
        )
        steps.append(BufferStore(V, Add(value, shuffled), (i32(0),)))
    steps.append(IfThenElse(EQ(tx, i32(0)), BufferStore(B, BufferLoad(V, (i32(0),)), (i32(0),))))
    a = np.arange(32, dtype=np.float32)
    b = np.zeros(1, np.float32)
    interp.run(
        function([A, B], launch(tx, 32, "threadIdx.x", SeqStmt(tuple(steps)))), {"A": a, "B": b}
    )
    assert b[0] == a.sum()


def test_thread_allreduce_combines_each_row() -> None:
    """Threads (tx, ty) of a 8 x 2 block reduce over tx: each row's sum."""
    A, B, R = buffer("A", 16), buffer("B", 2), buffer("R", 1, scope="local")
    tx, ty = Var("tx"), Var("ty")
    x, y = Var("x", dt.FLOAT32), Var("y", dt.FLOAT32)
    reducer = CommReducer((x,), (y,), (Add(x, y),), (FloatImm(0.0),))
    value = BufferLoad(A, (Add(Mul(ty, i32(8)), tx),))
    allreduce = Call(
        dt.HANDLE,
        "tvm_thread_allreduce",
        (IntImm(1, dt.UINT32), value, IntImm(1, dt.BOOL), R.data, tx),
    )
    body = SeqStmt(
        (
            AllocBuffer(R),
            AttrStmt(reducer, "reduce_scope", i32(0), Evaluate(allreduce)),
            IfThenElse(EQ(tx, i32(0)), BufferStore(B, BufferLoad(R, (i32(0),)), (ty,))),
        )
    )
    kernel = launch(ty, 2, "threadIdx.y", launch(tx, 8, "threadIdx.x", body))
    a = np.arange(16, dtype=np.float32)
    b = np.zeros(2, np.float32)
    interp.run(function([A, B], kernel), {"A": a, "B": b})
    np.testing.assert_array_equal(b, [a[:8].sum(), a[8:].sum()])


def test_local_memory_before_the_threads_is_per_thread() -> None:
    """`in_thread = T.alloc_local((1,))` under blockIdx but outside threadIdx (as lowered
    reductions are): each thread accumulates into its own copy."""
    A, B, L = buffer("A", 8), buffer("B", 8), buffer("L", 1, scope="local")
    bx, tx = Var("bx"), Var("tx")
    accumulate = BufferStore(L, Add(BufferLoad(L, (i32(0),)), BufferLoad(A, (tx,))), (i32(0),))
    body = SeqStmt(
        (
            BufferStore(L, BufferLoad(A, (tx,)), (i32(0),)),
            sync(),
            accumulate,
            BufferStore(B, BufferLoad(L, (i32(0),)), (tx,)),
        )
    )
    kernel = launch(
        bx, 1, "blockIdx.x", SeqStmt((AllocBuffer(L), launch(tx, 8, "threadIdx.x", body)))
    )
    a = np.arange(8, dtype=np.float32)
    b = np.zeros(8, np.float32)
    interp.run(function([A, B], kernel), {"A": a, "B": b})
    np.testing.assert_array_equal(b, 2 * a)


LOWERED = """
@T.prim_func
def main(A: T.Buffer((64,), "float32"), B: T.Buffer((64,), "float32")):
    bx = T.launch_thread("blockIdx.x", 2)
    S = T.alloc_buffer((32,), scope="shared")
    tx = T.launch_thread("threadIdx.x", 32)
    S[tx] = A[bx * 32 + tx]
    T.tvm_storage_sync("shared")
    B[bx * 32 + tx] = S[31 - tx]
"""


def test_lowered_kernel_from_text() -> None:
    from tests.interp.helpers import run_source

    a = np.arange(64, dtype=np.float32)
    b = np.zeros(64, np.float32)
    run_source(LOWERED, A=a, B=b)
    np.testing.assert_array_equal(b, np.concatenate([a[31::-1], a[:31:-1]]))


def test_race_in_text_points_at_the_accesses() -> None:
    from tests.interp.helpers import line_of, run_source

    source = LOWERED.replace('    T.tvm_storage_sync("shared")\n', "")
    with pytest.raises(DiagnosticError) as caught:
        run_source(source, A=np.zeros(64, np.float32), B=np.zeros(64, np.float32))
    diagnostic = caught.value.diagnostics[0]
    lines = {diagnostic.span.line, diagnostic.notes[0].span.line}  # type: ignore[union-attr]
    assert lines == {line_of(source, "S[tx] = "), line_of(source, "= S[31 - tx]")}


WARP_REDUCTION = """
@T.prim_func
def main(A: T.Buffer((4, 64), "float32"), B: T.Buffer((4,), "float32")):
    with T.launch_thread("blockIdx.x", 4) as bx:
        staging = T.alloc_buffer((2,), scope="shared")
        total = T.alloc_buffer((1,), scope="shared")
        with T.launch_thread("threadIdx.x", 64) as tx:
            value = T.alloc_buffer((1,), scope="local")
            other = T.alloc_buffer((1,), scope="local")
            mask = T.alloc_buffer((1,), "uint32", scope="local")
            value[0] = A[bx, tx]
            mask[0] = T.tvm_warp_activemask()
            for step in T.unroll(5):
                other[0] = T.tvm_warp_shuffle_down(mask[0], value[0], T.shift_right(16, step), 32, 32)
                value[0] = value[0] + other[0]
            if tx % 32 == 0:
                staging[tx // 32] = value[0]
            T.tvm_storage_sync("shared")
            if tx == 0:
                total[0] = staging[0] + staging[1]
            T.tvm_storage_sync("shared")
            B[bx] = total[0]
"""  # noqa: E501


def test_block_reduction_through_warp_shuffles_and_shared_memory() -> None:
    from tests.interp.helpers import run_source

    a = (np.arange(256, dtype=np.float32).reshape(4, 64) % 7) / 8
    b = np.zeros(4, np.float32)
    run_source(WARP_REDUCTION, A=a, B=b)
    np.testing.assert_array_equal(b, a.sum(axis=1))

"""Loops and threads: typed bounds, constant vector extents, nothing loop-carried or
synchronising inside concurrent loops, known thread tags, one extent per tag per kernel."""

from __future__ import annotations

from tirc.analysis.well_formed import verify_function
from tirc.ir import dtype as dt
from tirc.ir.buffer import Range
from tirc.ir.expr import Add, BufferLoad, Call, IntImm, Mul, StringImm, Var
from tirc.ir.stmt import AttrStmt, BufferStore, Evaluate, ForKind, IterType, IterVar, seq

from .builders import (
    Listing,
    buffer,
    function,
    i32,
    lines,
    loop,
    messages,
    realize,
    reduce,
    spatial,
    thread_loop,
)


def test_loop_bounds_have_the_loop_variables_type() -> None:
    text = Listing("""
def main(A: T.Buffer((16,), "float32")):
    for i in range(T.int64(16)):
        A[0] = A[0]
""")
    a, i = buffer("A", 16), Var("i")
    body = BufferStore(a, BufferLoad(a, (i32(0),)), (i32(0),))
    found = verify_function(function([a], loop(i, IntImm(16, dt.INT64), body, span=text.at(2))))
    assert messages(found) == [
        "start of loop 'i' has type int64, the loop variable int32",
        "extent of loop 'i' has type int64, the loop variable int32",
    ]
    assert lines(found) == [2, 2]


def test_vectorized_loop_may_have_any_extent() -> None:
    # as in TVM: n, n * T.vscale() and T.vscale() * 4 lower to a serial loop with a remark
    i, n = Var("i"), Var("n")
    a = buffer("A", n)  # which defines n
    body = BufferStore(a, BufferLoad(a, (i,)), (i,))
    vscale = Call(dt.INT32, "vscale", ())
    for extent in (n, Mul(vscale, i32(4)), Mul(vscale, n)):
        func = function([a], loop(i, extent, body, ForKind.VECTORIZED))
        assert messages(verify_function(func)) == [], extent


def test_no_barrier_inside_a_parallel_loop() -> None:
    text = Listing("""
def main(A: T.Buffer((16,), "float32")):
    for i in T.parallel(16):
        T.tvm_storage_sync("shared")
""")
    a, i = buffer("A", 16), Var("i")
    barrier = Evaluate(Call(dt.INT32, "tvm_storage_sync", (StringImm("shared"),), span=text.at(3)))
    (error,) = verify_function(
        function([a], loop(i, 16, barrier, ForKind.PARALLEL, span=text.at(2)))
    )
    assert error.message == (
        "T.tvm_storage_sync inside parallel loop 'i': "
        "a barrier synchronises GPU threads, not loop iterations"
    )
    assert error.span is not None and error.span.line == 3
    assert error.notes[0].span is not None and error.notes[0].span.line == 2


def test_no_thread_launch_or_parallel_loop_inside_a_vectorized_loop() -> None:
    a, i, j, t = buffer("A", 16), Var("i"), Var("j"), Var("t")
    body = BufferStore(a, BufferLoad(a, (t,)), (t,))
    func = function(
        [a],
        loop(
            i,
            4,
            seq(
                thread_loop(t, 4, "threadIdx.x", body),
                loop(j, 4, BufferStore(a, BufferLoad(a, (j,)), (j,)), ForKind.PARALLEL),
            ),
            ForKind.VECTORIZED,
        ),
    )
    assert messages(verify_function(func)) == [
        "thread-binding loop 't' is launched inside vectorized loop 'i'",
        "parallel loop 'j' inside vectorized loop 'i'",
    ]


def test_a_parallel_loop_cannot_carry_a_reduction() -> None:
    text = Listing("""
def main(A: T.Buffer((16, 8), "float32"), B: T.Buffer((16,), "float32")):
    for i, k in T.grid(16, T.parallel(8)):
        with T.sblock("C"):
            vi, vk = T.axis.remap("SR", [i, k])
            B[vi] = B[vi] + A[vi, vk]
""")
    a, b, i, k, vi, vk = (
        buffer("A", 16, 8),
        buffer("B", 16),
        Var("i"),
        Var("k"),
        Var("vi"),
        Var("vk"),
    )
    body = BufferStore(b, Add(BufferLoad(b, (vi,)), BufferLoad(a, (vi, vk))), (vi,))
    block = realize("C", [(spatial(vi, 16), i), (reduce(vk, 8), k)], body, span=text.at(3))
    nest = loop(i, 16, loop(k, 8, block, ForKind.PARALLEL, span=text.at(2)))
    (error,) = verify_function(function([a, b], nest, s_tir=True))
    assert error.message == (
        "parallel loop 'k' is bound to reduce iteration variable 'vk' of block 'C': "
        "its iterations would race on the block's result"
    )
    assert error.span is not None and error.span.line == 3


def test_threads_of_one_block_may_share_a_reduction() -> None:
    a, b, k, vk = buffer("A", 8), buffer("B", 1), Var("k"), Var("vk")
    body = BufferStore(b, Add(BufferLoad(b, (i32(0),)), BufferLoad(a, (vk,))), (i32(0),))
    block = realize("C", [(reduce(vk, 8), k)], body)
    assert (
        verify_function(function([a, b], thread_loop(k, 8, "threadIdx.x", block), s_tir=True)) == []
    )
    blocks, vb = Var("bx"), Var("vb")
    total = BufferStore(b, Add(BufferLoad(b, (i32(0),)), BufferLoad(a, (vb,))), (i32(0),))
    across = realize("D", [(reduce(vb, 8), blocks)], total)
    assert messages(
        verify_function(function([a, b], thread_loop(blocks, 8, "blockIdx.x", across), s_tir=True))
    ) == [
        "loop bound to blockIdx.x 'bx' is bound to reduce iteration variable 'vb' of block 'D': "
        "its iterations would race on the block's result"
    ]


def test_unknown_thread_tag() -> None:
    a, t = buffer("A", 16), Var("t")
    func = function([a], thread_loop(t, 4, "blockIdx.w", BufferStore(a, BufferLoad(a, (t,)), (t,))))
    assert messages(verify_function(func)) == [
        "unknown thread tag 'blockIdx.w'; expected blockIdx.x/y/z, threadIdx.x/y/z or vthread"
    ]


def test_one_extent_per_thread_tag_per_kernel() -> None:
    text = Listing("""
def main(A: T.Buffer((16,), "float32")):
    for t in T.thread_binding(4, "threadIdx.x"):
        for u in T.thread_binding(8, "threadIdx.x"):
            A[t] = A[u]
""")
    a, t, u = buffer("A", 16), Var("t"), Var("u")
    inner = thread_loop(
        u, 8, "threadIdx.x", BufferStore(a, BufferLoad(a, (u,)), (t,)), span=text.at(3)
    )
    (error,) = verify_function(
        function([a], thread_loop(t, 4, "threadIdx.x", inner, span=text.at(2)))
    )
    assert error.message == (
        "'threadIdx.x' is bound with extent 8 here but 4 elsewhere in the same kernel; "
        "a kernel has one extent per thread tag"
    )
    assert error.span is not None and error.span.line == 3
    assert error.notes[0].span is not None and error.notes[0].span.line == 2


def test_separate_kernels_may_use_different_extents_and_nesting_may_repeat_one() -> None:
    a, t, u, v = buffer("A", 16), Var("t"), Var("u"), Var("v")
    same = thread_loop(
        t,
        4,
        "threadIdx.x",
        thread_loop(u, 4, "threadIdx.x", BufferStore(a, BufferLoad(a, (u,)), (t,))),
    )
    other = thread_loop(v, 8, "threadIdx.x", BufferStore(a, BufferLoad(a, (v,)), (v,)))
    assert verify_function(function([a], seq(same, other))) == []


def test_launch_thread_extents_agree_within_a_kernel() -> None:
    a, bx, tx, tx2 = buffer("A", 32), Var("bx"), Var("tx"), Var("tx2")

    def launch(var: Var, tag: str, extent: int, body: object) -> AttrStmt:
        thread = IterVar(var, Range(i32(0), i32(extent)), IterType.THREAD, tag)
        return AttrStmt(thread, "thread_extent", i32(extent), body)  # type: ignore[arg-type]

    store = BufferStore(a, BufferLoad(a, (tx2,)), (tx,))
    kernel = launch(
        bx, "blockIdx.x", 4, launch(tx, "threadIdx.x", 32, launch(tx2, "threadIdx.x", 16, store))
    )
    assert messages(verify_function(function([a], kernel))) == [
        "'threadIdx.x' is bound with extent 16 here but 32 elsewhere in the same kernel; "
        "a kernel has one extent per thread tag"
    ]

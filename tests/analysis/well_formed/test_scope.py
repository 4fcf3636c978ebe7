"""Scoping: defined before use, used inside the scope, defined once; blocks see loops only
through their iteration variables."""

from __future__ import annotations

from tirc.analysis.well_formed import verify_function
from tirc.ir import dtype as dt
from tirc.ir.buffer import BufferRegion, MatchBufferRegion, Range
from tirc.ir.expr import Add, BufferLoad, Cast, Let, Var
from tirc.ir.stmt import AllocBuffer, AttrStmt, Bind, BufferStore, IterType, IterVar, seq

from .builders import Listing, buffer, function, i32, lines, loop, messages, realize, spatial


def test_undefined_variable_is_reported_at_its_use() -> None:
    text = Listing("""
def main(A: T.Buffer((16,), "float32")):
    A[i] = T.float32(0)
""")
    a, i = buffer("A", 16), Var("i")
    store = BufferStore(a, Cast(dt.FLOAT32, i32(0)), (i,), span=text.at(2))
    found = verify_function(function([a], store))
    assert messages(found) == ["undefined variable 'i'"]
    assert lines(found) == [2]


def test_variable_used_after_its_loop_points_at_the_loop() -> None:
    text = Listing("""
def main(A: T.Buffer((16,), "float32")):
    for i in range(16):
        A[i] = A[i]
    A[i] = A[0]
""")
    a, i = buffer("A", 16), Var("i")
    first = loop(i, 16, BufferStore(a, BufferLoad(a, (i,)), (i,)), span=text.at(2))
    after = BufferStore(a, BufferLoad(a, (i32(0),)), (i,), span=text.at(4))
    (error,) = verify_function(function([a], seq(first, after)))
    assert error.message == "variable 'i' is used outside the scope of its definition"
    assert error.span is not None and error.span.line == 4
    assert [n.message for n in error.notes] == ["'i' is defined here"]
    assert error.notes[0].span is not None and error.notes[0].span.line == 2


def test_a_var_bound_by_two_loops_is_defined_twice() -> None:
    text = Listing("""
def main(A: T.Buffer((16,), "float32")):
    for i in range(16):
        A[i] = A[i]
    for i in range(16):
        A[i] = A[i]
""")
    a, i = buffer("A", 16), Var("i")
    body = BufferStore(a, BufferLoad(a, (i,)), (i,))
    twice = seq(loop(i, 16, body, span=text.at(2)), loop(i, 16, body, span=text.at(4)))
    (error,) = verify_function(function([a], twice))
    assert error.message == "variable 'i' is defined twice"
    assert error.span is not None and error.span.line == 4
    assert error.notes[0].span is not None and error.notes[0].span.line == 2


def test_bind_scopes_over_the_rest_of_its_sequence_only() -> None:
    text = Listing("""
def main(A: T.Buffer((17,), "float32")):
    A[x] = A[0]
    for i in range(16):
        x: T.int32 = i + 1
        A[x] = A[i]
    A[x] = A[0]
""")
    a, i, x = buffer("A", 17), Var("i"), Var("x")
    early = BufferStore(a, BufferLoad(a, (i32(0),)), (x,), span=text.at(2))
    inside = seq(
        Bind(x, Add(i, i32(1)), span=text.at(4)),
        BufferStore(a, BufferLoad(a, (i,)), (x,), span=text.at(5)),
    )
    late = BufferStore(a, BufferLoad(a, (i32(0),)), (x,), span=text.at(6))
    found = verify_function(function([a], seq(early, loop(i, 16, inside, span=text.at(3)), late)))
    assert messages(found) == [
        "variable 'x' is used before its definition",
        "variable 'x' is used outside the scope of its definition",
    ]
    assert lines(found) == [2, 6]


def test_let_binds_only_its_body() -> None:
    a, x = buffer("A", 16), Var("x")
    value = Let(x, i32(1), BufferLoad(a, (x,)))
    store = BufferStore(a, value, (x,))
    assert messages(verify_function(function([a], store))) == [
        "variable 'x' is used outside the scope of its definition"
    ]


def test_undefined_and_out_of_scope_buffers() -> None:
    text = Listing("""
def main(A: T.Buffer((16,), "float32")):
    for i in range(16):
        C = T.alloc_buffer((16,), "float32")
        C[i] = A[i]
    A[0] = C[0]
    B[0] = A[0]
""")
    a, b, c, i = buffer("A", 16), buffer("B", 16), buffer("C", 16), Var("i")
    body = seq(
        AllocBuffer(c, span=text.at(3)), BufferStore(c, BufferLoad(a, (i,)), (i,), span=text.at(4))
    )
    program = seq(
        loop(i, 16, body, span=text.at(2)),
        BufferStore(a, BufferLoad(c, (i32(0),)), (i32(0),), span=text.at(5)),
        BufferStore(b, BufferLoad(a, (i32(0),)), (i32(0),), span=text.at(6)),
    )
    found = verify_function(function([a], program))
    assert messages(found) == [
        "buffer 'C' is used outside the scope of its definition",
        "undefined buffer 'B'",
    ]
    assert lines(found) == [5, 6]
    assert found[0].notes[0].span is not None and found[0].notes[0].span.line == 3


def test_shape_variables_of_parameters_are_defined() -> None:
    n = Var("n", is_size_var=True)
    a, i = buffer("A", n), Var("i")
    assert (
        verify_function(function([a], loop(i, n, BufferStore(a, BufferLoad(a, (i,)), (i,))))) == []
    )


def test_block_iteration_variable_is_not_visible_after_its_block() -> None:
    text = Listing("""
def main(A: T.Buffer((16,), "float32")):
    for i in range(16):
        with T.sblock("B"):
            vi = T.axis.spatial(16, i)
            A[vi] = A[vi]
        A[vi] = A[0]
""")
    a, i, vi = buffer("A", 16), Var("i"), Var("vi")
    block = realize(
        "B", [(spatial(vi, 16), i)], BufferStore(a, BufferLoad(a, (vi,)), (vi,)), span=text.at(3)
    )
    after = BufferStore(a, BufferLoad(a, (i32(0),)), (vi,), span=text.at(6))
    found = verify_function(function([a], loop(i, 16, seq(block, after)), s_tir=True))
    assert messages(found) == ["variable 'vi' is used outside the scope of its definition"]
    assert lines(found) == [6]


def test_loop_variable_inside_a_block_must_go_through_its_bindings() -> None:
    text = Listing("""
def main(A: T.Buffer((16,), "float32")):
    for i in range(16):
        with T.sblock("B"):
            vi = T.axis.spatial(16, i)
            A[vi] = A[i]
""")
    a, i, vi = buffer("A", 16), Var("i"), Var("vi")
    store = BufferStore(a, BufferLoad(a, (i,), span=text.at(5)), (vi,), span=text.at(5))
    block = realize("B", [(spatial(vi, 16), i)], store, span=text.at(3))
    (error,) = verify_function(function([a], loop(i, 16, block, span=text.at(2)), s_tir=True))
    assert error.message == (
        "loop variable 'i' is used inside block 'B' but defined outside it; "
        "a block reaches outer loops only through its iteration variables"
    )
    assert error.span is not None and error.span.line == 5
    assert error.notes[0].span is not None and error.notes[0].span.line == 2


def test_opaque_blocks_may_use_outer_loops() -> None:
    a, i = buffer("A", 16), Var("i")
    opaque = realize("B", [], BufferStore(a, BufferLoad(a, (i,)), (i,)))
    assert verify_function(function([a], loop(i, 16, opaque), s_tir=True)) == []


def test_a_binding_cannot_use_the_blocks_own_iteration_variables() -> None:
    a, i, vi, vj = buffer("A", 16), Var("i"), Var("vi"), Var("vj")
    block = realize(
        "B",
        [(spatial(vi, 16), i), (spatial(vj, 16), vi)],
        BufferStore(a, BufferLoad(a, (vj,)), (vi,)),
    )
    assert messages(verify_function(function([a], loop(i, 16, block), s_tir=True))) == [
        "a binding of block 'B' uses the block's own iteration variable 'vi'"
    ]


def test_match_buffer_defines_its_stride_and_offset_variables() -> None:
    a, vi = buffer("A", 16, 16), Var("vi")
    s0, offset = Var("s0"), Var("offset")
    view = buffer("A_1", 4, strides=(s0,), elem_offset=offset)
    source = BufferRegion(a, (Range(vi, i32(1)), Range(i32(0), i32(4))))
    body = BufferStore(view, BufferLoad(view, (Add(s0, offset),)), (i32(0),))
    block = realize(
        "B", [(spatial(vi, 16), Var("i"))], body, match_buffers=(MatchBufferRegion(view, source),)
    )
    func = function([a], loop(block.iter_values[0], 16, block), s_tir=True)  # type: ignore[arg-type]
    assert verify_function(func) == []


def test_a_thread_may_be_launched_again_with_the_same_variable() -> None:
    a, tx = buffer("A", 32), Var("tx")
    thread = IterVar(tx, Range(i32(0), i32(32)), IterType.THREAD, "threadIdx.x")
    store = BufferStore(a, BufferLoad(a, (tx,)), (tx,))
    kernel = AttrStmt(thread, "thread_extent", i32(32), store)
    assert (
        verify_function(
            function([a], seq(kernel, AttrStmt(thread, "thread_extent", i32(32), store)))
        )
        == []
    )

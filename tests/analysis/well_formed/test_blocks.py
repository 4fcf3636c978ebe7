"""Blocks and buffer aliasing: unique names, init only with a reduction, bindings inside their
domains, no two owning buffers on one data handle."""

from __future__ import annotations

from tirc.analysis.well_formed import verify_function
from tirc.diagnostics import Severity
from tirc.ir import dtype as dt
from tirc.ir.buffer import Buffer
from tirc.ir.expr import LT, Add, BufferLoad, FloatImm, FloorDiv, Mul, Var
from tirc.ir.stmt import AllocBuffer, BufferStore, DeclBuffer, IfThenElse, seq

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
)


def copy(a: Buffer, index: Var) -> BufferStore:
    return BufferStore(a, BufferLoad(a, (index,)), (index,))


def test_two_blocks_of_one_name_draw_a_warning() -> None:
    text = Listing("""
def main(A: T.Buffer((16,), "float32")):
    for i in range(16):
        with T.sblock("B"):
            vi = T.axis.spatial(16, i)
            A[vi] = A[vi]
        with T.sblock("B"):
            vj = T.axis.spatial(16, i)
            A[vj] = A[vj]
""")
    a, i, vi, vj = buffer("A", 16), Var("i"), Var("vi"), Var("vj")
    first = realize("B", [(spatial(vi, 16), i)], copy(a, vi), span=text.at(3))
    second = realize("B", [(spatial(vj, 16), i)], copy(a, vj), span=text.at(6))
    (error,) = verify_function(function([a], loop(i, 16, seq(first, second)), s_tir=True))
    assert error.severity is Severity.WARNING
    assert error.message == "two blocks are named 'B'; get_sblock cannot tell them apart"
    assert error.span is not None and error.span.line == 6
    assert error.notes[0].span is not None and error.notes[0].span.line == 3


def test_init_without_a_reduction_draws_a_warning() -> None:
    text = Listing("""
def main(A: T.Buffer((16,), "float32")):
    for i in range(16):
        with T.sblock("B"):
            vi = T.axis.spatial(16, i)
            with T.init():
                A[vi] = T.float32(0)
            A[vi] = A[vi]
""")
    a, i, vi = buffer("A", 16), Var("i"), Var("vi")
    init = BufferStore(a, FloatImm(0.0), (vi,), span=text.at(6))
    block = realize("B", [(spatial(vi, 16), i)], copy(a, vi), init=init, span=text.at(3))
    found = verify_function(function([a], loop(i, 16, block), s_tir=True))
    assert messages(found) == [
        "block 'B' has a T.init() but no reduction iteration variable, "
        "so the init runs before every execution of the body"
    ]
    assert lines(found) == [6]
    assert found[0].severity is Severity.WARNING


def test_a_reduction_block_may_have_init() -> None:
    a, b, i, k, vi, vk = (
        buffer("A", 16, 8),
        buffer("B", 16),
        Var("i"),
        Var("k"),
        Var("vi"),
        Var("vk"),
    )
    body = BufferStore(b, Add(BufferLoad(b, (vi,)), BufferLoad(a, (vi, vk))), (vi,))
    block = realize(
        "C",
        [(spatial(vi, 16), i), (reduce(vk, 8), k)],
        body,
        init=BufferStore(b, FloatImm(0.0), (vi,)),
    )
    assert verify_function(function([a, b], loop(i, 16, loop(k, 8, block)), s_tir=True)) == []


def test_binding_outside_the_domain() -> None:
    text = Listing("""
def main(A: T.Buffer((16,), "float32")):
    for i in range(32):
        with T.sblock("B"):
            vi = T.axis.spatial(16, i)
            A[vi] = A[vi]
""")
    a, i, vi = buffer("A", 16), Var("i"), Var("vi")
    binding = Add(i, i32(0), span=text.at(4))
    block = realize("B", [(spatial(vi, 16), binding)], copy(a, vi), span=text.at(3))
    (error,) = verify_function(function([a], loop(i, 32, block), s_tir=True))
    assert (
        error.message
        == "binding of 'vi' in block 'B' takes values in [0, 31], outside its domain [0, 15]"
    )
    assert error.span is not None and error.span.line == 4


def test_binding_checks_follow_split_loops_and_trust_predicates() -> None:
    a, io, ii, vi = buffer("A", 30), Var("io"), Var("ii"), Var("vi")
    fused = Add(Mul(io, i32(8)), ii)
    b = buffer("B", 32)
    exact = realize("B", [(spatial(vi, 32), fused)], copy(b, vi))
    assert verify_function(function([b], loop(io, 4, loop(ii, 8, exact)), s_tir=True)) == []
    vj = Var("vj")
    guarded = realize("C", [(spatial(vj, 30), fused)], copy(a, vj), predicate=LT(fused, i32(30)))
    assert verify_function(function([a], loop(io, 4, loop(ii, 8, guarded)), s_tir=True)) == []
    vk = Var("vk")
    under_if = IfThenElse(LT(fused, i32(30)), realize("D", [(spatial(vk, 30), fused)], copy(a, vk)))
    assert verify_function(function([a], loop(io, 4, loop(ii, 8, under_if)), s_tir=True)) == []
    vm = Var("vm")
    halves = realize("E", [(spatial(vm, 2), FloorDiv(fused, i32(16)))], copy(a, vm))
    assert verify_function(function([a], loop(io, 4, loop(ii, 8, halves)), s_tir=True)) == []


def test_bindings_are_integers() -> None:
    a, i, vi = buffer("A", 16), Var("i"), Var("vi")
    x = Var("x", dt.FLOAT32)
    block = realize("B", [(spatial(vi, 16), x)], copy(a, vi))
    func = function([a], loop(i, 16, block), s_tir=True, scalars=(x,))
    assert messages(verify_function(func)) == [
        "iteration variable 'vi' of block 'B' is bound to a value of type float32; "
        "bindings are integers"
    ]


def test_two_allocations_cannot_share_a_data_handle() -> None:
    text = Listing("""
def main(A: T.Buffer((16,), "float32")):
    C = T.alloc_buffer((16,), "float32")
    D = T.alloc_buffer((16,), "float32", data=C.data)
    D[0] = C[0]
""")
    a, c = buffer("A", 16), buffer("C", 16)
    d = Buffer("D", c.data, dt.FLOAT32, (i32(16),))
    program = seq(
        AllocBuffer(c, span=text.at(2)),
        AllocBuffer(d, span=text.at(3)),
        BufferStore(d, BufferLoad(c, (i32(0),)), (i32(0),)),
    )
    (error,) = verify_function(function([a], program))
    assert error.message == (
        "buffers 'C' and 'D' share the data handle 'C'; "
        "only match_buffer and decl_buffer(data=...) may alias"
    )
    assert error.span is not None and error.span.line == 3
    assert error.notes[0].span is not None and error.notes[0].span.line == 2


def test_a_parameter_and_an_allocation_cannot_share_a_data_handle() -> None:
    a = buffer("A", 16)
    copy_of_a = Buffer("A_copy", a.data, dt.FLOAT32, (i32(16),))
    program = seq(
        AllocBuffer(copy_of_a), BufferStore(copy_of_a, BufferLoad(a, (i32(0),)), (i32(0),))
    )
    assert len(verify_function(function([a], program))) == 1


def test_decl_buffer_is_a_sanctioned_view() -> None:
    a = buffer("A", 4, 4)
    flat = Buffer("A_flat", a.data, dt.FLOAT32, (i32(16),))
    program = seq(
        DeclBuffer(flat, a.data), BufferStore(flat, BufferLoad(a, (i32(0), i32(1))), (i32(0),))
    )
    assert verify_function(function([a], program)) == []

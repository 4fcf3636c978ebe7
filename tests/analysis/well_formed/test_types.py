"""Types and calls: bool conditions, stores of the element type, integer indices one per
dimension, bindings of the variable's type, known intrinsics with the right argument count."""

from __future__ import annotations

from tirc.analysis.well_formed import verify_function
from tirc.diagnostics import Severity
from tirc.ir import dtype as dt
from tirc.ir.expr import BufferLoad, Call, Cast, FloatImm, IntImm, Ramp, Select, Var
from tirc.ir.stmt import AssertStmt, Bind, BufferStore, Evaluate, IfThenElse, While, seq

from .builders import Listing, buffer, function, i32, lines, loop, messages, realize, spatial


def test_conditions_are_bool() -> None:
    text = Listing("""
def main(A: T.Buffer((16,), "float32"), n: T.int32):
    if n:
        A[0] = A[1]
    while n:
        A[0] = A[1]
    assert n, "n"
    A[0] = T.Select(n, A[0], A[1])
""")
    a, n = buffer("A", 16), Var("n")
    store = BufferStore(a, BufferLoad(a, (i32(1),)), (i32(0),))
    select = Select(n, BufferLoad(a, (i32(0),)), BufferLoad(a, (i32(1),)), span=text.at(7))
    program = seq(
        IfThenElse(n, store, span=text.at(2)),
        While(n, store, span=text.at(4)),
        AssertStmt(n, span=text.at(6)),
        BufferStore(a, select, (i32(0),), span=text.at(7)),
    )
    found = verify_function(function([a], program, scalars=(n,)))
    assert messages(found) == [
        "condition of if is int32, true when nonzero; compare it to 0",
        "condition of while is int32, true when nonzero; compare it to 0",
        "condition of assert must be bool, not int32",
        "condition of T.Select must be bool, not int32",
    ]
    assert lines(found) == [2, 4, 6, 7]
    assert [d.severity for d in found] == [Severity.WARNING] * 2 + [Severity.ERROR] * 2


def test_float_branch_conditions_are_errors() -> None:
    a, x = buffer("A", 16), Var("x", dt.FLOAT32)
    store = BufferStore(a, BufferLoad(a, (i32(1),)), (i32(0),))
    found = verify_function(function([a], IfThenElse(x, store), scalars=(x,)))
    assert messages(found) == ["condition of if must be bool, not float32"]


def test_block_predicate_is_bool() -> None:
    a, i, vi = buffer("A", 16), Var("i"), Var("vi")
    block = realize(
        "B", [(spatial(vi, 16), i)], BufferStore(a, BufferLoad(a, (vi,)), (vi,)), predicate=i32(1)
    )
    assert messages(verify_function(function([a], loop(i, 16, block), s_tir=True))) == [
        "condition of T.where in block 'B' must be bool, not int32"
    ]


def test_stored_value_has_the_element_type() -> None:
    text = Listing("""
def main(A: T.Buffer((16,), "float32")):
    A[0] = T.int32(1)
    A[T.Ramp(0, 1, 4)] = A[0]
""")
    a = buffer("A", 16)
    program = seq(
        BufferStore(a, IntImm(1, dt.INT32, span=text.at(2)), (i32(0),)),
        BufferStore(a, BufferLoad(a, (i32(0),), span=text.at(3)), (Ramp(i32(0), i32(1), 4),)),
    )
    found = verify_function(function([a], program))
    assert messages(found) == [
        "value stored into 'A' has type int32, the element it replaces float32",
        "value stored into 'A' has type float32, the elements it replaces float32x4",
    ]
    assert lines(found) == [2, 3]


def test_indices_are_integers_one_per_dimension() -> None:
    text = Listing("""
def main(A: T.Buffer((4, 4), "float32")):
    A[0] = A[0, 0]
    A[T.float32(0), 0] = A[T.Ramp(0, 1, 4), 0]
""")
    a = buffer("A", 4, 4)
    flat = BufferStore(a, BufferLoad(a, (i32(0), i32(0))), (i32(0),), span=text.at(2))
    vector_first = BufferLoad(a, (Ramp(i32(0), i32(1), 4), i32(0)))
    wrong = BufferStore(
        a, Cast(dt.FLOAT32, IntImm(0, dt.INT32)), (FloatImm(0.0), i32(0)), span=text.at(3)
    )
    found = verify_function(
        function([a], seq(flat, wrong, Evaluate(vector_first, span=text.at(3))))
    )
    assert messages(found) == [
        "'A' has 2 dimensions but is indexed with 1 index",
        "index 0 of 'A' has type float32; indices are integers",
        "index 0 of 'A' is a vector; only the last index may be",
    ]
    assert lines(found) == [2, 3, 3]


def test_bind_value_has_the_variable_type() -> None:
    a, x = buffer("A", 16), Var("x", dt.INT64)
    program = seq(Bind(x, i32(1)), BufferStore(a, BufferLoad(a, (x,)), (x,)))
    assert messages(verify_function(function([a], program))) == [
        "'x' has type int64 but is bound to a int32 value"
    ]


def test_calls_name_known_intrinsics_with_their_arity() -> None:
    a = buffer("A", 16)
    x = BufferLoad(a, (i32(0),))
    program = seq(
        BufferStore(a, Call(dt.FLOAT32, "expo", (x,)), (i32(0),)),
        BufferStore(a, Call(dt.FLOAT32, "exp", (x, x)), (i32(0),)),
    )
    assert messages(verify_function(function([a], program))) == [
        "unknown intrinsic 'T.expo'",
        "T.exp takes 1 argument, 2 given",
    ]


def test_a_handle_is_no_condition() -> None:
    """What `if A.data:` would build if the parser let it through (it does not)."""
    a = buffer("A", 16)
    store = BufferStore(a, BufferLoad(a, (i32(1),)), (i32(0),))
    choose = Call(dt.FLOAT32, "if_then_else", (a.data, BufferLoad(a, (i32(0),)), FloatImm(0.0)))
    program = seq(
        IfThenElse(a.data, store),
        While(a.data, store),
        AssertStmt(a.data),
        BufferStore(a, choose, (i32(2),)),
    )
    assert messages(verify_function(function([a], program))) == [
        "condition of if must be bool, not handle",
        "condition of while must be bool, not handle",
        "condition of assert must be bool, not handle",
        "condition of T.if_then_else must be bool, not handle",
    ]

"""Scalable vectors (SVE, RVV): lanes written `T.vscale() * k`, dtypes `float32xvscalex4`. tirc
reads, prints and verifies them as TVM 0.27 writes them; running or compiling one is refused,
located."""

from __future__ import annotations

import pytest

from tirc.analysis.stored_types import refuse_stored_only
from tirc.diagnostics import DiagnosticError
from tirc.ir import dtype as dt
from tirc.ir.expr import Broadcast, IntImm, Ramp, vscale_multiple, vscale_times
from tirc.ir.structural import find_difference
from tirc.text import parse, print_module

HEADER = (
    "@I.ir_module\nclass Module:\n    @T.prim_func(s_tir=True)\n"
    '    def main(A: T.Buffer((200,), "float32"), B: T.Buffer((200,), "float32")):\n'
)
# statements as TVM 0.27 prints them (tests from its test_tir_transform_vectorize and
# test_tvmscript_roundtrip), each a fixed point of print(parse(...))
STATEMENTS = [
    "A[0:T.vscale() * 4] = T.Broadcast(T.float32(1.0), T.vscale() * 4)",
    "B[0:T.vscale() * 4] = A[T.Ramp(0, 1, T.vscale() * 4)]",
    "A[11:11 + T.vscale() * 4 * 2:2] = T.Broadcast(T.float32(125.0), T.vscale() * 4)",
    'A[0:T.vscale() * 4] = T.Cast("float32xvscalex4", T.Broadcast(T.float32(3.0),'
    " T.vscale() * 4) == B[T.Ramp(0, 1, T.vscale() * 4)])",
    "A[0:T.vscale() * 4] = T.max(T.Broadcast(T.float32(3.0), T.vscale() * 4),"
    " B[T.Ramp(0, 1, T.vscale() * 4)])",
    'B[0:T.vscale() * 8] = T.reinterpret("float32xvscalex8", A[T.Ramp(0, 1, T.vscale() * 8)])',
]


def program(statement: str) -> str:
    return HEADER + f"        {statement}\n"


@pytest.mark.parametrize("statement", STATEMENTS)
def test_tvm_spelling_is_a_fixed_point(statement: str) -> None:
    module = parse(program(statement))
    printed = print_module(module)
    assert statement in printed, printed
    assert find_difference(parse(printed), module) is None


def test_loop_slices_take_their_symbolic_start() -> None:
    text = (
        HEADER.replace("B: T.Buffer", "n: T.int32, B: T.Buffer") + "        for i in range(n):\n"
        "            A[i * (T.vscale() * 4):i * (T.vscale() * 4) + T.vscale() * 4] ="
        " T.Broadcast(T.float32(0.0), T.vscale() * 4)\n"
    )
    module = parse(text)
    assert print_module(parse(print_module(module))) == print_module(module)
    assert "A[i * (T.vscale() * 4):i * (T.vscale() * 4) + T.vscale() * 4]" in print_module(module)


def test_dtypes() -> None:
    scalable = dt.parse_dtype("float32xvscalex4")
    assert scalable.scalable and scalable.lanes == 4 and scalable.is_vector
    assert str(scalable) == "float32xvscalex4" and scalable.element == dt.FLOAT32
    assert scalable != dt.parse_dtype("float32x4") and not scalable.is_computed
    with pytest.raises(dt.DTypeError):
        dt.parse_dtype("handlexvscalex4")


def test_nodes() -> None:
    ramp = Ramp(IntImm(0), IntImm(1), 4, scalable=True)
    assert ramp.dtype == dt.parse_dtype("int32xvscalex4")
    broadcast = Broadcast(IntImm(0), 4, scalable=True)
    assert find_difference(ramp, broadcast) is not None
    assert (ramp == broadcast) is False
    assert find_difference(Ramp(IntImm(0), IntImm(1), 4), ramp) is not None
    assert vscale_multiple(vscale_times(8)) == 8 and vscale_multiple(IntImm(8)) is None


def test_a_step_that_does_not_divide_the_lanes_is_an_error() -> None:
    with pytest.raises(DiagnosticError, match="scalable slice's step must divide its extent"):
        parse(program("A[0:T.vscale() * 3:2] = T.Broadcast(T.float32(1.0), T.vscale() * 2)"))


def test_running_or_compiling_is_refused_at_the_vector() -> None:
    module = parse(program(STATEMENTS[1]), name="sve.tir")
    with pytest.raises(DiagnosticError) as caught:
        refuse_stored_only(module)
    (diagnostic,) = caught.value.diagnostics
    assert "scalable vectors" in diagnostic.message
    assert diagnostic.span is not None and str(diagnostic.span).startswith("sve.tir:5:")

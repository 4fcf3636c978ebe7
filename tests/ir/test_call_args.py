"""Call.expr_arg / expr_args: a call's arguments as expressions, and a located error for an
argument that is not one (a Buffer or DataType, which a few builtins take)."""

from __future__ import annotations

import pytest

from tirc.diagnostics import DiagnosticError
from tirc.diagnostics.span import Source, Span
from tirc.ir import expr as E
from tirc.ir.dtype import parse_dtype

INT32 = parse_dtype("int32")
X = E.Var("x", INT32)
Y = E.Var("y", INT32)
SPAN = Span(Source("<test>", "T.call_extern('int32', 'f', x, y)"), 0, 34)


def test_expr_arg_counts_from_either_end() -> None:
    call = E.Call(INT32, "call_extern", (E.StringImm("f"), X, Y))
    assert call.expr_arg(1) is X
    assert call.expr_arg(-1) is Y
    assert call.expr_args(1) == [X, Y]
    assert call.expr_args(3) == []


def test_a_non_expression_argument_is_a_located_error() -> None:
    call = E.Call(INT32, "type_annotation", (X, INT32), span=SPAN)
    assert call.expr_arg(0) is X
    with pytest.raises(DiagnosticError) as raised:
        call.expr_arg(1)
    (diagnostic,) = raised.value.diagnostics
    assert diagnostic.span is SPAN
    assert "argument 1 of T.type_annotation" in diagnostic.message
    assert "DataType" in diagnostic.message
    with pytest.raises(DiagnosticError, match="argument 1 of"):
        call.expr_args()

"""Index maps read from plan text: the forms plans carry, their dtypes, the inverse, errors."""

from __future__ import annotations

import pytest

from tirc.diagnostics import DiagnosticError
from tirc.ir import dtype as dt
from tirc.ir.expr import IntImm, Var
from tirc.schedule.index_map import IndexMapError, parse_index_map
from tirc.text import script


def _texts(exprs: object) -> list[str]:
    return [script(expr) for expr in exprs]  # type: ignore[attr-defined]


def test_script_form_defaults_to_int64_like_tvmscript() -> None:
    mapping = parse_index_map(
        "T.index_map(lambda i0, i1, i2: (i0, i1 // T.int64(16), i2, i1 % T.int64(16)))"
    )
    assert [var.dtype for var in mapping.initial] == [dt.parse_dtype("int64")] * 3
    assert _texts(mapping.final) == ["i0", "i1 // T.int64(16)", "i2", "i1 % T.int64(16)"]


def test_index_dtype_and_bare_lambda() -> None:
    mapping = parse_index_map('T.index_map(lambda i, j: (i, j), index_dtype="int32")')
    assert mapping.initial[0].dtype == dt.INT32
    bare = parse_index_map("lambda i, j: (j, i)", dtype_hint="int64")
    assert bare.initial[0].dtype == dt.parse_dtype("int64")
    assert _texts(bare.final) == ["j", "i"]


def test_map_legalizes_dtypes() -> None:
    mapping = parse_index_map("T.index_map(lambda i: (i // T.int64(4), i % T.int64(4)))")
    index = Var("vi", dt.INT32)
    assert _texts(mapping.map([index])) == [
        'T.Cast("int64", vi) // T.int64(4)',
        'T.Cast("int64", vi) % T.int64(4)',
    ]


def test_inverse_and_shape() -> None:
    mapping = parse_index_map(
        'T.index_map(lambda n, y, x, c: (n * 3136 + y * 56 + x, c), index_dtype="int32")'
    )
    shape = [IntImm(1), IntImm(56), IntImm(56), IntImm(64)]
    assert _texts(mapping.map_shape(shape)) == ["3136", "64"]
    inverse = mapping.inverse(shape)
    assert [var.name for var in inverse.initial] == ["axis0", "c"]
    assert _texts(inverse.final) == ["axis0 // 3136", "axis0 % 3136 // 56", "axis0 % 56", "c"]


def test_given_inverse_is_used() -> None:
    mapping = parse_index_map(
        "T.index_map(lambda i0, i1: (i0 // 64, i1, i0 % 64), "
        'inverse_index_map=lambda a, b, c: (a * 64 + c, b), index_dtype="int32")'
    )
    inverse = mapping.inverse([IntImm(128), IntImm(3)])
    assert _texts(inverse.final) == ["a * 64 + c", "b"]


def test_padding_map_has_no_inverse() -> None:
    mapping = parse_index_map('T.index_map(lambda i: (i // 4, i % 4), index_dtype="int32")')
    with pytest.raises(IndexMapError, match="not a bijective"):
        mapping.inverse([IntImm(14)])


@pytest.mark.parametrize(
    ("text", "message", "column"),
    [
        ("T.index_map(lambda i: (i,), foo=1)", "not foo=", 29),
        ("lambda i: (i +, )", "unexpected ','", 15),
        ("T.index_map(3)", "takes one lambda", 1),
        ("x + 1", "an index map is", 1),
    ],
)
def test_malformed_text_is_located(text: str, message: str, column: int) -> None:
    with pytest.raises(DiagnosticError) as caught:
        parse_index_map(text)
    rendered = str(caught.value)
    assert message in rendered and f":1:{column}:" in rendered, rendered

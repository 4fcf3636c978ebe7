"""Literal spellings against what TVM 0.27 prints for the same values."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tirc.ir import dtype as dt
from tirc.text.printing.literals import format_float, format_int, quote
from tirc.text.printing.names import NameTable, sanitize

# value -> TVM's digits (taken from `T.float64(value).script()`)
FLOATS = [
    (0.0, "0.0"),
    (-0.0, "-0.0"),
    (1.0, "1.0"),
    (0.1, "0.10000000000000001"),
    (1 / 3, "0.33333333333333331"),
    (88.376266479492188, "88.376266479492188"),
    (1e16, "10000000000000000.0"),
    (1e17, "100000000000000000.0"),
    (1e23, "99999999999999991611392.0"),
    (1.5e-7, "1.4999999999999999e-07"),
    (1e-5, "1.0000000000000001e-05"),
    (1e-300, "1e-300"),
    (5e-324, "4.9406564584124654e-324"),
    (0.001, "0.001"),
    (0.0025, "0.0025000000000000001"),
    (123.456, "123.456"),
    (0.1 + 0.2, "0.30000000000000004"),
    (float("inf"), '"inf"'),
    (float("-inf"), '"-inf"'),
    (float("nan"), '"nan"'),
]


@pytest.mark.parametrize(("value", "text"), FLOATS)
def test_float_digits_match_tvm(value: float, text: str) -> None:
    assert format_float(value) == text


@given(st.floats(allow_nan=False, allow_infinity=False))
def test_float_digits_read_back_exactly(value: float) -> None:
    assert float(format_float(value)) == value
    assert math.copysign(1, float(format_float(value))) == math.copysign(1, value)


def test_int_spellings() -> None:
    assert format_int(4, dt.INT32) == "4"
    assert format_int(-1, dt.INT32) == "-1"
    assert format_int(4, dt.INT64) == "T.int64(4)"
    assert format_int(3, dt.INT8) == "T.int8(3)"
    assert format_int(15, dt.UINT32) == "T.uint32(15)"
    assert format_int(1, dt.BOOL) == "T.bool(True)"
    assert format_int(0, dt.BOOL) == "T.bool(False)"


def test_quote_escapes() -> None:
    assert quote("row_major") == '"row_major"'
    assert quote('a"b\\c\n') == '"a\\"b\\\\c\\n"'


def test_sanitize_like_tvm() -> None:
    assert sanitize("a.b") == "a_b"
    assert sanitize("x-y") == "x_y"
    assert sanitize("") == "v"
    assert sanitize("\u00e9") == "__"  # one underscore per UTF-8 byte
    assert sanitize("A_shared") == "A_shared"


def test_names_unique_in_overlapping_scopes() -> None:
    names = NameTable()
    a, b, c, d = object(), object(), object(), object()
    assert names.define(a, "i") == "i"
    assert names.define(b, "i") == "i_1"
    assert names.define(c, "i_1") == "i_1_1"
    names.push()
    assert names.define(d, "T") == "T_1"  # T and I belong to the module aliases
    names.pop()
    assert d not in names
    assert names.define(object(), "T") == "T_1"


def test_names_free_when_scope_closes() -> None:
    names = NameTable()
    names.push()
    first = object()
    assert names.define(first, "i") == "i"
    names.pop()
    assert names.get(first) is None
    assert names.define(object(), "i") == "i"

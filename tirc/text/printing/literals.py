"""Literal spellings as TVM 0.27 writes them. Floats keep every bit of their float64 value:
integral ones positional with `.0`, others `%.17g`, non-finite ones quoted."""

from __future__ import annotations

import math

from tirc.ir.dtype import DataType

_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\t": "\\t", "\r": "\\r"}


def format_float(value: float) -> str:
    """The digits of a float as TVM prints them (without the `T.float32(...)` wrapper)."""
    if math.isinf(value):
        return '"inf"' if value > 0 else '"-inf"'
    if math.isnan(value):
        return '"nan"'
    if value == math.floor(value):
        # positional, exact: 1e17 prints as 100000000000000000.0, -0.0 keeps its sign
        return f"{value:.1f}"
    return f"{value:.17g}"


def quote(text: str) -> str:
    """A double-quoted string literal."""
    if any(char in _ESCAPES for char in text):
        text = "".join(_ESCAPES.get(char, char) for char in text)
    return f'"{text}"'


def format_int(value: int, dtype: DataType) -> str:
    """An integer constant: bare for int32, `T.bool(True)` for bool, `T.int64(4)` otherwise."""
    kind = dtype.kind
    if kind == "int" and dtype.bits == 32:
        return str(value)
    if kind == "bool":
        return "T.bool(True)" if value else "T.bool(False)"
    return f"T.{dtype}({value})"


def format_float_imm(value: float, dtype: DataType) -> str:
    return f"T.{dtype}({format_float(value)})"


def dtype_annotation(dtype: DataType) -> str:
    """The `T.<dtype>` spelling used in parameter and binding annotations."""
    return f"T.{dtype}"

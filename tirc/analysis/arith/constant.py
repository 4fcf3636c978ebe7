"""Exact constant arithmetic per dtype: what `a op b` is when both are known integers.

Integer results wrap to the dtype's width; floor division and floor modulo round toward
negative infinity, truncating ones toward zero, as the language defines them.
"""

from __future__ import annotations

from tirc.ir.dtype import DataType


def wrap(value: int, dtype: DataType) -> int:
    """`value` reduced to the range of integer dtype `dtype` (two's complement)."""
    if dtype.is_bool:
        return 1 if value else 0
    bits = dtype.bits
    value &= (1 << bits) - 1
    if dtype.is_int and value >= 1 << (bits - 1):
        value -= 1 << bits
    return value


def dtype_range(dtype: DataType) -> tuple[int, int]:
    """The least and greatest value of an integer dtype."""
    if dtype.is_bool:
        return 0, 1
    if dtype.is_uint:
        return 0, (1 << dtype.bits) - 1
    return -(1 << (dtype.bits - 1)), (1 << (dtype.bits - 1)) - 1


def floordiv(a: int, b: int) -> int:
    return a // b


def floormod(a: int, b: int) -> int:
    return a % b


def truncdiv(a: int, b: int) -> int:
    quotient = abs(a) // abs(b)
    return quotient if (a >= 0) == (b >= 0) else -quotient


def truncmod(a: int, b: int) -> int:
    return a - truncdiv(a, b) * b

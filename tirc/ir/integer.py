"""Integer semantics of the language per dtype: value ranges, wrap-around, the four divisions.

The one definition the parser's constant folding, the arithmetic analysis and the interpreter
share. Integers are two's complement of the dtype's width; bool holds 0 or 1 (any nonzero
value converts to 1). Floor division and modulo round toward negative infinity, truncating
ones toward zero. Division by zero is the caller's to report.

Index types (int32, int64 scalars) are the ones whose arithmetic the parser's folding and the
simplifier treat as exact, as TVM 0.27 does: their rules assume no overflow and no division by
zero. Every other integer width wraps: its constants fold to the wrapped value, and no
rewrite that assumes no overflow applies to it (see `tirc.ir.arith.fold`).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache

from tirc.ir.dtype import DataType


def int_range(dtype: DataType) -> tuple[int, int]:
    """The least and greatest value of an integer (or bool) dtype."""
    if dtype.is_bool:
        return 0, 1
    if dtype.is_uint:
        return 0, (1 << dtype.bits) - 1
    return -(1 << (dtype.bits - 1)), (1 << (dtype.bits - 1)) - 1


@cache
def wrapper(dtype: DataType) -> Callable[[int], int]:
    """The function taking any integer to the value `dtype` holds for it (modulo 2**bits).

    A closure per dtype, so that generated code can call it without looking at the dtype.
    """
    if dtype.is_bool:

        def wrap_bool(value: int) -> int:
            return 1 if value else 0

        return wrap_bool
    mask = (1 << dtype.bits) - 1
    if dtype.is_uint:

        def wrap_unsigned(value: int) -> int:
            return value & mask

        return wrap_unsigned
    half = 1 << (dtype.bits - 1)

    def wrap_signed(value: int) -> int:
        return ((value + half) & mask) - half

    return wrap_signed


def is_index_type(dtype: DataType) -> bool:
    """int32 or int64, one lane: the dtypes TVM's IsIndexType names (see the module's doc)."""
    return dtype.kind == "int" and dtype.bits in (32, 64) and dtype.lanes == 1


def wrap(value: int, dtype: DataType) -> int:
    """`value` reduced to the range of integer dtype `dtype` (two's complement)."""
    return wrapper(dtype)(value)


def floordiv(a: int, b: int) -> int:
    return a // b


def floormod(a: int, b: int) -> int:
    return a % b


def truncdiv(a: int, b: int) -> int:
    """Division rounding toward zero, as C does."""
    quotient = abs(a) // abs(b)
    return quotient if (a >= 0) == (b >= 0) else -quotient


def truncmod(a: int, b: int) -> int:
    """The remainder of truncdiv: its sign follows the dividend."""
    return a - truncdiv(a, b) * b

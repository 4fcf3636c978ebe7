"""Casts between scalar dtypes, as both models compute them.

int -> int wraps modulo 2**bits; float -> int truncates toward zero, and a value outside the
target's range (or NaN, inf) is an error, as it is undefined in C and LLVM; int -> float and
float -> float round to nearest even; anything -> bool is `!= 0`.
"""

from __future__ import annotations

from enum import Enum

from tirc.interp.semantics import interval
from tirc.ir.dtype import DataType

# float kind -> largest integer magnitude below which every integer is exact in it
_EXACT_INTEGERS = {
    "float64": 1 << 53,
    "float32": 1 << 24,
    "float16": 1 << 11,
    "bfloat16": 1 << 8,
    "float8_e4m3fn": 1 << 4,
    "float8_e5m2": 1 << 3,
}

# (from, to): float conversions that never change a value
_EXACT_WIDENINGS = {
    ("float16", "float32"),
    ("float16", "float64"),
    ("bfloat16", "float32"),
    ("bfloat16", "float64"),
    ("float32", "float64"),
    *(
        (f8, wide)
        for f8 in ("float8_e4m3fn", "float8_e5m2")
        for wide in ("float16", "bfloat16", "float32", "float64")
    ),
}


class Cast(Enum):
    SAME = "the value itself"
    TO_BOOL = "!= 0"
    WRAP = "to an integer from a bool or an integer: modulo 2**bits"
    TRUNCATE = "to an integer from a float: toward zero, an error outside the target's range"
    ROUND = "to a float: to nearest even"


def cast_kind(source: DataType, target: DataType) -> Cast:
    """What a cast between two scalar dtypes (not handles) does."""
    if source == target:
        return Cast.SAME
    if target.is_bool:
        return Cast.TO_BOOL
    if target.is_integer:
        return Cast.TRUNCATE if source.is_float else Cast.WRAP
    return Cast.ROUND


def is_exact(source: DataType, target: DataType, value: interval.Range) -> bool:
    """Whether a ROUND cast of a value in this range leaves it as it is (so that it need not
    round): an integer exact in the float target, or a float widening."""
    if not source.is_float:
        limit = _EXACT_INTEGERS[str(target)]
        return interval.within(value, -limit, limit)
    return (str(source), str(target)) in _EXACT_WIDENINGS

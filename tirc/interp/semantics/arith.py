"""Scalar arithmetic with the semantics of a dtype, called from generated code.

Values are Python ints and floats that always hold a value of their dtype: integers wrap
modulo 2**bits, floats are rounded to the nearest representable value after each operation.
Undefined behaviour (division by zero, float-to-int overflow) raises a Fault at its site.
"""

from __future__ import annotations

import math

from tirc.interp.fault import Fault
from tirc.ir import integer

INF = math.inf
NAN = math.nan

_SCRATCH32 = memoryview(bytearray(4)).cast("f")


def round_f32(x: float) -> float:
    """The float32 nearest to x (ties to even; overflow gives inf), as a Python float."""
    # A one-element float32 memoryview does the C conversion; measured faster than struct.
    _SCRATCH32[0] = x
    return _SCRATCH32[0]


def floordiv(a: int, b: int, site: int) -> int:
    if b == 0:
        raise Fault(site, f"integer division by zero ({a} // 0)")
    return a // b


def floormod(a: int, b: int, site: int) -> int:
    if b == 0:
        raise Fault(site, f"integer modulo by zero ({a} % 0)")
    return a % b


def truncdiv(a: int, b: int, site: int) -> int:
    """Division rounding toward zero, as C does."""
    if b == 0:
        raise Fault(site, f"integer division by zero ({a} / 0)")
    return integer.truncdiv(a, b)


def truncmod(a: int, b: int, site: int) -> int:
    """The remainder of truncdiv: its sign follows the dividend."""
    if b == 0:
        raise Fault(site, f"integer modulo by zero ({a} % 0)")
    return integer.truncmod(a, b)


def fdiv(a: float, b: float) -> float:
    """IEEE division: x / 0 is a signed infinity, 0 / 0 is NaN (Python would raise)."""
    if b:
        return a / b
    if a == 0 or math.isnan(a):
        return NAN
    return math.copysign(INF, a) * math.copysign(1.0, b)


def ffloordiv(a: float, b: float) -> float:
    quotient = fdiv(a, b)
    return math.floor(quotient) if math.isfinite(quotient) else quotient


def ffloormod(a: float, b: float) -> float:
    quotient = ffloordiv(a, b)
    if not math.isfinite(quotient):
        return NAN
    return a - quotient * b


def fmod(a: float, b: float) -> float:
    """C fmod: the sign follows the dividend; fmod(x, 0) is NaN."""
    if b == 0 or math.isinf(a) or math.isnan(a) or math.isnan(b):
        return NAN
    return math.fmod(a, b)


def float_to_int(x: float, low: int, high: int, type_name: str, site: int) -> int:
    """Truncation toward zero; a value outside the target type is undefined, so an error."""
    if math.isnan(x) or math.isinf(x) or not (low - 1 < x < high + 1):
        raise Fault(site, f"cast of {x!r} to {type_name} is out of range (undefined behaviour)")
    return int(x)

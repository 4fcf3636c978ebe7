"""Division, modulo and float-to-int conversion, for one lane and for many.

One lane's rules are called from the thread model's generated code (Python ints and floats
holding values of their dtype); `lanes_*` are the same rules on numpy arrays, with no fault
checks (the lockstep model checks the lanes that execute first). Undefined behaviour
(division by zero, float-to-int overflow) raises a Fault at its site.
"""

from __future__ import annotations

import math

import numpy as np

from tirc.interp.fault import Fault
from tirc.ir import integer

INF = math.inf
NAN = math.nan


def floordiv(a: int, b: int, site: int) -> int:
    if b == 0:
        raise Fault(site, by_zero(a, "//"))
    return a // b


def floormod(a: int, b: int, site: int) -> int:
    if b == 0:
        raise Fault(site, by_zero(a, "%"))
    return a % b


def by_zero(a: object, written: str) -> str:
    what = "modulo" if written == "%" else "division"
    return f"integer {what} by zero ({a} {written} 0)"


def truncdiv(a: int, b: int, site: int) -> int:
    """Division rounding toward zero, as C does."""
    if b == 0:
        raise Fault(site, by_zero(a, "/"))
    return integer.truncdiv(a, b)


def truncmod(a: int, b: int, site: int) -> int:
    """The remainder of truncdiv: its sign follows the dividend."""
    if b == 0:
        raise Fault(site, by_zero(a, "%"))
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
        raise Fault(site, cast_out_of_range(x, type_name))
    return int(x)


def lanes_float_to_int(
    x: np.ndarray, low: int, high: int, kind: np.dtype
) -> tuple[np.ndarray, np.ndarray]:
    """float_to_int on float64 lanes: the truncated values (0 where out of range) and where
    each lane is out of range, for the caller to fault on the lanes that execute."""
    bad = ~((x > low - 1) & (x < high + 1))  # NaN compares false: bad
    if bad.any():
        x = np.where(bad, 0.0, x)
    return np.trunc(x).astype(kind), bad


def bad_shift(bits: int) -> str:
    return f"shift by an amount outside [0, {bits})"


def cast_out_of_range(x: float, type_name: str) -> str:
    return f"cast of {x!r} to {type_name} is out of range (undefined behaviour)"


def _nonzero(b: np.ndarray) -> np.ndarray:
    return np.where(b == 0, 1, b).astype(b.dtype)


def lanes_truncdiv(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    safe = _nonzero(b)
    return ((a - np.fmod(a, safe)) // safe).astype(a.dtype)


def lanes_truncmod(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.fmod(a, _nonzero(b)).astype(a.dtype)


def lanes_floordiv(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.floor_divide(a, _nonzero(b)).astype(a.dtype)


def lanes_floormod(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.remainder(a, _nonzero(b)).astype(a.dtype)


def lanes_ffloordiv(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    quotient = np.true_divide(a, b)
    return np.where(np.isfinite(quotient), np.floor(quotient), quotient)


def lanes_ffloormod(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    quotient = lanes_ffloordiv(a, b)
    return np.where(np.isfinite(quotient), a - quotient * b, np.nan)


def lanes_fmod(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    bad = (b == 0) | np.isinf(a) | np.isnan(a) | np.isnan(b)
    return np.where(bad, np.nan, np.fmod(a, np.where(b == 0, 1.0, b)))

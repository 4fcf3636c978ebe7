"""The lanewise intrinsics: what each computes on one lane, which both executors apply to
every lane (`lane_function`). Math functions take Python floats and give IEEE results (inf,
NaN) where Python's math module would raise; each is computed in float64, and the caller
rounds a float result to the call's dtype. `round` and `nearbyint` round half to even, as
TVM's CPU code does.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from functools import cache

import numpy as np

from tirc.interp.memory.storage import array_type
from tirc.interp.semantics.bits import q_multiply_shift, q_multiply_shift_per_axis
from tirc.ir.dtype import DataType

Unary = Callable[[float], float]
Binary = Callable[[float, float], float]


def _ieee1(fast: Unary, fallback: Callable[[np.float64], np.floating]) -> Unary:
    """math's function, and numpy's where math raises (numpy returns inf or NaN)."""

    def apply(x: float) -> float:
        try:
            return fast(x)
        except (OverflowError, ValueError):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                return float(fallback(np.float64(x)))

    return apply


def _ieee2(fast: Binary, fallback: Callable[[np.float64, np.float64], np.floating]) -> Binary:
    def apply(x: float, y: float) -> float:
        try:
            return fast(x, y)
        except (OverflowError, ValueError, ZeroDivisionError):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                return float(fallback(np.float64(x), np.float64(y)))

    return apply


def _integral(fn: Callable[[float], int]) -> Unary:
    """floor/ceil/trunc as floats; infinities and NaN are their own result."""

    def apply(x: float) -> float:
        return float(fn(x)) if math.isfinite(x) else x

    return apply


def _round_half_even(x: float) -> float:
    return float(round(x)) if math.isfinite(x) else x


def _sigmoid(x: float) -> float:
    if x >= 0:
        return 1.0 / (1.0 + math.exp(-x))
    e = math.exp(x)
    return e / (1.0 + e)


def _rsqrt(x: float) -> float:
    if x > 0:
        return 1.0 / math.sqrt(x)
    if x == 0:
        return math.copysign(math.inf, x)
    return x if math.isnan(x) else math.nan


def _exp10(x: float) -> float:
    return 10.0**x


FLOAT_UNARY: dict[str, Unary] = {
    "exp": _ieee1(math.exp, np.exp),
    "exp2": _ieee1(lambda x: 2.0**x, np.exp2),
    "exp10": _ieee1(_exp10, lambda x: np.power(10.0, x)),
    "log": _ieee1(math.log, np.log),
    "log2": _ieee1(math.log2, np.log2),
    "log10": _ieee1(math.log10, np.log10),
    "log1p": _ieee1(math.log1p, np.log1p),
    "expm1": _ieee1(math.expm1, np.expm1),
    "sqrt": _ieee1(math.sqrt, np.sqrt),
    "rsqrt": _rsqrt,
    "sin": _ieee1(math.sin, np.sin),
    "cos": _ieee1(math.cos, np.cos),
    "tan": _ieee1(math.tan, np.tan),
    "sinh": _ieee1(math.sinh, np.sinh),
    "cosh": _ieee1(math.cosh, np.cosh),
    "tanh": math.tanh,
    "asin": _ieee1(math.asin, np.arcsin),
    "acos": _ieee1(math.acos, np.arccos),
    "atan": math.atan,
    "asinh": math.asinh,
    "acosh": _ieee1(math.acosh, np.arccosh),
    "atanh": _ieee1(math.atanh, np.arctanh),
    "fabs": math.fabs,
    "floor": _integral(math.floor),
    "ceil": _integral(math.ceil),
    "trunc": _integral(math.trunc),
    "round": _round_half_even,
    "nearbyint": _round_half_even,
    "erf": math.erf,
    "sigmoid": _ieee1(_sigmoid, lambda x: 1.0 / (1.0 + np.exp(-x))),
}

FLOAT_BINARY: dict[str, Binary] = {
    "atan2": math.atan2,
    "pow": _ieee2(math.pow, np.power),
    "hypot": _ieee2(math.hypot, np.hypot),
    "copysign": math.copysign,
    "ldexp": _ieee2(lambda x, n: math.ldexp(x, int(n)), lambda x, n: np.ldexp(x, int(n))),
}

FLOAT_PREDICATES: dict[str, Callable[[float], bool]] = {
    "isnan": math.isnan,
    "isinf": math.isinf,
    "isfinite": math.isfinite,
}


@cache
def nextafter(dtype: DataType) -> Binary:
    """C's nextafter on one lane of a float dtype."""
    kind = array_type(dtype).type

    def step(x: float, y: float) -> float:
        return float(np.nextafter(kind(x), kind(y)))

    return step


def popcount(x: int, bits: int) -> int:
    return (x & ((1 << bits) - 1)).bit_count()


def clz(x: int, bits: int) -> int:
    return bits - (x & ((1 << bits) - 1)).bit_length()


_WITH_BITS: dict[str, tuple[Callable[..., int], bool]] = {  # the bits of: the result or not
    "popcount": (popcount, False),
    "clz": (clz, False),
    "q_multiply_shift": (q_multiply_shift, True),
    "q_multiply_shift_per_axis": (q_multiply_shift_per_axis, True),
}
LANEWISE = frozenset((*FLOAT_UNARY, *FLOAT_BINARY, *FLOAT_PREDICATES, *_WITH_BITS))


@cache
def lane_function(op: str, source: DataType, result: DataType) -> Callable[..., object]:
    """What intrinsic `op` (one of LANEWISE) computes on one lane of arguments of element
    type `source`, for a call of element type `result`."""
    if op in FLOAT_PREDICATES and not source.is_float:  # integers are never NaN or infinite
        return _true if op == "isfinite" else _false
    if op in _WITH_BITS:
        function, of_result = _WITH_BITS[op]
        bits = result.bits if of_result else source.bits
        return lambda *args: function(*args, bits)
    functions: dict[str, Callable[..., object]] = {**FLOAT_UNARY, **FLOAT_BINARY}
    return functions.get(op) or FLOAT_PREDICATES[op]


def _true(x: object) -> bool:
    return True


def _false(x: object) -> bool:
    return False

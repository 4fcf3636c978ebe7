"""Values of the lockstep GPU mode: one numpy array per IR value, shape (rows, width).

rows is 1 for a value every lane shares and the lane count otherwise; width is the number of
vector lanes (1 for a scalar). Integers and bools are held in their own numpy type (so
arithmetic wraps modulo 2**bits as the interpreter's `_wrap_*` does). float32 is held as numpy
float32: its + - * are correctly rounded, which is what the scalar interpreter's "compute in
float64, round to float32" gives (float64 has more than 2 * 24 + 2 bits, so that double
rounding is innocuous); every other operation on float32 widens to float64 (`wide`) and rounds
back. The other float kinds are held as float64 rounded to their dtype after each operation,
exactly as the scalar interpreter rounds Python floats (tirc.interp.numeric, narrow_float).
Memory holds narrow floats as bit patterns.
"""

from __future__ import annotations

from collections.abc import Callable

import ml_dtypes
import numpy as np

from tirc.interp.memory import access_type
from tirc.ir.dtype import DataType

_ML_TYPES: dict[str, type] = {
    "bfloat16": ml_dtypes.bfloat16,
    "float8_e4m3fn": ml_dtypes.float8_e4m3fn,
    "float8_e5m2": ml_dtypes.float8_e5m2,
}


_FLOAT32 = np.dtype(np.float32)
_FLOAT64 = np.dtype(np.float64)


def value_type(dtype: DataType) -> np.dtype:
    """The numpy type that holds values of dtype's element kind."""
    if dtype.is_float:
        return _FLOAT32 if str(dtype.element) == "float32" else _FLOAT64
    if dtype.is_bool:
        return np.dtype(np.bool_)
    return access_type(dtype)


def constant(value: object, dtype: DataType) -> np.ndarray:
    """A lane-invariant value of dtype, (1, lanes)."""
    array = np.empty((1, dtype.lanes), dtype=value_type(dtype))
    array[...] = value
    return array


def owned(values: np.ndarray) -> np.ndarray:
    """values that share no memory with a buffer, to be held past the statement computing
    them (a load of one element of every lane may be a view of the buffer's row)."""
    return values if values.base is None else values.copy()


def wide(values: np.ndarray) -> np.ndarray:
    """Float values as float64 (float32 ones widened exactly), for operations computed there."""
    return values.astype(np.float64) if values.dtype == _FLOAT32 else values


def round_to(values: np.ndarray, dtype: DataType) -> np.ndarray:
    """float64 values rounded to a float kind and held in its value type (ties to even;
    bfloat16 through float32)."""
    kind = str(dtype.element)
    if kind == "float64":
        return values
    if kind == "float32":
        return values.astype(np.float32, copy=False)
    if kind == "float16":
        return values.astype(np.float16).astype(np.float64)
    if kind == "bfloat16":
        return _bf16_values(_bf16_bits(values))
    return values.astype(np.float32).astype(_ML_TYPES[kind]).astype(np.float64)


def _bf16_bits(values: np.ndarray) -> np.ndarray:
    bits = values.astype(np.float32).view(np.uint32).astype(np.uint64)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) & 0xFFFF
    quiet = ((bits >> 16) | 0x40) & 0xFFFF
    return np.where(np.isnan(values), quiet, rounded).astype(np.uint16)


def _bf16_values(bits: np.ndarray) -> np.ndarray:
    return bits.view(ml_dtypes.bfloat16).astype(np.float64)


def decode(raw: np.ndarray, dtype: DataType) -> np.ndarray:
    """Values from memory's representation of dtype's element kind."""
    kind = str(dtype.element)
    if kind == "float16":
        return raw.view(np.float16).astype(np.float64)
    if kind in _ML_TYPES:
        return raw.view(_ML_TYPES[kind]).astype(np.float64)
    return raw


def encode(values: np.ndarray, dtype: DataType) -> np.ndarray:
    """Memory's representation of values of dtype (rounding floats as a store does)."""
    kind = str(dtype.element)
    if kind == "float16":
        return values.astype(np.float16).view(np.uint16)
    if kind == "bfloat16":
        return _bf16_bits(values)
    if kind in _ML_TYPES:
        return values.astype(np.float32).astype(_ML_TYPES[kind]).view(np.uint8)
    return values.astype(access_type(dtype), copy=False)


def elementwise(function: Callable[..., object], result: np.dtype) -> Callable[..., np.ndarray]:
    """function (a scalar helper of the interpreter) applied to each element: the exact same
    results as the thread model, for what numpy has no bit-identical counterpart of."""

    def apply(*arrays: np.ndarray) -> np.ndarray:
        shaped = np.broadcast_arrays(*arrays)
        out = np.empty(shaped[0].shape, dtype=result)
        items = [a.ravel().tolist() for a in shaped]
        flat = out.reshape(-1)
        for index, args in enumerate(zip(*items, strict=True)):
            flat[index] = function(*args)
        return out

    return apply


def truncdiv(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """C division (toward zero) of integers; b has no zero where it matters."""
    safe = np.where(b == 0, 1, b).astype(b.dtype)
    remainder = np.fmod(a, safe)
    return ((a - remainder) // safe).astype(a.dtype)


def truncmod(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    safe = np.where(b == 0, 1, b).astype(b.dtype)
    return np.fmod(a, safe).astype(a.dtype)


def floordiv(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    safe = np.where(b == 0, 1, b).astype(b.dtype)
    return np.floor_divide(a, safe).astype(a.dtype)


def floormod(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    safe = np.where(b == 0, 1, b).astype(b.dtype)
    return np.remainder(a, safe).astype(a.dtype)


def fdiv(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.true_divide(a, b)


def ffloordiv(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    quotient = np.true_divide(a, b)
    return np.where(np.isfinite(quotient), np.floor(quotient), quotient)


def ffloormod(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    quotient = ffloordiv(a, b)
    return np.where(np.isfinite(quotient), a - quotient * b, np.nan)


def fmod(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    bad = (b == 0) | np.isinf(a) | np.isnan(a) | np.isnan(b)
    return np.where(bad, np.nan, np.fmod(a, np.where(b == 0, 1.0, b)))

"""The floats narrower than they compute, bfloat16 (`bfloat`) and float8 (`float8`), behind
one face: a value lives in a float32 register holding a value its dtype represents, memory
holds its bits. `widen` reads bits, `round_value` rounds a float32 result to the dtype (after
every operation that makes one), `to_bits` gives the bits of a rounded value (on store).
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
from llvmlite import ir

from tirc.codegen.llvm import bfloat, float8
from tirc.codegen.llvm.types import is_narrow_float
from tirc.ir.dtype import DataType

__all__ = ["constant", "is_narrow_float", "round_value", "to_bits", "widen"]

_NUMPY: dict[str, type] = {
    "bfloat": ml_dtypes.bfloat16,
    "float8_e4m3fn": ml_dtypes.float8_e4m3fn,
    "float8_e5m2": ml_dtypes.float8_e5m2,
}


def widen(builder: ir.IRBuilder, bits: ir.Value, dtype: DataType) -> ir.Value:
    """The float32 value of the bits of a `dtype` value (or a vector of them)."""
    if dtype.kind == "bfloat":
        return bfloat.widen(builder, bits)
    return float8.widen(builder, bits, float8.FORMATS[dtype.kind])


def round_value(builder: ir.IRBuilder, value: ir.Value, dtype: DataType) -> ir.Value:
    """The `dtype` value nearest to a float32 value, still as a float32."""
    if dtype.kind == "bfloat":
        return bfloat.round_value(builder, value)
    return float8.round_value(builder, value, float8.FORMATS[dtype.kind])


def to_bits(builder: ir.IRBuilder, value: ir.Value, dtype: DataType) -> ir.Value:
    """The bits of a float32 register that holds a `dtype` value."""
    if dtype.kind == "bfloat":
        return bfloat.to_bits(builder, value)
    return float8.encode(builder, value, float8.FORMATS[dtype.kind])


def constant(value: float, dtype: DataType) -> float:
    """A literal's `dtype` value, rounded through float32 as the interpreter rounds it."""
    with np.errstate(over="ignore", invalid="ignore"):
        return float(np.float32(value).astype(_NUMPY[dtype.kind]))

"""Floats narrower than float32 (float16, bfloat16, float8): rounding, and bits <-> value.

Memory holds their bit patterns (uint16 / uint8), because memoryview cannot index them;
loads go through a table of all values, stores through the rounding below. bfloat16 is
rounded through float32 first, as TVM computes it (in float32, then narrowed).
"""

from __future__ import annotations

import math
import struct
from collections.abc import Callable

import ml_dtypes
import numpy as np

from tirc.interp.numeric import round_f32

_HALF = struct.Struct("<e")
_U16 = struct.Struct("<H")
_F32 = struct.Struct("<f")
_U32 = struct.Struct("<I")


def f16_bits(x: float) -> int:
    """The float16 nearest to x (ties to even), as its bit pattern."""
    try:
        return int(_U16.unpack(_HALF.pack(x))[0])
    except OverflowError:  # rounds past the largest finite float16
        return 0xFC00 if x < 0 else 0x7C00


def bf16_bits(x: float) -> int:
    """The bfloat16 nearest to float32(x) (ties to even), as its bit pattern."""
    bits = int(_U32.unpack(_F32.pack(round_f32(x)))[0])
    if math.isnan(x):
        return ((bits >> 16) | 0x40) & 0xFFFF  # keep a quiet NaN quiet
    return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) & 0xFFFF


def _table(np_type: type, bits: int) -> list[float]:
    codes = np.arange(1 << bits, dtype=np.uint16 if bits == 16 else np.uint8)
    with np.errstate(invalid="ignore"):
        return [float(v) for v in codes.view(np_type).astype(np.float64)]


F16_VALUES = _table(np.float16, 16)
BF16_VALUES = _table(ml_dtypes.bfloat16, 16)
F8E4M3_VALUES = _table(ml_dtypes.float8_e4m3fn, 8)
F8E5M2_VALUES = _table(ml_dtypes.float8_e5m2, 8)


def _f8_bits(np_type: type) -> Callable[[float], int]:
    def bits(x: float) -> int:
        # ml_dtypes is the definition of these formats; its scalar path is slow but exact.
        return int(np.asarray(round_f32(x), np.float32).astype(np_type).view(np.uint8))

    return bits


f8e4m3_bits = _f8_bits(ml_dtypes.float8_e4m3fn)
f8e5m2_bits = _f8_bits(ml_dtypes.float8_e5m2)


def round_f16(x: float) -> float:
    return F16_VALUES[f16_bits(x)]


def round_bf16(x: float) -> float:
    return BF16_VALUES[bf16_bits(x)]


def round_f8e4m3(x: float) -> float:
    return F8E4M3_VALUES[f8e4m3_bits(x)]


def round_f8e5m2(x: float) -> float:
    return F8E5M2_VALUES[f8e5m2_bits(x)]


class NarrowFloat:
    """How one narrow float kind is stored: its table, encoder and storage width."""

    __slots__ = ("values", "encode", "round", "storage")

    def __init__(
        self,
        values: list[float],
        encode: Callable[[float], int],
        round_: Callable[[float], float],
        storage: str,
    ):
        self.values, self.encode, self.round, self.storage = values, encode, round_, storage


NARROW: dict[str, NarrowFloat] = {
    "float16": NarrowFloat(F16_VALUES, f16_bits, round_f16, "uint16"),
    "bfloat16": NarrowFloat(BF16_VALUES, bf16_bits, round_bf16, "uint16"),
    "float8_e4m3fn": NarrowFloat(F8E4M3_VALUES, f8e4m3_bits, round_f8e4m3, "uint8"),
    "float8_e5m2": NarrowFloat(F8E5M2_VALUES, f8e5m2_bits, round_f8e5m2, "uint8"),
}

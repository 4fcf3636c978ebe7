"""Values of each dtype, as both executors hold them: rounding, and memory's bits <-> values.

One lane is a Python int, float or bool (the thread model); many lanes are a numpy array
(the lockstep model): integers and bools in their own numpy type (so arithmetic wraps modulo
2**bits), float32 as numpy float32 (its + - * are correctly rounded, which is what "compute
in float64, round to float32" gives: float64 has more than 2 * 24 + 2 bits, so that double
rounding is innocuous), every other float kind as float64 rounded to its dtype after each
operation. Memory holds floats narrower than float32 as bit patterns (uint16 / uint8): one
lane reads them through a table of all values, many lanes through ml_dtypes' casts. bfloat16
rounds through float32 first, as TVM computes it (in float32, then narrowed).
"""

from __future__ import annotations

import math
import struct
from collections.abc import Callable

import ml_dtypes
import numpy as np

from tirc.interp.memory.storage import access_type
from tirc.ir.dtype import DataType

_SCRATCH32 = memoryview(bytearray(4)).cast("f")
_HALF = struct.Struct("<e")
_U16 = struct.Struct("<H")
_F32 = struct.Struct("<f")
_U32 = struct.Struct("<I")
_FLOAT32 = np.dtype(np.float32)
_FLOAT64 = np.dtype(np.float64)


def round_f32(x: float) -> float:
    """The float32 nearest to x (ties to even; overflow gives inf), as a Python float."""
    # A one-element float32 memoryview does the C conversion; measured faster than struct.
    _SCRATCH32[0] = x
    return _SCRATCH32[0]


def _bf16_rounded(bits: int | np.ndarray) -> tuple[int | np.ndarray, int | np.ndarray]:
    """(nearest bfloat16, quiet NaN) bit patterns of float32 bit patterns (ties to even)."""
    return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) & 0xFFFF, ((bits >> 16) | 0x40) & 0xFFFF


def _f16_bits(x: float) -> int:
    try:
        return int(_U16.unpack(_HALF.pack(x))[0])
    except OverflowError:  # rounds past the largest finite float16
        return 0xFC00 if x < 0 else 0x7C00


def _bf16_bits(x: float) -> int:
    rounded, quiet = _bf16_rounded(int(_U32.unpack(_F32.pack(round_f32(x)))[0]))
    return int(quiet if math.isnan(x) else rounded)


def _bf16_bits_array(values: np.ndarray) -> np.ndarray:
    rounded, quiet = _bf16_rounded(values.astype(np.float32).view(np.uint32).astype(np.uint64))
    return np.where(np.isnan(values), quiet, rounded).astype(np.uint16)


class NarrowFloat:
    """One float kind narrower than float32: its values for one lane (a table of every bit
    pattern's value, an encoder, a rounding) and for many (numpy casts through `numpy_type`)."""

    __slots__ = ("name", "numpy_type", "storage", "values", "encode", "round")

    def __init__(
        self, name: str, numpy_type: type, storage: type, encode: Callable[[float], int] | None
    ):
        self.name, self.numpy_type, self.storage = name, numpy_type, np.dtype(storage)
        codes: np.ndarray = np.arange(1 << (8 * self.storage.itemsize), dtype=storage)
        with np.errstate(invalid="ignore"):
            values: list[float] = codes.view(numpy_type).astype(np.float64).tolist()
        encode_one = encode or self._encode_one
        self.values, self.encode = values, encode_one
        self.round: Callable[[float], float] = lambda x: values[encode_one(x)]

    def _encode_one(self, x: float) -> int:
        # ml_dtypes is the definition of these formats; its scalar path is slow but exact
        return int(self.encode_array(np.asarray(round_f32(x), np.float32)))

    def encode_array(self, values: np.ndarray) -> np.ndarray:
        if self.name == "bfloat16":
            return _bf16_bits_array(values)
        if self.name == "float16":
            return values.astype(np.float16).view(np.uint16)
        return values.astype(np.float32).astype(self.numpy_type).view(self.storage)

    def decode_array(self, raw: np.ndarray) -> np.ndarray:
        return raw.view(self.numpy_type).astype(np.float64)

    def round_array(self, values: np.ndarray) -> np.ndarray:
        if self.name == "bfloat16":
            return self.decode_array(_bf16_bits_array(values))
        if self.name == "float16":
            return values.astype(np.float16).astype(np.float64)
        return values.astype(np.float32).astype(self.numpy_type).astype(np.float64)


NARROW: dict[str, NarrowFloat] = {
    "float16": NarrowFloat("float16", np.float16, np.uint16, _f16_bits),
    "bfloat16": NarrowFloat("bfloat16", ml_dtypes.bfloat16, np.uint16, _bf16_bits),
    "float8_e4m3fn": NarrowFloat("float8_e4m3fn", ml_dtypes.float8_e4m3fn, np.uint8, None),
    "float8_e5m2": NarrowFloat("float8_e5m2", ml_dtypes.float8_e5m2, np.uint8, None),
}


def round_to(value: float | np.ndarray, dtype: DataType) -> float | np.ndarray:
    """A value rounded to a float dtype: one lane's (a Python float, and one back), or float64
    numpy lanes' (given back in the dtype's value type, see value_type)."""
    kind = str(dtype.element)
    if isinstance(value, np.ndarray):
        if kind == "float64":
            return value
        if kind == "float32":
            return value.astype(np.float32, copy=False)
        return NARROW[kind].round_array(value)
    if kind == "float64":
        return float(value)
    if kind == "float32":
        return round_f32(value)
    return NARROW[kind].round(value)


def value_type(dtype: DataType) -> np.dtype:
    """The numpy type that holds many lanes' values of dtype's element kind."""
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


def decode(raw: np.ndarray, dtype: DataType) -> np.ndarray:
    """Lanes' values from memory's representation of dtype's element kind."""
    narrow = NARROW.get(str(dtype.element))
    return raw if narrow is None else narrow.decode_array(raw)


def encode(values: np.ndarray, dtype: DataType) -> np.ndarray:
    """Memory's representation of lanes' values of dtype (rounding floats as a store does)."""
    narrow = NARROW.get(str(dtype.element))
    if narrow is not None:
        return narrow.encode_array(values)
    return values.astype(access_type(dtype), copy=False)


def elementwise(function: Callable[..., object], result: np.dtype) -> Callable[..., np.ndarray]:
    """A one-lane rule applied to each lane: the exact same results in both executors, for
    what numpy has no bit-identical counterpart of."""

    def apply(*arrays: np.ndarray) -> np.ndarray:
        shaped = np.broadcast_arrays(*arrays)
        out = np.empty(shaped[0].shape, dtype=result)
        items = [a.ravel().tolist() for a in shaped]
        flat = out.reshape(-1)
        for index, args in enumerate(zip(*items, strict=True)):
            flat[index] = function(*args)
        return out

    return apply

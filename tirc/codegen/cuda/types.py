"""CUDA C spellings of tirc dtypes and constants.

Device code uses only built-in C types (NVRTC has no <cstdint>); vector dtypes map to CUDA's
vector structs where one exists (`float4`, `half2`) and are otherwise handled lane by lane.
"""

from __future__ import annotations

import math
import struct

from tirc.diagnostics import DiagnosticError
from tirc.ir.dtype import DataType

SCALAR_TYPES: dict[str, str] = {
    "bool": "bool",
    "int8": "signed char",
    "int16": "short",
    "int32": "int",
    "int64": "long long",
    "uint8": "unsigned char",
    "uint16": "unsigned short",
    "uint32": "unsigned int",
    "uint64": "unsigned long long",
    "float16": "half",
    "bfloat16": "nv_bfloat16",
    "float32": "float",
    "float64": "double",
    "float8_e4m3fn": "__nv_fp8_e4m3",
    "float8_e5m2": "__nv_fp8_e5m2",
    "handle": "void*",
}

# CUDA's vector structs, by element and lane count; their lanes are fields .x .y .z .w
VECTOR_TYPES: dict[tuple[str, int], str] = {
    ("float32", 2): "float2",
    ("float32", 4): "float4",
    ("float64", 2): "double2",
    ("int32", 2): "int2",
    ("int32", 4): "int4",
    ("uint32", 2): "uint2",
    ("uint32", 4): "uint4",
    ("int64", 2): "longlong2",
    ("int8", 4): "char4",
    ("uint8", 4): "uchar4",
    ("float16", 2): "half2",
    ("bfloat16", 2): "nv_bfloat162",
}
LANE_FIELDS = ("x", "y", "z", "w")


def scalar_type(dtype: DataType) -> str:
    """The C type of one lane of `dtype`."""
    name = SCALAR_TYPES.get(str(dtype.element))
    if name is None:
        raise DiagnosticError.at(None, f"CUDA codegen: no C type for {dtype}")
    return name


def vector_type(dtype: DataType) -> str | None:
    """CUDA's vector struct for `dtype`, or None where there is none."""
    return VECTOR_TYPES.get((str(dtype.element), dtype.lanes))


COPY_TYPES = {4: "unsigned", 8: "uint2", 16: "uint4"}  # raw words, by bytes


def copy_type(dtype: DataType) -> str | None:
    """A type whose loads and stores move a vector of `dtype` as it is: its vector struct, or
    raw words of the same size (`uint4` for 8 halves), or None."""
    if not dtype.is_vector:
        return None
    return vector_type(dtype) or COPY_TYPES.get(dtype.bits * dtype.lanes // 8)


def c_type(dtype: DataType) -> str:
    """The C type of a scalar dtype, or of a vector dtype with a CUDA vector struct."""
    if dtype.is_vector:
        vector = vector_type(dtype)
        if vector is None:
            raise DiagnosticError.at(None, f"CUDA codegen: no vector type for {dtype}")
        return vector
    return scalar_type(dtype)


def int_literal(value: int, dtype: DataType) -> str:
    if dtype.is_bool:
        return "true" if value else "false"
    if dtype.bits == 64:
        suffix = "ULL" if dtype.is_uint else "LL"
        if not dtype.is_uint and value == -(2**63):
            return "(-9223372036854775807LL - 1)"
        return f"{value}{suffix}"
    if dtype.is_uint:
        return f"{value}u" if dtype.bits == 32 else f"(({scalar_type(dtype)}){value})"
    if dtype.bits == 32:
        return "(-2147483647 - 1)" if value == -(2**31) else str(value)
    return f"(({scalar_type(dtype)}){value})"


def float_literal(value: float, dtype: DataType) -> str:
    """A literal that reads back to exactly `value` in `dtype`."""
    if dtype.bits == 64:
        if not math.isfinite(value):
            bits = struct.unpack("<q", struct.pack("<d", value))[0]
            return f"__longlong_as_double({bits}LL)"
        return repr(value)
    if not math.isfinite(value):
        bits = struct.unpack("<I", struct.pack("<f", value))[0]
        text = f"__int_as_float(0x{bits:08x})"
    else:
        text = f"{_float32_text(value)}f"
    if dtype.bits == 32 and dtype.kind == "float":
        return text
    return f"(({scalar_type(dtype)}){text})"  # half, bfloat16, fp8 convert from float


def _float32_text(value: float) -> str:
    rounded = struct.unpack("<f", struct.pack("<f", value))[0]
    text = repr(rounded)
    return text if ("e" in text or "." in text) else text + ".0"

"""LLVM types of tirc dtypes for NVPTX: in registers (bool is i1) and in memory (bool is i8);
bfloat16 is LLVM's bfloat."""

from __future__ import annotations

import struct

import llvmlite.ir as ir
import llvmlite.ir.types as llvm_types

from tirc.diagnostics import DiagnosticError
from tirc.ir.dtype import DataType

# Pointers print as `ptr`, as the CPU backend has them (tirc.codegen.llvm.types): LLVM 22 is
# opaque-pointer only, and the PTX must not depend on which backend a process loaded first.
llvm_types.ir_layer_typed_pointers_enabled = False


class BFloatType(llvm_types._BaseFloatType):
    """LLVM's `bfloat`, which llvmlite lacks. A constant is rounded as CUDA C converts a float
    literal (to float, then to the nearest bfloat16, ties to even), and written as the double
    of that value, which LLVM reads exactly."""

    null = "0.0"
    intrinsic_name = "bf16"

    def __str__(self) -> str:
        return "bfloat"

    def format_constant(self, value: float) -> str:
        return str(llvm_types._format_double(_as_bfloat16(value)))


BFloatType._create_instance()


def _as_bfloat16(value: float) -> float:
    (bits,) = struct.unpack("<I", struct.pack("<f", value))
    if (bits & 0x7FFFFFFF) > 0x7F800000:  # a NaN stays one
        return value
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    (rounded,) = struct.unpack("<f", struct.pack("<I", bits))
    return float(rounded)


POINTER = ir.PointerType()
I1, I8, I32, I64 = ir.IntType(1), ir.IntType(8), ir.IntType(32), ir.IntType(64)
BFLOAT = BFloatType()
_FLOATS: dict[int, ir.Type] = {16: ir.HalfType(), 32: ir.FloatType(), 64: ir.DoubleType()}


def scalar_type(dtype: DataType) -> ir.Type:
    element = dtype.element
    if element.is_bool:
        return I1
    if element.is_integer:
        return ir.IntType(element.bits)
    if element.kind == "float" and element.bits in _FLOATS:
        return _FLOATS[element.bits]
    if element.kind == "bfloat" and element.bits == 16:
        return BFLOAT
    if element.is_handle:
        return POINTER
    raise DiagnosticError.at(None, f"--ptx-via llvm: {dtype} is not supported (use NVRTC)")


def value_type(dtype: DataType) -> ir.Type:
    """The type of a value of `dtype` in registers."""
    scalar = scalar_type(dtype)
    return scalar if dtype.lanes == 1 else ir.VectorType(scalar, dtype.lanes)


def memory_type(dtype: DataType) -> ir.Type:
    """The type of one element of `dtype` in memory."""
    scalar = I8 if dtype.element.is_bool else scalar_type(dtype)
    return scalar if dtype.lanes == 1 else ir.VectorType(scalar, dtype.lanes)


def element_bytes(dtype: DataType) -> int:
    return 1 if dtype.element.is_bool else max(1, dtype.element.bits // 8)

"""LLVM types of tirc dtypes for NVPTX: in registers (bool is i1) and in memory (bool is i8)."""

from __future__ import annotations

import llvmlite.ir as ir

from tirc.diagnostics import DiagnosticError
from tirc.ir.dtype import DataType

POINTER = ir.PointerType()
I1, I8, I32, I64 = ir.IntType(1), ir.IntType(8), ir.IntType(32), ir.IntType(64)
_FLOATS: dict[int, ir.Type] = {16: ir.HalfType(), 32: ir.FloatType(), 64: ir.DoubleType()}


def scalar_type(dtype: DataType) -> ir.Type:
    element = dtype.element
    if element.is_bool:
        return I1
    if element.is_integer:
        return ir.IntType(element.bits)
    if element.kind == "float" and element.bits in _FLOATS:
        return _FLOATS[element.bits]
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

"""tir dtypes as LLVM types: the type a value has in a register and the type it has in memory.

They differ for bool, which is `i1` in registers and one byte (`i8`) in memory, so that a
vector of bools is not bit-packed and a `bool *` from C or numpy reads as it is stored, and for
bfloat16, a `float` in registers and its 16 bits (`i16`) in memory (see `bfloat`).
"""

from __future__ import annotations

import llvmlite.ir.types
from llvmlite import ir

from tirc.diagnostics import DiagnosticError
from tirc.ir.buffer import Buffer
from tirc.ir.dtype import DataType
from tirc.ir.expr import IntImm

# LLVM 22 reads opaque pointers only: have llvmlite print every pointer as `ptr` (what its
# LLVMLITE_ENABLE_IR_LAYER_TYPED_POINTERS=0 does), whatever the environment says.
llvmlite.ir.types.ir_layer_typed_pointers_enabled = False

POINTER = ir.PointerType()
I1 = ir.IntType(1)
I8 = ir.IntType(8)
I32 = ir.IntType(32)
I64 = ir.IntType(64)
VOID = ir.VoidType()

_FLOATS: dict[int, ir.Type] = {16: ir.HalfType(), 32: ir.FloatType(), 64: ir.DoubleType()}


def scalar_type(dtype: DataType) -> ir.Type:
    """The register type of one lane of `dtype`."""
    if dtype.kind in ("int", "uint"):
        return ir.IntType(dtype.bits)
    if dtype.kind == "bool":
        return I1
    if dtype.kind == "float":
        return _FLOATS[dtype.bits]
    if dtype.kind == "bfloat":
        return _FLOATS[32]
    if dtype.kind == "handle":
        return POINTER
    raise DiagnosticError.at(None, f"the CPU backend does not support {dtype} values yet")


def value_type(dtype: DataType) -> ir.Type:
    """The register type of a `dtype` value (a vector for several lanes)."""
    element = scalar_type(dtype.element)
    return element if dtype.lanes == 1 else ir.VectorType(element, dtype.lanes)


def memory_type(dtype: DataType) -> ir.Type:
    """The type a `dtype` value has in a buffer."""
    if dtype.is_bool:
        element: ir.Type = I8
    elif dtype.kind == "bfloat":
        element = ir.IntType(16)
    else:
        element = scalar_type(dtype.element)
    return element if dtype.lanes == 1 else ir.VectorType(element, dtype.lanes)


def element_bytes(dtype: DataType) -> int:
    """Bytes one element of a buffer of `dtype` takes (bools take a byte)."""
    return max(1, dtype.bits // 8) * dtype.lanes


def constant_bytes(buffer: Buffer) -> int:
    """The bytes a dense buffer of constant shape spans; 0 when its shape is not constant or it
    has strides or an element offset."""
    if buffer.strides or buffer.elem_offset is not None:
        return 0
    count = 1
    for extent in buffer.shape:
        if not isinstance(extent, IntImm):
            return 0
        count *= extent.value
    return count * element_bytes(buffer.dtype)


def zero(dtype: DataType) -> ir.Constant:
    return ir.Constant(value_type(dtype), None)

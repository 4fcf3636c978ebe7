"""tir dtypes as LLVM types: the type a value has in a register and the type it has in memory.

They differ for bool, which is `i1` in registers and one byte (`i8`) in memory, so that a
vector of bools is not bit-packed and a `bool *` from C or numpy reads as it is stored, and for
the floats narrower than they compute (bfloat16, float8), a `float` in registers and their bits
(`i16`, `i8`) in memory (see `narrow_float`).
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


_NARROW_FLOATS = ("bfloat", "float8_e4m3fn", "float8_e5m2")


def is_narrow_float(dtype: DataType) -> bool:
    """Whether `dtype` computes in float32 registers and is stored as its narrower bits."""
    return dtype.kind in _NARROW_FLOATS


def scalar_type(dtype: DataType) -> ir.Type:
    """The register type of one lane of `dtype`."""
    if dtype.kind in ("int", "uint"):
        return ir.IntType(dtype.bits)
    if dtype.kind == "bool":
        return I1
    if dtype.kind == "float":
        return _FLOATS[dtype.bits]
    if is_narrow_float(dtype):
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
    elif is_narrow_float(dtype):
        element = ir.IntType(dtype.bits)
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


def like(value: ir.Value, element: ir.Type) -> ir.Type:
    """`element`, or a vector of it with as many lanes as `value` has."""
    if isinstance(value.type, ir.VectorType):
        return ir.VectorType(element, value.type.count)
    return element


def splat(value: ir.Value, element: ir.Type, number: int | float) -> ir.Constant:
    """The constant `number` of type `element`, in as many lanes as `value` has."""
    typ = like(value, element)
    if isinstance(typ, ir.VectorType):
        return ir.Constant(typ, [ir.Constant(element, number)] * typ.count)
    return ir.Constant(typ, number)

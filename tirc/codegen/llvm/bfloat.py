"""bfloat16 as TVM computes it: a bfloat16 value lives in a float32 register holding a value
that bfloat16 represents, memory holds its 16 bits. Loads widen the bits, each operation that
makes a bfloat16 value computes in float32 and rounds to nearest even (NaN stays a quiet NaN),
stores keep the upper half of the bits, which the rounding already made exact.

    C[i] = A[i] + B[i]  ->  C.bits[i] = upper16(round(widen(A.bits[i]) + widen(B.bits[i])))
"""

from __future__ import annotations

from llvmlite import ir

from tirc.codegen.llvm import types as T


def widen(builder: ir.IRBuilder, bits: ir.Value) -> ir.Value:
    """The float32 value of bfloat16 bits (i16, or a vector of them)."""
    wide = builder.zext(bits, T.like(bits, T.I32))
    shifted = builder.shl(wide, T.splat(wide, T.I32, 16))
    return builder.bitcast(shifted, T.like(bits, ir.FloatType()))


def round_value(builder: ir.IRBuilder, value: ir.Value) -> ir.Value:
    """The bfloat16 nearest to a float32 value (ties to even), still as a float32; a NaN
    stays NaN, made quiet, as the interpreter's rounding does."""
    bits = builder.bitcast(value, T.like(value, T.I32))
    lowest_kept = builder.and_(
        builder.lshr(bits, T.splat(bits, T.I32, 16)), T.splat(bits, T.I32, 1)
    )
    bias = builder.add(lowest_kept, T.splat(bits, T.I32, 0x7FFF))
    rounded = builder.and_(builder.add(bits, bias), T.splat(bits, T.I32, -0x10000))
    quiet = builder.and_(
        builder.or_(bits, T.splat(bits, T.I32, 0x400000)), T.splat(bits, T.I32, -0x10000)
    )
    is_nan = builder.fcmp_unordered("uno", value, value)
    return builder.bitcast(builder.select(is_nan, quiet, rounded), value.type)


def to_bits(builder: ir.IRBuilder, value: ir.Value) -> ir.Value:
    """The bfloat16 bits of a float32 register that holds a bfloat16 value."""
    bits = builder.bitcast(value, T.like(value, T.I32))
    return builder.trunc(
        builder.lshr(bits, T.splat(bits, T.I32, 16)), T.like(value, ir.IntType(16))
    )

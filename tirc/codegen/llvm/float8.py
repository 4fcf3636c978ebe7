"""float8 (`float8_e4m3fn`, `float8_e5m2`) as ml_dtypes defines it: a float8 value lives in a
float32 register holding a value the format represents, memory holds its 8 bits. Loads widen
the bits exactly (subnormals included), each operation computes in float32 and rounds to the
nearest float8, ties to even; past the largest finite value e4m3fn (no infinities) gives NaN
and e5m2 infinity, and a NaN becomes the format's quiet NaN with its sign kept.

    C[i] = A[i] * B[i]  ->  C.bits[i] = encode(widen(A.bits[i]) * widen(B.bits[i]))
"""

from __future__ import annotations

from dataclasses import dataclass

from llvmlite import ir

from tirc.codegen.llvm import types as T

_F32_MANTISSA = 23
_F32_BIAS = 127
_F32_INFINITY = 0x7F800000
_F32_QUIET_NAN = 0x7FC00000
_SIGN = 0x80


@dataclass(frozen=True)
class Float8Format:
    """One float8 layout: 1 sign bit, then exponent and mantissa bits; `overflow` is the code
    (of the magnitude) a finite value past the largest becomes, `nan` the code ml_dtypes gives
    a NaN, `first_nan` the smallest code that reads as NaN."""

    mantissa_bits: int
    bias: int
    overflow: int
    nan: int
    first_nan: int
    infinity: int | None  # the code of infinity, for a format that has one

    @property
    def shift(self) -> int:
        """How far a float32's mantissa moves right to become this format's."""
        return _F32_MANTISSA - self.mantissa_bits

    @property
    def rebias(self) -> int:
        """What to subtract from a float32's bits to give a normal value this exponent bias."""
        return (_F32_BIAS - self.bias) << _F32_MANTISSA

    @property
    def smallest_normal(self) -> int:
        """The float32 bits of the smallest normal float8."""
        return (_F32_BIAS + 1 - self.bias) << _F32_MANTISSA

    @property
    def subnormal_step(self) -> float:
        """The spacing of subnormal float8 values (and the smallest positive one)."""
        return 2.0 ** (1 - self.bias - self.mantissa_bits)


E4M3FN = Float8Format(
    mantissa_bits=3, bias=7, overflow=0x7F, nan=0x7F, first_nan=0x7F, infinity=None
)
E5M2 = Float8Format(
    mantissa_bits=2, bias=15, overflow=0x7C, nan=0x7E, first_nan=0x7D, infinity=0x7C
)

FORMATS = {"float8_e4m3fn": E4M3FN, "float8_e5m2": E5M2}


def widen(builder: ir.IRBuilder, bits: ir.Value, form: Float8Format) -> ir.Value:
    """The float32 value of float8 bits (i8, or a vector of them)."""
    wide = builder.zext(bits, T.like(bits, T.I32))

    def const(number: int) -> ir.Constant:
        return T.splat(wide, T.I32, number)

    sign = builder.shl(builder.and_(wide, const(_SIGN)), const(24))
    magnitude = builder.and_(wide, const(0x7F))
    # a normal value: its bits moved into a float32's places and the exponent rebiased
    normal = builder.add(builder.shl(magnitude, const(form.shift)), const(form.rebias))
    # a subnormal value: its mantissa (the whole magnitude) counts subnormal steps, exactly
    steps = builder.sitofp(magnitude, T.like(bits, ir.FloatType()))
    scaled = builder.fmul(steps, T.splat(wide, ir.FloatType(), form.subnormal_step))
    subnormal = builder.bitcast(scaled, T.like(bits, T.I32))
    is_subnormal = builder.icmp_unsigned("<", magnitude, const(1 << form.mantissa_bits))
    result = builder.select(is_subnormal, subnormal, normal)
    if form.infinity is not None:
        is_infinity = builder.icmp_unsigned("==", magnitude, const(form.infinity))
        result = builder.select(is_infinity, const(_F32_INFINITY), result)
    is_nan = builder.icmp_unsigned(">=", magnitude, const(form.first_nan))
    result = builder.select(is_nan, const(_F32_QUIET_NAN), result)
    return builder.bitcast(builder.or_(result, sign), T.like(bits, ir.FloatType()))


def encode(builder: ir.IRBuilder, value: ir.Value, form: Float8Format) -> ir.Value:
    """The float8 bits (i8) nearest to a float32 value, ties to even, as ml_dtypes rounds."""
    bits = builder.bitcast(value, T.like(value, T.I32))

    def const(number: int) -> ir.Constant:
        return T.splat(bits, T.I32, number)

    sign = builder.and_(builder.lshr(bits, const(24)), const(_SIGN))
    magnitude = builder.and_(bits, const(0x7FFFFFFF))
    # a normal result: round the float32 bits at the cut (ties to the even side), rebias
    lowest_kept = builder.and_(builder.lshr(magnitude, const(form.shift)), const(1))
    half_below = builder.add(lowest_kept, const((1 << (form.shift - 1)) - 1))
    rounded = builder.add(magnitude, half_below)
    normal = builder.lshr(builder.sub(rounded, const(form.rebias)), const(form.shift))
    is_overflow = builder.icmp_unsigned(">", normal, const(form.overflow))
    normal = builder.select(is_overflow, const(form.overflow), normal)
    # a subnormal result: adding a float32 whose spacing is the subnormal step rounds the
    # magnitude to a whole number of steps (ties to even), which its low bits then count
    magic = T.splat(value, ir.FloatType(), form.subnormal_step * 2.0**_F32_MANTISSA)
    absolute = builder.bitcast(magnitude, value.type)
    shifted = builder.bitcast(builder.fadd(absolute, magic), bits.type)
    subnormal = builder.sub(shifted, builder.bitcast(magic, bits.type))
    is_subnormal = builder.icmp_unsigned("<", magnitude, const(form.smallest_normal))
    code = builder.select(is_subnormal, subnormal, normal)
    is_nan = builder.icmp_unsigned(">", magnitude, const(_F32_INFINITY))
    code = builder.select(is_nan, const(form.nan), code)
    return builder.trunc(builder.or_(code, sign), T.like(value, T.I8))


def round_value(builder: ir.IRBuilder, value: ir.Value, form: Float8Format) -> ir.Value:
    """The float8 nearest to a float32 value, still as a float32."""
    return widen(builder, encode(builder, value, form), form)

"""LLVM intrinsics by name (`T.call_llvm_pure_intrin(dtype, "llvm....", ...)`), for the ones
tirc's intrinsic library emits (x86 AVX-512 VNNI's vpdpbusd), the x86 multiply-adds of
TVM's int8 dot products (pmaddubsw, pmaddwd), and the ones TVM's tests call (sqrt, fabs,
floor, ceil, trunc, lround, ctpop, assume).

Registered into the interpreter's INTRINSICS table under the call ops; the call compiler
takes each call's implementation from `llvm_intrinsic_of` (which fits ctpop to its operand's
width); an LLVM intrinsic without an entry is a located error that names it, when the call
compiles.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from tirc.diagnostics import DiagnosticError
from tirc.interp.semantics.extensions import INTRINSICS
from tirc.ir.dtype import INT32
from tirc.ir.expr import Call, StringImm
from tirc.ir.integer import wrapper

_wrap32 = wrapper(INT32)

Vector = tuple[int, ...]


def _bytes(word: int, signed: bool) -> list[int]:
    raw = [(word >> (8 * lane)) & 0xFF for lane in range(4)]  # little-endian, as on x86
    return [v - 256 if signed and v >= 128 else v for v in raw]


def vpdpbusd(accumulator: Vector, unsigned: Vector, signed: Vector) -> Vector:
    """Per 32-bit lane: accumulator + the dot product of 4 unsigned bytes of the second
    operand with 4 signed bytes of the third, wrapping (the non-saturating form)."""
    return tuple(
        _wrap32(acc + sum(x * y for x, y in zip(_bytes(u, False), _bytes(s, True), strict=False)))
        for acc, u, s in zip(accumulator, unsigned, signed, strict=True)
    )


def _signed(value: int, bits: int) -> int:
    value &= (1 << bits) - 1
    return value - (1 << bits) if value >> (bits - 1) else value


def pmaddubsw(unsigned: Vector, signed: Vector) -> Vector:
    """Per 16-bit lane: the products of two adjacent unsigned bytes of the first operand with
    the signed bytes of the second, added with signed saturation."""
    products = [(u & 0xFF) * _signed(s, 8) for u, s in zip(unsigned, signed, strict=True)]
    return tuple(
        max(-32768, min(32767, products[i] + products[i + 1])) for i in range(0, len(products), 2)
    )


def pmaddwd(a: Vector, b: Vector) -> Vector:
    """Per 32-bit lane: the products of two adjacent signed 16-bit lanes, added (wrapping, as
    the one overflowing case, -32768 * -32768 twice, does)."""
    products = [_signed(x, 16) * _signed(y, 16) for x, y in zip(a, b, strict=True)]
    return tuple(_wrap32(products[i] + products[i + 1]) for i in range(0, len(products), 2))


def _popcount(bits: int) -> Callable[[object], object]:
    """llvm.ctpop on `bits`-bit lanes: the set bits of each lane's two's complement."""
    return _lanewise(lambda x: bin(int(x) & ((1 << bits) - 1)).count("1"))


def _lanewise(function: Callable[[float], object]) -> Callable[[object], object]:
    """An intrinsic of one operand applied to each lane of a vector, or to a scalar."""

    def apply(value: object) -> object:
        if isinstance(value, tuple | list):
            return tuple(function(lane) for lane in value)
        assert isinstance(value, int | float)
        return function(value)

    return apply


def _round_half_away(value: float) -> int:
    """llvm.lround / llvm.llround: to the nearest integer, halves away from zero."""
    magnitude = math.floor(abs(value) + 0.5)
    return int(magnitude if value >= 0 else -magnitude)


LLVM_INTRINSICS: dict[str, Callable[..., object]] = {
    "llvm.x86.avx512.vpdpbusd.512": vpdpbusd,
    "llvm.x86.avx512.vpdpbusd.256": vpdpbusd,
    "llvm.x86.avx512.vpdpbusd.128": vpdpbusd,
    # the float results are rounded to the call's type by the caller (sqrt computed in double
    # and rounded to float32 is float32's correctly rounded sqrt)
    "llvm.sqrt": _lanewise(math.sqrt),
    "llvm.fabs": _lanewise(abs),
    "llvm.floor": _lanewise(lambda x: float(math.floor(x))),
    "llvm.ceil": _lanewise(lambda x: float(math.ceil(x))),
    "llvm.trunc": _lanewise(lambda x: float(math.trunc(x))),
    "llvm.lround": _lanewise(_round_half_away),
    "llvm.llround": _lanewise(_round_half_away),
    "llvm.x86.avx512.pmaddubs.w.512": pmaddubsw,
    "llvm.x86.avx2.pmadd.ub.sw": pmaddubsw,
    "llvm.x86.ssse3.pmadd.ub.sw.128": pmaddubsw,
    "llvm.x86.avx512.pmaddw.d.512": pmaddwd,
    "llvm.x86.avx2.pmadd.wd": pmaddwd,
    "llvm.x86.sse2.pmadd.wd": pmaddwd,
    "llvm.assume": lambda condition: None,  # a hint: true, or the program is undefined
}
# those whose meaning depends on the width of the operand's lanes: made per width
LLVM_INTRINSICS_OF_WIDTH: dict[str, Callable[[int], Callable[..., object]]] = {
    "llvm.ctpop": _popcount,
}


def llvm_intrinsic_of(call: Call) -> Callable[..., object]:
    """The implementation of the intrinsic the call names, taking the call's arguments (the
    name first, as call_llvm_intrinsic does); a located error where there is none."""
    name = next((arg.value for arg in call.args if isinstance(arg, StringImm)), None)
    of_width = LLVM_INTRINSICS_OF_WIDTH.get(name or "")
    operands = call.expr_args(1)
    if of_width is not None and operands:
        if len(operands) != 1:  # each is of one operand, as LLVM declares it
            raise DiagnosticError.at(
                call.span,
                f"{name} takes one operand; this call gives {len(operands)} "
                f"({', '.join(str(operand.dtype) for operand in operands)})",
            )
        bits = operands[0].dtype.bits
        implementation = of_width(bits)
        return lambda _name, *values: implementation(*values)
    if name not in LLVM_INTRINSICS:
        raise DiagnosticError.at(
            call.span,
            f"the interpreter has no implementation of the LLVM intrinsic {name} "
            "(register one in tirc.interp.semantics.llvm_intrinsics.LLVM_INTRINSICS)",
        )
    return call_llvm_intrinsic


def call_llvm_intrinsic(*args: object) -> object:
    """The call's arguments: the intrinsic's name (a string), then its operands."""
    position, name = next((i, arg) for i, arg in enumerate(args) if isinstance(arg, str))
    implementation = LLVM_INTRINSICS.get(name)
    if implementation is None:
        raise NotImplementedError(
            f"the interpreter has no implementation of the LLVM intrinsic {name} "
            "(register one in tirc.interp.semantics.llvm_intrinsics.LLVM_INTRINSICS)"
        )
    return implementation(*args[position + 1 :])


INTRINSICS.setdefault("call_llvm_pure_intrin", call_llvm_intrinsic)
INTRINSICS.setdefault("call_llvm_intrin", call_llvm_intrinsic)

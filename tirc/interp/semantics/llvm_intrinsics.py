"""LLVM intrinsics by name (`T.call_llvm_pure_intrin(dtype, "llvm....", ...)`), for the ones
tirc's intrinsic library emits (x86 AVX-512 VNNI's vpdpbusd) and the float ones TVM's tests
call (sqrt, fabs, floor, ceil, trunc, lround).

Registered into the interpreter's INTRINSICS table under the call ops; an LLVM intrinsic
without an entry in LLVM_INTRINSICS is a located error that names it, when the call compiles.
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
}


def check_llvm_intrinsic(call: Call) -> None:
    """A located error where the interpreter has no implementation of the intrinsic called."""
    name = next((arg.value for arg in call.args if isinstance(arg, StringImm)), None)
    if name not in LLVM_INTRINSICS:
        raise DiagnosticError.at(
            call.span,
            f"the interpreter has no implementation of the LLVM intrinsic {name} "
            "(register one in tirc.interp.semantics.llvm_intrinsics.LLVM_INTRINSICS)",
        )


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

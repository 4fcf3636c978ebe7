"""Extension points: Python implementations of intrinsics and extern functions.

Code outside the interpreter adds entries here (the wmma intrinsics do, in interp/wmma.py).
An implementation receives the call's evaluated arguments: ints, floats, bools, tuples for
vectors, strings, and Storage or Pointer objects for handles; it returns the call's value.
An extern whose meaning depends on its operand types (CUDA's overloads) is registered in
TYPED_EXTERNS instead, as a function of the argument and result dtypes that returns the
implementation for them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from tirc.diagnostics import DiagnosticError
from tirc.interp.semantics import arith
from tirc.interp.semantics.math_functions import FLOAT_BINARY, FLOAT_UNARY
from tirc.ir.dtype import DataType

Implementation = Callable[..., object]

# intrinsic name (Call.op) -> implementation
INTRINSICS: dict[str, Implementation] = {}

# extern function name (the first argument of T.call_extern / T.call_pure_extern) -> implementation
EXTERNS: dict[str, Implementation] = {}

# extern function name -> (argument dtypes, result dtype) -> implementation
TYPED_EXTERNS: dict[str, Callable[[Sequence[DataType], DataType], Implementation]] = {}


def extern_implementation(
    name: str, arg_types: Sequence[DataType], result: DataType
) -> Implementation | None:
    """The implementation of extern `name` called on `arg_types` for a `result`, or None."""
    if name in EXTERNS:
        return EXTERNS[name]
    typed = TYPED_EXTERNS.get(name)
    return typed(arg_types, result) if typed is not None else None


def extern_function(
    name: str, arg_types: Sequence[DataType], result: DataType
) -> Implementation | None:
    """What extern `name` computes: a registered implementation, else the C math function of
    that name in any spelling (expf, __expf, hexp, exp), in float64 (the caller rounds)."""
    implementation = extern_implementation(name, arg_types, result)
    if implementation is not None:
        return implementation
    core, count = c_math_name(name), len(arg_types)
    if core in FLOAT_UNARY and count == 1:
        return FLOAT_UNARY[core]
    if core in FLOAT_BINARY and count == 2:
        return FLOAT_BINARY[core]
    return arith.fmod if core == "fmod" and count == 2 else None


def c_math_name(name: str) -> str:
    """expf, __expf, hexp, exp -> exp: the C, CUDA and half spellings of one function."""
    stripped = name.lstrip("_")
    if stripped in FLOAT_UNARY or stripped in FLOAT_BINARY:
        return stripped
    for prefix, suffix in (("", "f"), ("h", ""), ("", "l")):
        if stripped.startswith(prefix) and stripped.endswith(suffix):
            core = stripped[len(prefix) : len(stripped) - len(suffix) if suffix else None]
            if core in FLOAT_UNARY or core in FLOAT_BINARY or core == "fmod":
                return core
    return stripped


def _dp4a(arg_types: Sequence[DataType], result: DataType) -> Implementation:
    """CUDA's __dp4a(a, b, c), PTX's dp4a.{s32,u32}.{s32,u32}: c plus the dot product of a's
    and b's four 8-bit lanes, each signed or not as its operand's type says (int8x4 / int32
    signed, uint8x4 / uint32 not; a 32-bit scalar packs lane i in bits 8i..8i+7). The sum
    wraps to 32 bits, signed if either operand is, and converts to `result` as C would."""
    if len(arg_types) != 3:
        raise DiagnosticError.at(None, "__dp4a takes three arguments: a, b and c")
    signed_a, signed_b = (t.element.is_int for t in arg_types[:2])
    signed = signed_a or signed_b
    bits = result.element.bits

    def dp4a(a: tuple[int, ...] | int, b: tuple[int, ...] | int, c: int) -> int:
        left = _lanes(a, signed_a)
        right = _lanes(b, signed_b)
        total = sum(x * y for x, y in zip(left, right, strict=True)) + int(c)
        total = _wrap(total, 32, signed)
        return _wrap(total, bits, result.element.is_int)

    return dp4a


def _wrap(value: int, bits: int, signed: bool) -> int:
    low = -(1 << (bits - 1)) if signed else 0
    return (value - low) % (1 << bits) + low


def _lanes(value: tuple[int, ...] | int, signed: bool) -> tuple[int, ...]:
    if isinstance(value, tuple):
        return tuple(int(v) for v in value)
    raw = [(int(value) >> (8 * lane)) & 0xFF for lane in range(4)]
    return tuple(v - 256 if signed and v >= 128 else v for v in raw)


TYPED_EXTERNS.setdefault("__dp4a", _dp4a)

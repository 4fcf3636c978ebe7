"""CUDA's `__dp4a(a, b, c)`: c plus the dot product of the four bytes of a and of b.

Each operand holds four 8-bit integers, as a vector (int8x4, uint8x4) or packed into a 32-bit
integer (int32, uint32; lane i in bits 8i..8i+7), and its type says whether its bytes are
signed. The sum is 32 bits, signed if either operand is (PTX `dp4a.atype.btype d, a, b, c`),
and converts to the call's dtype as a C cast would; so does c to those 32 bits. The
interpreter's rule (interp/semantics/extensions.py) and the NVPTX lowering agree with this one.

CUDA overloads __dp4a for equal signs only, (int, int, int) and (unsigned, unsigned,
unsigned), and plain ints of mixed signedness are ambiguous; so every operand is printed as
one 32-bit word of its own signedness, and mixed signs call a helper around the PTX
instruction (tirc/codegen/cuda/helpers.py).
"""

from __future__ import annotations

from typing import NamedTuple

from tirc.codegen.cuda import types
from tirc.codegen.cuda.expr import PRIMARY, UNARY, Code, ExprPrinter
from tirc.diagnostics import DiagnosticError
from tirc.ir import expr as E

# operand dtype -> whether its bytes are signed
_OPERANDS = {"int8x4": True, "int32": True, "uint8x4": False, "uint32": False}


class Dp4aCall(NamedTuple):
    a: E.PrimExpr
    b: E.PrimExpr
    c: E.PrimExpr
    signed_a: bool
    signed_b: bool

    @property
    def signed(self) -> bool:
        """Whether the 32-bit sum is signed."""
        return self.signed_a or self.signed_b


def dp4a_operands(call: E.Call) -> Dp4aCall:
    """The operands of `call_[pure_]extern(dtype, "__dp4a", a, b, c)` and their signs;
    an error at the operand that does not hold four 8-bit integers."""
    args = [arg for arg in call.args[1:] if isinstance(arg, E.PrimExpr)]
    if len(args) != 3 or len(call.args) != 4:
        raise DiagnosticError.at(call.span, "__dp4a takes three arguments: a, b and c")
    a, b, c = args
    signs = []
    for operand in (a, b):
        signed = _OPERANDS.get(str(operand.type))
        if signed is None:
            raise DiagnosticError.at(
                operand.span or call.span,
                "__dp4a takes four packed 8-bit integers (int8x4, uint8x4, int32 or uint32), "
                f"not {operand.type}",
            )
        signs.append(signed)
    if not c.type.is_integer or c.type.is_vector:
        raise DiagnosticError.at(
            c.span or call.span, f"__dp4a accumulates into a scalar integer, not {c.type}"
        )
    return Dp4aCall(a, b, c, signs[0], signs[1])


def print_dp4a(p: ExprPrinter, call: E.Call, lane: int | None) -> Code:
    """The call as `__dp4a(...)` (equal signs) or `tirc_dp4a_s32_u32(...)` /
    `tirc_dp4a_u32_s32(...)` (mixed), cast to the call's dtype where that differs."""
    dp4a = dp4a_operands(call)
    if dp4a.signed_a == dp4a.signed_b:
        name = "__dp4a"
    else:
        name = "tirc_dp4a_s32_u32" if dp4a.signed_a else "tirc_dp4a_u32_s32"
    result = "int" if dp4a.signed else "unsigned int"
    operands = [_word(p, dp4a.a, lane), _word(p, dp4a.b, lane)]
    if types.scalar_type(dp4a.c.type) == result:
        operands.append(p(dp4a.c, lane))
    else:
        operands.append(f"({result}){p.operand(dp4a.c, lane, UNARY)}")
    text = f"{name}({', '.join(operands)})"
    if types.scalar_type(call.dtype) == result:
        return text, PRIMARY
    return f"({types.scalar_type(call.dtype)}){text}", UNARY


def _word(p: ExprPrinter, operand: E.PrimExpr, lane: int | None) -> str:
    """An operand as one 32-bit word, `int` if its bytes are signed, else `unsigned int`:
    four contiguous, aligned bytes of a buffer read as one word, another vector built from
    its lanes and reinterpreted."""
    dtype = operand.type
    if not dtype.is_vector:
        return p(operand, lane)
    if isinstance(operand, E.BufferLoad) and operand.predicate is None and operand.indices:
        ramp = _as_ramp(operand.indices[-1])
        if ramp is not None and p.is_contiguous(ramp) and p.is_aligned(ramp):
            word = "int" if dtype.is_int else "unsigned int"
            return f"*({word}*)({p.pointer(operand.buffer)} + {p(ramp.base)})"
    # lane by lane: a vector struct read from memory would need the alignment not proven here
    lanes = ", ".join(p(operand, lane) for lane in range(dtype.lanes))
    return f"tirc_dp4a_word(make_{types.c_type(dtype)}({lanes}))"


def _as_ramp(index: E.PrimExpr) -> E.Ramp | None:
    """A vector index as one Ramp, folding in the broadcast offsets added to it (lowering
    leaves `Broadcast(i * 64, 4) + Ramp(k, 1, 4)`), or None."""
    if isinstance(index, E.Ramp):
        return index
    if isinstance(index, E.Add):
        for offset, rest in ((index.a, index.b), (index.b, index.a)):
            if isinstance(offset, E.Broadcast):
                ramp = _as_ramp(rest)
                if ramp is not None:
                    return E.Ramp(E.Add(offset.value, ramp.base), ramp.stride, ramp.lanes)
    return None

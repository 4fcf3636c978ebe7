"""The fixed-point multiplies of quantized kernels, `T.q_multiply_shift(x, y, q, s)` and
`T.q_multiply_shift_per_axis(x, y, left, right, q, left_required, right_required)`, as the
interpreter defines them (interp/semantics/bits.py): ((x << left) * y + 2^(r-1)) >> r with the
total right shift r, rounding half up, computed exactly and truncated to the result type.

The product is computed in the narrowest of i64 / i128 / i256 that provably holds it: the
bound comes from the operand types, or from the value of a constant operand and shift. A
right shift past the product's magnitude rounds every value to 0, so it is clamped there,
which keeps the shift defined. A left shift that is not a constant is taken in [0, 63].

Both LLVM backends emit them from here: the CPU's Emitter and the NVPTX lowering (through an
adapter, codegen/nvptx/calls.py) are each a `Lowering`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol, TypeAlias

from llvmlite import ir

from tirc.codegen.llvm.emitter import Building, broadcast
from tirc.diagnostics import DiagnosticError
from tirc.ir.dtype import DataType
from tirc.ir.expr import Broadcast, Call, IntImm, PrimExpr, are_exprs

DYNAMIC_LEFT_LIMIT = 63
"""The largest left shift a non-constant shift operand is taken to be (larger ones clamp)."""

_WIDTHS = (64, 128, 256)


class Lowering(Building, Protocol):
    """Emits instructions (`builder`) and lowers an operand to a value (`expr`)."""

    def expr(self, expr: object) -> ir.Value: ...


def unsupported(node: Call, what: str) -> DiagnosticError:
    return DiagnosticError.at(node.span, f"the LLVM backends do not support {what} yet")


Shift: TypeAlias = int | ir.Value
"""A shift: a Python int when the program gives it as a constant, else an LLVM value."""
ShiftValues: TypeAlias = Callable[["Wide"], tuple[Shift, Shift]]
"""Emits the (left, right) shifts as values of the wide type."""


@dataclass(frozen=True)
class Wide:
    """Builds lane-wise values of the wide integer type (`lanes` 1: scalars)."""

    em: Lowering
    width: int
    lanes: int

    @property
    def type(self) -> ir.Type:
        element = ir.IntType(self.width)
        return element if self.lanes == 1 else ir.VectorType(element, self.lanes)

    def constant(self, value: int) -> ir.Constant:
        element = ir.Constant(ir.IntType(self.width), value)
        return element if self.lanes == 1 else ir.Constant(self.type, [element] * self.lanes)

    def widen(self, value: ir.Value, signed: bool) -> ir.Value:
        """`value` (a scalar or a vector of `lanes`) extended to the wide type."""
        if self.lanes > 1 and not isinstance(value.type, ir.VectorType):
            value = broadcast(self.em, value, self.lanes)
        if value.type == self.type:
            return value
        builder = self.em.builder
        return builder.sext(value, self.type) if signed else builder.zext(value, self.type)

    def clamp(self, value: ir.Value, low: int, high: int) -> ir.Value:
        builder = self.em.builder
        low_c, high_c = self.constant(low), self.constant(high)
        value = builder.select(builder.icmp_signed("<", value, low_c), low_c, value)
        return builder.select(builder.icmp_signed(">", value, high_c), high_c, value)


def emit_q_multiply_shift(em: Lowering, call: Call) -> ir.Value:
    """left = max(s, 0) and r = q + max(-s, 0): x * y * 2^(s - q), rounded."""
    x, y, q, s = _operands(call)
    q_value, s_value = _constant(q), _constant(s)
    if q_value is not None and s_value is not None:
        return _multiply_shift(em, call, max(s_value, 0), max(-s_value, 0) + q_value)

    def shifts(wide: Wide) -> tuple[Shift, Shift]:
        builder = em.builder
        shift = _shift_value(em, wide, s)
        zero = wide.constant(0)
        negative = builder.icmp_signed("<", shift, zero)
        left = wide.clamp(shift, 0, left_bound)
        right_part = builder.select(negative, builder.neg(shift), zero)
        return left, builder.add(right_part, _shift_value(em, wide, q))

    left_bound = max(s_value, 0) if s_value is not None else DYNAMIC_LEFT_LIMIT
    return _multiply_shift(em, call, left_bound, None, shifts)


def emit_q_multiply_shift_per_axis(em: Lowering, call: Call) -> ir.Value:
    """left = ls if left_required else 0, r = q + (rs if right_required else 0)."""
    _, _, left, right, q, left_required, right_required = _operands(call)
    flags = [_constant(flag) for flag in (left_required, right_required)]
    if flags[0] is None or flags[1] is None:
        raise unsupported(call, "T.q_multiply_shift_per_axis with flags that are not constants")
    left_expr = left if flags[0] else None
    right_exprs = [q] + ([right] if flags[1] else [])
    left_value = _constant(left_expr) if left_expr is not None else 0
    right_values = [_constant(e) for e in right_exprs]
    if left_value is not None and left_value < 0:
        raise unsupported(call, "a negative left shift in T.q_multiply_shift_per_axis")
    known = [value for value in right_values if value is not None]
    if left_value is not None and len(known) == len(right_values):
        return _multiply_shift(em, call, left_value, sum(known))

    def shifts(wide: Wide) -> tuple[Shift, Shift]:
        if left_value is not None:
            left_shift: Shift = left_value
        else:
            assert left_expr is not None  # no left shift is the constant 0
            left_shift = wide.clamp(_shift_value(em, wide, left_expr), 0, DYNAMIC_LEFT_LIMIT)
        total = _shift_value(em, wide, right_exprs[0])
        for expr in right_exprs[1:]:
            total = em.builder.add(total, _shift_value(em, wide, expr))
        return left_shift, total

    left_bound = left_value if left_value is not None else DYNAMIC_LEFT_LIMIT
    return _multiply_shift(em, call, left_bound, None, shifts)


def _operands(call: Call) -> tuple[PrimExpr, ...]:
    if not are_exprs(call.args):
        raise unsupported(call, f"T.{call.op} with an argument that is not an expression")
    return call.args


def _multiply_shift(
    em: Lowering,
    call: Call,
    left_bound: int,
    right: int | None,
    shifts: ShiftValues | None = None,
) -> ir.Value:
    """((x << left) * y + 2^(r-1)) >> r truncated to the call's type. With `right` None the
    shifts are values that `shifts(wide)` emits, the left one at most `left_bound`; else both
    are the constants `left_bound` and `right`."""
    x_expr, y_expr = _operands(call)[:2]
    dtype: DataType = call.dtype
    magnitude = _magnitude(x_expr) * _magnitude(y_expr) << left_bound
    # past 2^(cap-1) > |product|, every rounded quotient is 0: larger shifts clamp to `cap`
    cap = magnitude.bit_length() + 1
    if right is not None:
        right = min(right, cap)
        width = _width(magnitude, right)
    else:
        width = _width(magnitude, cap)
    wide = Wide(em, width, dtype.lanes)
    left_shift: Shift
    right_shift: Shift
    if right is None:
        assert shifts is not None
        left_shift, right_shift = shifts(wide)
    else:
        left_shift, right_shift = left_bound, right
    builder = em.builder
    x = wide.widen(em.expr(x_expr), x_expr.dtype.is_int)
    y = wide.widen(em.expr(y_expr), y_expr.dtype.is_int)
    if isinstance(left_shift, int):
        shifted = builder.shl(x, wide.constant(left_shift)) if left_shift else x
    else:
        shifted = builder.shl(x, left_shift)
    product = builder.mul(shifted, y)
    if isinstance(right_shift, int):
        result = _round_shift(wide, product, right_shift) if right_shift > 0 else product
    else:
        bounded = wide.clamp(right_shift, 1, cap)
        rounded = _round_shift(wide, product, bounded)
        positive = builder.icmp_signed(">", right_shift, wide.constant(0))
        result = builder.select(positive, rounded, product)
    target = ir.IntType(dtype.bits)
    return builder.trunc(result, target if dtype.lanes == 1 else ir.VectorType(target, dtype.lanes))


def _round_shift(wide: Wide, product: ir.Value, right: Shift) -> ir.Value:
    """(product + 2^(right-1)) >> right, arithmetic: a division by 2^right rounding half up."""
    builder = wide.em.builder
    if isinstance(right, int):
        half: ir.Value = wide.constant(1 << (right - 1))
        amount: ir.Value = wide.constant(right)
    else:
        half = builder.shl(wide.constant(1), builder.sub(right, wide.constant(1)))
        amount = right
    return builder.ashr(builder.add(product, half), amount)


def _width(magnitude: int, right: int) -> int:
    """The narrowest width whose signed range holds magnitude + 2^(right-1) and -magnitude,
    and in which a shift by `right` is defined."""
    largest = magnitude + ((1 << (right - 1)) if right > 0 else 0)
    for width in _WIDTHS:
        if largest < 1 << (width - 1) and right < width:
            return width
    return _WIDTHS[-1]  # only past 64-bit operands shifted left by more than 63


def _magnitude(expr: PrimExpr) -> int:
    """A bound on |expr|: its value when constant, else its type's."""
    value = _constant(expr)
    if value is not None:
        return abs(value)
    dtype: DataType = expr.dtype
    return (1 << (dtype.bits - 1)) if dtype.is_int else (1 << dtype.bits) - 1


def _constant(expr: PrimExpr) -> int | None:
    if isinstance(expr, Broadcast):
        expr = expr.value
    return expr.value if isinstance(expr, IntImm) else None


def _shift_value(em: Lowering, wide: Wide, expr: PrimExpr) -> ir.Value:
    signed = not expr.dtype.is_uint
    value = em.expr(expr)
    if isinstance(value.type, ir.IntType) and value.type.width == 1:
        signed = False
    return wide.widen(value, signed)

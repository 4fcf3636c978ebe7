"""Expressions to LLVM values, one rule per IR class registered in `EXPR_RULES` (calls and
buffer loads register theirs in `calls` and `memory`).

Integers wrap, except that signed add/sub/mul carry `nsw` as TVM's code does: index
arithmetic must widen to 64 bits for the vectorizer, and programs whose signed arithmetic
overflows are outside what the backend promises. Float operations allow FMA contraction.
"""

from __future__ import annotations

from collections.abc import Callable

from llvmlite import ir

from tirc.codegen.llvm import narrow_float
from tirc.codegen.llvm import types as T
from tirc.codegen.llvm.casts import emit_cast
from tirc.codegen.llvm.emitter import (
    EXPR_RULES,
    FLOAT_FLAGS,
    Emitter,
    ExprRule,
    broadcast,
    llvm_intrinsic,
)
from tirc.ir import expr as E
from tirc.ir.dtype import DataType


@EXPR_RULES.register(E.Var)
def _var(em: Emitter, expr: E.Var) -> ir.Value:
    return em.lookup(expr)


@EXPR_RULES.register(E.IntImm)
def _int_imm(em: Emitter, expr: E.IntImm) -> ir.Value:
    return ir.Constant(T.value_type(expr.dtype), expr.value)


@EXPR_RULES.register(E.FloatImm)
def _float_imm(em: Emitter, expr: E.FloatImm) -> ir.Value:
    if narrow_float.is_narrow_float(expr.dtype):
        value = narrow_float.constant(expr.value, expr.dtype)
        return ir.Constant(T.value_type(expr.dtype), value)
    return ir.Constant(T.value_type(expr.dtype), expr.value)


@EXPR_RULES.register(E.StringImm)
def _string_imm(em: Emitter, expr: E.StringImm) -> ir.Value:
    data = bytearray(expr.value.encode("utf-8") + b"\0")
    typ = ir.ArrayType(T.I8, len(data))
    name = f"{em.symbol}.str.{len(em.module.globals)}"
    variable = ir.GlobalVariable(em.module, typ, name)
    variable.global_constant = True
    variable.linkage = "private"
    variable.initializer = ir.Constant(typ, data)
    return variable


@EXPR_RULES.register(E.Cast)
def _cast(em: Emitter, expr: E.Cast) -> ir.Value:
    return emit_cast(em.builder, em.expr(expr.value), expr.value.dtype, expr.dtype)


BinaryEmit = Callable[["Emitter", ir.Value, ir.Value, DataType], ir.Value]


def _binary(rule: BinaryEmit) -> ExprRule:
    def emit(em: Emitter, expr: E.BinaryOp) -> ir.Value:
        return rule(em, em.expr(expr.a), em.expr(expr.b), expr.a.dtype)

    return emit


def _arith(int_op: str, uint_op: str, float_op: str) -> ExprRule:
    def rule(em: Emitter, a: ir.Value, b: ir.Value, dtype: DataType) -> ir.Value:
        b_ = em.builder
        if dtype.is_float:
            return getattr(b_, float_op)(a, b, flags=FLOAT_FLAGS)
        if dtype.is_int and int_op in ("add", "sub", "mul"):
            return getattr(b_, int_op)(a, b, flags=("nsw",))
        return getattr(b_, int_op if dtype.is_int else uint_op)(a, b)

    return _binary(rule)


def _float_floor_division(em: Emitter, a: ir.Value, b: ir.Value, dtype: DataType) -> ir.Value:
    quotient = em.builder.fdiv(a, b)
    return llvm_intrinsic(em, "llvm.floor", [quotient], dtype)


def _floordiv(em: Emitter, a: ir.Value, b: ir.Value, dtype: DataType) -> ir.Value:
    """Rounds toward negative infinity: the truncated quotient, less one when the remainder
    is non-zero and its sign differs from the divisor's."""
    if dtype.is_float:
        return _float_floor_division(em, a, b, dtype)
    if dtype.is_uint:
        return em.builder.udiv(a, b)
    builder = em.builder
    quotient, remainder = builder.sdiv(a, b), builder.srem(a, b)
    adjust = _floor_adjust(em, remainder, b, dtype)
    return builder.sub(quotient, builder.zext(adjust, a.type))


def _floormod(em: Emitter, a: ir.Value, b: ir.Value, dtype: DataType) -> ir.Value:
    """The remainder whose sign follows the divisor."""
    builder = em.builder
    if dtype.is_float:
        floor = _float_floor_division(em, a, b, dtype)
        return builder.fsub(a, builder.fmul(floor, b))
    if dtype.is_uint:
        return builder.urem(a, b)
    remainder = builder.srem(a, b)
    adjust = _floor_adjust(em, remainder, b, dtype)
    return builder.select(adjust, builder.add(remainder, b), remainder)


def _floor_adjust(em: Emitter, remainder: ir.Value, b: ir.Value, dtype: DataType) -> ir.Value:
    builder = em.builder
    zero = T.zero(dtype)
    nonzero = builder.icmp_signed("!=", remainder, zero)
    signs_differ = builder.icmp_signed("<", builder.xor(remainder, b), zero)
    return builder.and_(nonzero, signs_differ)


def _extremum(symbol: str) -> ExprRule:
    """`max` keeps a when a > b, else b, as TVM and the interpreter (NaN order included)."""

    def rule(em: Emitter, a: ir.Value, b: ir.Value, dtype: DataType) -> ir.Value:
        return em.builder.select(_compare_values(em, symbol, a, b, dtype), a, b)

    return _binary(rule)


def _compare_values(
    em: Emitter, symbol: str, a: ir.Value, b: ir.Value, dtype: DataType
) -> ir.Value:
    builder = em.builder
    if dtype.is_float:
        # ordered comparisons, except `!=`, which is true for NaN as in C
        return (
            builder.fcmp_unordered(symbol, a, b)
            if symbol == "!="
            else builder.fcmp_ordered(symbol, a, b)
        )
    if dtype.is_int:
        return builder.icmp_signed(symbol, a, b)
    return builder.icmp_unsigned(symbol, a, b)


def _compare(symbol: str) -> ExprRule:
    def emit(em: Emitter, expr: E.CompareOp) -> ir.Value:
        return _compare_values(em, symbol, em.expr(expr.a), em.expr(expr.b), expr.a.dtype)

    return emit


@EXPR_RULES.register(E.And)
def _and(em: Emitter, expr: E.And) -> ir.Value:
    return em.builder.and_(em.expr(expr.a), em.expr(expr.b))


@EXPR_RULES.register(E.Or)
def _or(em: Emitter, expr: E.Or) -> ir.Value:
    return em.builder.or_(em.expr(expr.a), em.expr(expr.b))


@EXPR_RULES.register(E.Not)
def _not(em: Emitter, expr: E.Not) -> ir.Value:
    return em.builder.not_(em.expr(expr.a))


@EXPR_RULES.register(E.Select)
def _select(em: Emitter, expr: E.Select) -> ir.Value:
    condition = em.expr(expr.condition)
    true_value, false_value = em.expr(expr.true_value), em.expr(expr.false_value)
    lanes = expr.dtype.lanes
    if lanes > 1 and not isinstance(condition.type, ir.VectorType):
        condition = broadcast(em, condition, lanes)
    return em.builder.select(condition, true_value, false_value)


@EXPR_RULES.register(E.Broadcast)
def _broadcast(em: Emitter, expr: E.Broadcast) -> ir.Value:
    return broadcast(em, em.expr(expr.value), expr.lanes)


@EXPR_RULES.register(E.Ramp)
def _ramp(em: Emitter, expr: E.Ramp) -> ir.Value:
    base, stride = em.expr(expr.base), em.expr(expr.stride)
    element = expr.base.dtype
    if isinstance(base, ir.Constant) and isinstance(stride, ir.Constant) and element.is_integer:
        start, step = int(base.constant), int(stride.constant)
        return ir.Constant(T.value_type(expr.dtype), [start + step * i for i in range(expr.lanes)])
    offsets = [ir.Constant(T.scalar_type(element), i) for i in range(expr.lanes)]
    steps = ir.Constant(T.value_type(expr.dtype), offsets)
    multiply = em.builder.fmul if element.is_float else em.builder.mul
    add = em.builder.fadd if element.is_float else em.builder.add
    return add(broadcast(em, base, expr.lanes), multiply(broadcast(em, stride, expr.lanes), steps))


@EXPR_RULES.register(E.Shuffle)
def _shuffle(em: Emitter, expr: E.Shuffle) -> ir.Value:
    sources: list[tuple[ir.Value, int]] = []
    for vector in expr.vectors:
        value = em.expr(vector)
        for lane in range(vector.dtype.lanes):
            sources.append((value, lane))
    result: ir.Value = ir.Constant(T.value_type(expr.dtype), None)
    for position, index in enumerate(expr.indices):
        value, lane = sources[E.int_value(index)]
        if isinstance(value.type, ir.VectorType):
            value = em.builder.extract_element(value, ir.Constant(T.I32, lane))
        if expr.dtype.lanes == 1:
            return value
        result = em.builder.insert_element(result, value, ir.Constant(T.I32, position))
    return result


@EXPR_RULES.register(E.Let)
def _let(em: Emitter, expr: E.Let) -> ir.Value:
    em.env[expr.var] = em.expr(expr.value)
    return em.expr(expr.body)


EXPR_RULES.register(E.Add)(_arith("add", "add", "fadd"))
EXPR_RULES.register(E.Sub)(_arith("sub", "sub", "fsub"))
EXPR_RULES.register(E.Mul)(_arith("mul", "mul", "fmul"))
EXPR_RULES.register(E.Div)(_arith("sdiv", "udiv", "fdiv"))
EXPR_RULES.register(E.Mod)(_arith("srem", "urem", "frem"))
EXPR_RULES.register(E.FloorDiv)(_binary(_floordiv))
EXPR_RULES.register(E.FloorMod)(_binary(_floormod))
EXPR_RULES.register(E.Min)(_extremum("<"))
EXPR_RULES.register(E.Max)(_extremum(">"))
EXPR_RULES.register(E.EQ)(_compare("=="))
EXPR_RULES.register(E.NE)(_compare("!="))
EXPR_RULES.register(E.LT)(_compare("<"))
EXPR_RULES.register(E.LE)(_compare("<="))
EXPR_RULES.register(E.GT)(_compare(">"))
EXPR_RULES.register(E.GE)(_compare(">="))

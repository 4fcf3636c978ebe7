"""Expressions to Python expressions, one rule per IR class.

Scalars are Python bools, ints and floats holding a value of their dtype; vectors are tuples of
scalars. Integer results are wrapped only when their range might leave the dtype's; float
results are rounded to their dtype after each operation (float64 needs no rounding).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from tirc.diagnostics import DiagnosticError
from tirc.interp.semantics import interval
from tirc.interp.semantics.operators import (
    ARITHMETIC,
    COMPARISONS,
    DIVISIONS,
    EXTREMA,
    Operator,
)
from tirc.interp.semantics.values import NARROW, round_to
from tirc.interp.threads.access import AccessCompiler
from tirc.interp.threads.call import CallCompiler
from tirc.interp.threads.cast import compile_cast
from tirc.interp.threads.context import Code, Context, Slot
from tirc.ir import expr as E
from tirc.ir.dtype import DataType
from tirc.ir.expr import PrimExpr
from tirc.ir.functor import Dispatch
from tirc.ir.integer import int_range, wrap

# float kind -> the runtime helper that rounds a Python float to it (float64 needs none)
ROUNDERS: dict[str, str] = {"float32": "_f32", **{kind: f"_round_{kind}" for kind in NARROW}}

BinaryRule = Callable[["ExprCompiler", Code, Code, DataType, PrimExpr], Code]


class ExprCompiler:
    def __init__(self, ctx: Context):
        self.ctx = ctx
        self.access = AccessCompiler(ctx, self)
        self.calls = CallCompiler(ctx, self)

    def compile(self, expr: PrimExpr) -> Code:
        rule = _RULES.get(type(expr))
        if rule is None:
            raise DiagnosticError.at(
                expr.span, f"the interpreter cannot evaluate {type(expr).__name__} expressions"
            )
        return rule(self, expr)

    # values of a dtype

    def combine(self, operands: list[Code]) -> Slot | None:
        """The slot of an expression over operands, hoisting each operand that is invariant in
        a loop the expression is not (so that it is computed outside that loop)."""
        slots = [code.slot for code in operands if code.slot is not None]
        target = max(slots, key=lambda slot: slot.order) if slots else None
        if target is not None:
            for index, code in enumerate(operands):
                operands[index] = self.ctx.hoist(code, below=target)
        return target

    def fit_int(self, text: str, value: interval.Range, dtype: DataType) -> Code:
        """An integer result, wrapped into dtype unless its range already fits."""
        low, high = int_range(dtype)
        if interval.within(value, low, high):
            return Code(text, value[0], value[1])
        return Code(f"_wrap_{dtype.element}({text})", low, high)

    def round_float(self, text: str, dtype: DataType) -> Code:
        rounder = ROUNDERS.get(str(dtype.element))
        if rounder is None:
            return Code(text)
        return Code(f"{rounder}({text})", unrounded=text)

    def literal(self, value: int | float, dtype: DataType) -> Code:
        if dtype.is_bool:
            return Code("True" if value else "False", int(bool(value)), int(bool(value)), pure=True)
        if dtype.is_integer:
            number = int(value)
            low, high = int_range(dtype)
            if not low <= number <= high:
                number = wrap(number, dtype)
            return Code(str(number), number, number, pure=True)
        return Code(self.float_literal(float(value), dtype), pure=True)

    def float_literal(self, value: float, dtype: DataType) -> str:
        rounded = round_to(value, dtype)
        if rounded != rounded or rounded in (float("inf"), float("-inf")):
            return self.ctx.constant(rounded, "float")
        return repr(rounded)

    def atom(self, code: Code) -> tuple[str, str]:
        """(first use, later uses) of code: itself if an atom, else a walrus temporary."""
        if code.is_atom:
            return code.text, code.text
        name = self.ctx.temp()
        return f"({name} := {code.text})", name


_RULES: Dispatch[ExprCompiler, [], Code] = Dispatch("expression (interpreter)")


@_RULES.register(E.Var)
def _var(compiler: ExprCompiler, expr: E.Var) -> Code:
    name = compiler.ctx.names.get(expr)
    if name is None:
        raise DiagnosticError.at(expr.span, f"variable '{expr.name}' is used but never defined")
    low, high = compiler.ctx.bounds.get(expr, (None, None))
    slot = compiler.ctx.var_slots.get(expr)
    pure = slot is not None or expr in compiler.ctx.constants
    return Code(name, low, high, pure=pure, slot=slot)


@_RULES.register(E.IntImm)
def _int_imm(compiler: ExprCompiler, expr: E.IntImm) -> Code:
    return compiler.literal(expr.value, expr.dtype)


@_RULES.register(E.FloatImm)
def _float_imm(compiler: ExprCompiler, expr: E.FloatImm) -> Code:
    return Code(compiler.float_literal(expr.value, expr.dtype), pure=True)


@_RULES.register(E.StringImm)
def _string_imm(compiler: ExprCompiler, expr: E.StringImm) -> Code:
    return Code(repr(expr.value))


def _binary(rule: BinaryRule) -> Callable[[ExprCompiler, PrimExpr], Code]:
    """Applies a scalar rule to two operands, lane by lane for vectors."""

    def compile_binary(compiler: ExprCompiler, expr: PrimExpr) -> Code:
        assert isinstance(expr, E.BinaryOp | E.CompareOp | E.LogicalOp)
        operands = [compiler.compile(expr.a), compiler.compile(expr.b)]
        slot = compiler.combine(operands)
        a, b = operands
        operand_type = expr.a.dtype
        if operand_type.is_scalar:
            result = rule(compiler, a, b, operand_type, expr)
            pure = a.pure and b.pure and not _may_fail(expr, b, operand_type)
            return replace(result, pure=pure, slot=slot if pure else None)
        x, y = compiler.ctx.temp(), compiler.ctx.temp()
        lane = rule(compiler, Code(x), Code(y), operand_type.element, expr)
        return Code(compiler.ctx.lanes_of(lane.text, f"{x}, {y}", f"zip({a.text}, {b.text})"))

    return compile_binary


def _may_fail(expr: PrimExpr, divisor: Code, dtype: DataType) -> bool:
    """Integer division and modulo fail on zero; every other binary operation is total."""
    return type(expr) in DIVISIONS and dtype.is_integer and not _nonzero_constant(divisor)


def _arith(operator: Operator) -> BinaryRule:
    def rule(compiler: ExprCompiler, a: Code, b: Code, dtype: DataType, expr: PrimExpr) -> Code:
        text = f"({a.text} {operator.symbol} {b.text})"
        if dtype.is_float:
            return compiler.round_float(text, dtype)
        if dtype.is_integer and operator.bounds is not None:
            value = operator.bounds((a.low, a.high), (b.low, b.high))
            return compiler.fit_int(text, value, dtype)
        raise DiagnosticError.at(expr.span, f"arithmetic on {dtype} values")

    return rule


def _nonzero_constant(code: Code) -> bool:
    return code.constant is not None and code.constant != 0


def _division(compiler: ExprCompiler, a: Code, b: Code, dtype: DataType, expr: PrimExpr) -> Code:
    division = DIVISIONS[type(expr)]
    if dtype.is_integer:
        value = division.bounds((a.low, a.high), (b.low, b.high))
        positive_divisor = b.low is not None and b.low > 0
        nonnegative = a.low is not None and a.low >= 0
        if _nonzero_constant(b) and (division.floors or (nonnegative and positive_divisor)):
            return compiler.fit_int(f"({a.text} {division.symbol} {b.text})", value, dtype)
        site = compiler.ctx.site(expr, "modulo" if division.written == "%" else "division")
        helper = compiler.ctx.constant(division.one_lane, division.one_lane.__name__)
        return compiler.fit_int(f"{helper}({a.text}, {b.text}, {site})", value, dtype)
    if not dtype.is_float:
        raise DiagnosticError.at(expr.span, f"division of {dtype} values")
    if type(expr) is E.Div and b.text not in ("0.0", "-0.0") and _is_float_literal(b.text):
        return compiler.round_float(f"({a.text} / {b.text})", dtype)
    helper = compiler.ctx.constant(division.float_one_lane, division.float_one_lane.__name__)
    return compiler.round_float(f"{helper}({a.text}, {b.text})", dtype)


def _is_float_literal(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _extremum(operator: Operator) -> BinaryRule:
    def rule(compiler: ExprCompiler, a: Code, b: Code, dtype: DataType, expr: PrimExpr) -> Code:
        first_a, later_a = compiler.atom(a)
        first_b, later_b = compiler.atom(b)
        text = f"({later_a} if {first_a} {operator.symbol} {first_b} else {later_b})"
        assert operator.bounds is not None
        return Code(text, *operator.bounds((a.low, a.high), (b.low, b.high)))

    return rule


def _boolean(symbol: str) -> BinaryRule:
    """A comparison, or `and` / `or`: both operands of those are pure, so short-circuiting
    changes nothing but speed."""

    def rule(compiler: ExprCompiler, a: Code, b: Code, dtype: DataType, expr: PrimExpr) -> Code:
        return Code(f"({a.text} {symbol} {b.text})", 0, 1)

    return rule


@_RULES.register(E.Not)
def _not(compiler: ExprCompiler, expr: E.Not) -> Code:
    a = compiler.compile(expr.a)
    if expr.dtype.is_vector:
        x = compiler.ctx.temp()
        return Code(compiler.ctx.lanes_of(f"not {x}", x, a.text))
    return Code(f"(not {a.text})", 0, 1, pure=a.pure, slot=a.slot)


@_RULES.register(E.Select)
def _select(compiler: ExprCompiler, expr: E.Select) -> Code:
    """Both values are evaluated (left to right), then one is picked."""
    condition = compiler.compile(expr.condition)
    true_value = compiler.compile(expr.true_value)
    false_value = compiler.compile(expr.false_value)
    value = interval.union((true_value.low, true_value.high), (false_value.low, false_value.high))
    if expr.dtype.is_scalar:
        picked = f"_select({condition.text}, {true_value.text}, {false_value.text})"
        return Code(picked, *value)
    c, t, f = compiler.ctx.temp(), compiler.ctx.temp(), compiler.ctx.temp()
    condition_lanes = condition.text
    if expr.condition.dtype.is_scalar:
        condition_lanes = f"({condition.text},) * {expr.dtype.lanes}"
    return Code(
        compiler.ctx.lanes_of(
            f"({f}, {t})[{c}]",
            f"{c}, {t}, {f}",
            f"zip({condition_lanes}, {true_value.text}, {false_value.text})",
        )
    )


@_RULES.register(E.Cast)
def _cast(compiler: ExprCompiler, expr: E.Cast) -> Code:
    value = compiler.compile(expr.value)
    source: DataType = expr.value.dtype
    if expr.dtype.is_scalar:
        result = compile_cast(compiler, value, source, expr.dtype, expr)
        pure = value.pure and not (source.is_float and expr.dtype.is_integer)
        return replace(result, pure=pure, slot=value.slot if pure else None)
    x = compiler.ctx.temp()
    lane = compile_cast(compiler, Code(x), source.element, expr.dtype.element, expr)
    return Code(compiler.ctx.lanes_of(lane.text, x, value.text))


@_RULES.register(E.Ramp)
def _ramp(compiler: ExprCompiler, expr: E.Ramp) -> Code:
    """[base + i * stride for i < lanes], base and stride evaluated once."""
    base = compiler.compile(expr.base)
    stride = compiler.compile(expr.stride)
    lane_type = expr.dtype.element
    simple = base.is_atom and stride.is_atom
    b, s = (base.text, stride.text) if simple else (compiler.ctx.temp(), compiler.ctx.temp())
    i = compiler.ctx.temp()
    value: interval.Range = (None, None)
    if lane_type.is_integer:
        steps = interval.mul((stride.low, stride.high), (0, expr.lanes - 1))
        value = interval.union((base.low, base.high), interval.add((base.low, base.high), steps))
        lane = compiler.fit_int(f"{b} + {s} * {i}", value, lane_type)
    else:
        lane = compiler.round_float(f"{b} + {s} * {i}", lane_type)
    lanes = f"tuple([{lane.text} for {i} in range({expr.lanes})])"
    if simple:
        return Code(lanes, *value)
    return Code(f"(lambda {b}, {s}: {lanes})({base.text}, {stride.text})", *value)


@_RULES.register(E.Broadcast)
def _broadcast(compiler: ExprCompiler, expr: E.Broadcast) -> Code:
    value = compiler.compile(expr.value)
    return Code(f"(({value.text},) * {expr.lanes})", value.low, value.high)


@_RULES.register(E.Shuffle)
def _shuffle(compiler: ExprCompiler, expr: E.Shuffle) -> Code:
    parts = []
    for vector in expr.vectors:
        code = compiler.compile(vector)
        parts.append(code.text if vector.dtype.is_vector else f"({code.text},)")
    indices = [compiler.compile(index).text for index in expr.indices]
    concatenated = " + ".join(parts)
    if len(indices) == 1:  # one lane: a scalar
        return Code(f"({concatenated})[{indices[0]}]")
    return Code(f"_shuffle_lanes({concatenated}, ({', '.join(indices)},))")


@_RULES.register(E.Let)
def let(compiler: ExprCompiler, expr: E.Let) -> Code:
    value = compiler.compile(expr.value)
    name = compiler.ctx.bind(expr.var, value.low, value.high)
    body = compiler.compile(expr.body)
    return Code(f"(({name} := {value.text}), {body.text})[1]", body.low, body.high)


@_RULES.register(E.Call)
def _call(compiler: ExprCompiler, expr: E.Call) -> Code:
    return compiler.calls.compile(expr)


@_RULES.register(E.BufferLoad)
def _load(compiler: ExprCompiler, expr: E.BufferLoad) -> Code:
    return compiler.access.load(expr)


for _node, _operator in ARITHMETIC.items():
    _RULES.register(_node)(_binary(_arith(_operator)))
for _node in DIVISIONS:
    _RULES.register(_node)(_binary(_division))
for _node, _operator in EXTREMA.items():
    _RULES.register(_node)(_binary(_extremum(_operator)))
for _node, _operator in COMPARISONS.items():
    _RULES.register(_node)(_binary(_boolean(_operator.symbol)))
_RULES.register(E.And)(_binary(_boolean("and")))
_RULES.register(E.Or)(_binary(_boolean("or")))

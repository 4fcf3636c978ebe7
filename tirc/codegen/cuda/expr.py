"""Expressions as CUDA C, with C's precedences so that output carries few parentheses.

A vector expression is printed one lane at a time (`lane=i`): a Ramp index becomes
`base + i * stride`, a Broadcast its value, arithmetic the arithmetic of lane i. Whole-vector
forms (`*(float4*)(A + i)`, `make_float4(...)`) exist only for CUDA's vector structs.
"""

from __future__ import annotations

from typing import TypeGuard

from tirc.analysis.arith.analyzer import Analyzer
from tirc.codegen.cuda import types
from tirc.codegen.cuda.names import NameTable
from tirc.diagnostics import DiagnosticError
from tirc.ir import expr as E
from tirc.ir.buffer import Buffer
from tirc.ir.dtype import DataType
from tirc.ir.functor import Dispatch
from tirc.ir.substitute import substitute
from tirc.ir.tma import TmaLoad

# C precedence levels, higher binds tighter
PRIMARY, UNARY, MULTIPLY, ADD, SHIFT, RELATION, EQUALITY = 16, 15, 13, 12, 11, 10, 9
BIT_AND, BIT_XOR, BIT_OR, LOGIC_AND, LOGIC_OR, CONDITIONAL = 8, 7, 6, 5, 4, 3

Code = tuple[str, int]  # text and the precedence of its outermost operator

_BINARY: dict[type, tuple[str, int]] = {
    E.Add: ("+", ADD),
    E.Sub: ("-", ADD),
    E.Mul: ("*", MULTIPLY),
    E.Div: ("/", MULTIPLY),
    E.Mod: ("%", MULTIPLY),
    E.EQ: ("==", EQUALITY),
    E.NE: ("!=", EQUALITY),
    E.LT: ("<", RELATION),
    E.LE: ("<=", RELATION),
    E.GT: (">", RELATION),
    E.GE: (">=", RELATION),
    E.And: ("&&", LOGIC_AND),
    E.Or: ("||", LOGIC_OR),
}


def is_narrow_float(dtype: DataType) -> bool:
    """16- and 8-bit floats: CUDA converts these only to and from float reliably."""
    return dtype.is_float and dtype.bits < 32


class ExprPrinter:
    """Prints expressions of one kernel; `pointer_types` holds each declared pointer's element
    type, so that a buffer viewing memory as another dtype gets a cast."""

    def __init__(self, names: NameTable, analyzer: Analyzer | None = None) -> None:
        self.names = names
        self.analyzer = analyzer or Analyzer()
        self.pointer_types: dict[E.Var, DataType] = {}
        self.vector_vars: set[E.Var] = set()  # vector Binds, declared as C arrays
        self.fragments: set[E.Var] = set()  # wmma fragment arrays
        self.accumulators: set[E.Var] = set()
        # loads already held in a vector register: their lanes print as `name.x`, ...
        self.held_loads: dict[int, str] = {}
        # scalar integer Binds (common-subexpr-elim's cse_vN): their values, in terms of
        # variables bound otherwise, for proofs such as alignment
        self.bound_values: dict[E.Var, E.PrimExpr] = {}
        # the kernel's tensor-map parameters (tirc.codegen.cuda.tma): each TMA load's map
        self.tensor_maps: list[tuple[TmaLoad, str]] = []

    def __call__(self, expr: object, lane: int | None = None) -> str:
        return self.code(expr, lane)[0]

    def code(self, expr: object, lane: int | None = None) -> Code:
        rule = RULES.get(type(expr))
        if rule is None or not isinstance(expr, E.PrimExpr):
            raise DiagnosticError.at(
                getattr(expr, "span", None), f"CUDA codegen: cannot emit {type(expr).__name__}"
            )
        if lane is None and expr.dtype.is_vector:
            return self.whole_vector(expr)
        return rule(self, expr, lane)

    def operand(self, expr: object, lane: int | None, at_least: int) -> str:
        text, precedence = self.code(expr, lane)
        return text if precedence >= at_least else f"({text})"

    def pointer(self, buffer: Buffer) -> str:
        """The buffer's data pointer, cast where the buffer views it as another dtype."""
        name = self.names(buffer.data)
        declared = self.pointer_types.get(buffer.data)
        if declared is not None and declared != buffer.dtype:
            return f"(({types.c_type(buffer.dtype)}*){name})"
        return name

    def whole_vector(self, expr: E.PrimExpr) -> Code:
        """A vector value as one of CUDA's vector structs, built from its lanes."""
        dtype: DataType = expr.dtype
        vector = types.vector_type(dtype)
        if vector is None:
            raise DiagnosticError.at(expr.span, f"CUDA codegen: {dtype} is not a CUDA vector type")
        index = expr.indices[-1] if isinstance(expr, E.BufferLoad) else None
        if isinstance(expr, E.BufferLoad) and index is not None and self.is_contiguous(index):
            base = self(index.base)
            return f"*({vector}*)({self.pointer(expr.buffer)} + {base})", UNARY
        lanes = ", ".join(self(expr, lane) for lane in range(dtype.lanes))
        maker = {"half2": "__halves2half2", "nv_bfloat162": "__halves2bfloat162"}.get(
            vector, f"make_{vector}"
        )
        return f"{maker}({lanes})", PRIMARY

    def is_contiguous(self, index: E.PrimExpr) -> TypeGuard[E.Ramp]:
        return isinstance(index, E.Ramp) and E.is_const_int(index.stride, 1)

    def is_aligned(self, index: E.PrimExpr) -> bool:
        """Whether a contiguous vector index starts at a multiple of its lane count, so that a
        vector access through CUDA's (naturally aligned) vector structs is legal."""
        if not isinstance(index, E.Ramp):
            return False
        lanes = E.IntImm(index.lanes, index.base.dtype)
        base = substitute(index.base, self.bound_values) if self.bound_values else index.base
        return self.analyzer.can_prove(E.EQ(E.FloorMod(base, lanes), E.IntImm(0, lanes.dtype)))

    def is_non_negative(self, expr: E.PrimExpr) -> bool:
        zero = E.IntImm(0, expr.dtype)
        return self.analyzer.can_prove(E.GE(expr, zero))

    def cast(self, dtype: DataType, text: str, source: DataType) -> str:
        target = types.scalar_type(dtype)
        if is_narrow_float(dtype) != is_narrow_float(source) and (
            source.element != _FLOAT32 and dtype.element != _FLOAT32
        ):
            return f"({target})(float){text}"  # the narrow floats convert only through float
        return f"({target}){text}"


RULES: Dispatch[ExprPrinter, [int | None], Code] = Dispatch("CUDA codegen")


_FLOAT32 = DataType("float", 32)


@RULES.register(E.Var)
def _var(p: ExprPrinter, node: E.Var, lane: int | None) -> Code:
    name = p.names(node)
    if node in p.vector_vars and lane is not None:
        return f"{name}[{lane}]", PRIMARY
    return name, PRIMARY


@RULES.register(E.IntImm)
def _int(p: ExprPrinter, node: E.IntImm, lane: int | None) -> Code:
    text = types.int_literal(node.value, node.dtype)
    return text, (UNARY if text.startswith(("-", "(")) else PRIMARY)


@RULES.register(E.FloatImm)
def _float(p: ExprPrinter, node: E.FloatImm, lane: int | None) -> Code:
    text = types.float_literal(node.value, node.dtype)
    return text, (UNARY if text.startswith("-") else PRIMARY)


@RULES.register(E.StringImm)
def _string(p: ExprPrinter, node: E.StringImm, lane: int | None) -> Code:
    escaped = node.value.replace("\\", "\\\\").replace('"', '\\"')
    return f'"{escaped}"', PRIMARY


@RULES.register(E.Cast)
def _cast(p: ExprPrinter, node: E.Cast, lane: int | None) -> Code:
    source: DataType = node.value.dtype
    if source.element == node.dtype.element:
        return p.code(node.value, lane)
    return p.cast(node.dtype.element, p.operand(node.value, lane, UNARY), source), UNARY


@RULES.register(E.BinaryOp, E.CompareOp, E.LogicalOp)  # the classes in _BINARY
def _binary(p: ExprPrinter, node: E.BinaryOp | E.CompareOp | E.LogicalOp, lane: int | None) -> Code:
    symbol, precedence = _BINARY[type(node)]
    operand_type = node.a.dtype
    left = p.operand(node.a, lane, precedence)
    right = p.operand(node.b, lane, precedence + 1)
    if operand_type.is_float8:
        # fp8 has no arithmetic: compute in float, store back in fp8
        left, right = f"(float){left}", f"(float){right}"
        text = f"{left} {symbol} {right}"
        if precedence in (ADD, MULTIPLY):
            return f"({types.scalar_type(operand_type)})({text})", UNARY
        return text, precedence
    return f"{left} {symbol} {right}", precedence


@RULES.register(E.FloorDiv, E.FloorMod)
def _floor_div_mod(p: ExprPrinter, node: E.FloorDiv | E.FloorMod, lane: int | None) -> Code:
    is_div = isinstance(node, E.FloorDiv)
    dtype = node.dtype.element
    if dtype.is_float:
        a, b = p(node.a, lane), p(node.b, lane)
        floor = "floor" if dtype.bits == 64 else "floorf"
        if is_narrow_float(dtype):
            a, b = (
                f"(float){p.operand(node.a, lane, UNARY)}",
                f"(float){p.operand(node.b, lane, UNARY)}",
            )
        quotient = f"{floor}({a} / {b})"
        text = quotient if is_div else f"{a} - {quotient} * {b}"
        if is_narrow_float(dtype):
            return f"({types.scalar_type(dtype)})({text})", UNARY
        return text, (PRIMARY if is_div else ADD)
    simple = dtype.is_uint or (
        lane is None
        and p.is_non_negative(node.a)
        and p.analyzer.can_prove(E.GT(node.b, E.IntImm(0, dtype)))
    )
    if simple:
        symbol = "/" if is_div else "%"
        left = p.operand(node.a, lane, MULTIPLY)
        right = p.operand(node.b, lane, MULTIPLY + 1)
        return f"{left} {symbol} {right}", MULTIPLY
    helper = "tirc_floordiv" if is_div else "tirc_floormod"
    return f"{helper}({p(node.a, lane)}, {p(node.b, lane)})", PRIMARY


@RULES.register(E.Min, E.Max)
def _min_max(p: ExprPrinter, node: E.Min | E.Max, lane: int | None) -> Code:
    name = "min" if isinstance(node, E.Min) else "max"
    dtype = node.dtype.element
    a, b = p(node.a, lane), p(node.b, lane)
    if dtype.kind in ("float", "bfloat") and dtype.bits == 16:
        return f"__h{name}({a}, {b})", PRIMARY
    if dtype.is_float8 or (dtype.is_integer and dtype.bits < 32):
        wide = "float" if dtype.is_float8 else "int"
        a, b = p.operand(node.a, lane, UNARY), p.operand(node.b, lane, UNARY)
        text = f"{name}(({wide}){a}, ({wide}){b})"
        return f"({types.scalar_type(dtype)}){text}", UNARY
    if dtype.is_bool:
        symbol = "&&" if name == "min" else "||"
        return (
            f"{p.operand(node.a, lane, LOGIC_AND)} {symbol} {p.operand(node.b, lane, LOGIC_AND)}",
            LOGIC_OR,
        )
    return f"{name}({a}, {b})", PRIMARY


@RULES.register(E.Not)
def _not(p: ExprPrinter, node: E.Not, lane: int | None) -> Code:
    return f"!{p.operand(node.a, lane, UNARY)}", UNARY


@RULES.register(E.Select)
def _select(p: ExprPrinter, node: E.Select, lane: int | None) -> Code:
    condition = p.operand(node.condition, lane, LOGIC_OR)
    then = p.operand(node.true_value, lane, LOGIC_OR)
    otherwise = p.operand(node.false_value, lane, CONDITIONAL)
    return f"{condition} ? {then} : {otherwise}", CONDITIONAL


@RULES.register(E.Ramp)
def _ramp(p: ExprPrinter, node: E.Ramp, lane: int | None) -> Code:
    assert lane is not None
    if lane == 0:
        return p.code(node.base)
    if isinstance(node.stride, E.IntImm):
        offset = types.int_literal(node.stride.value * lane, node.base.dtype)
        return f"{p.operand(node.base, None, ADD)} + {offset}", ADD
    step = types.int_literal(lane, node.base.dtype)
    return (
        f"{p.operand(node.base, None, ADD)} + {p.operand(node.stride, None, MULTIPLY)} * {step}",
        ADD,
    )


@RULES.register(E.Broadcast)
def _broadcast(p: ExprPrinter, node: E.Broadcast, lane: int | None) -> Code:
    return p.code(node.value)


@RULES.register(E.Shuffle)
def _shuffle(p: ExprPrinter, node: E.Shuffle, lane: int | None) -> Code:
    assert lane is not None
    index = node.indices[lane]
    if not isinstance(index, E.IntImm):
        raise DiagnosticError.at(node.span, "CUDA codegen: a shuffle index must be constant")
    position = index.value
    for vector in node.vectors:
        count = vector.dtype.lanes
        if position < count:
            return p.code(vector, position if count > 1 else None)
        position -= count
    raise DiagnosticError.at(node.span, "CUDA codegen: shuffle index out of range")


@RULES.register(E.Let)
def _let(p: ExprPrinter, node: E.Let, lane: int | None) -> Code:
    # C has no let-expressions; the value is pure, so it can stand in for the variable
    return p.code(substitute(node.body, {node.var: node.value}), lane)


@RULES.register(E.BufferLoad)
def _load(p: ExprPrinter, node: E.BufferLoad, lane: int | None) -> Code:
    index = node.indices[-1] if node.indices else E.IntImm(0)
    if len(node.indices) > 1:
        raise DiagnosticError.at(
            node.span, f"CUDA codegen: buffer {node.buffer.name} is not flat; run flatten-buffer"
        )
    held = p.held_loads.get(id(node))
    if held is not None and lane is not None:
        return f"{held}.{types.LANE_FIELDS[lane]}", PRIMARY
    text = f"{p.pointer(node.buffer)}[{p(index, lane)}]"
    if node.predicate is not None:
        zero = types.float_literal(0.0, node.dtype.element) if node.dtype.is_float else "0"
        return f"{p.operand(node.predicate, lane, LOGIC_OR)} ? {text} : {zero}", CONDITIONAL
    return text, PRIMARY

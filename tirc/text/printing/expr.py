"""Expressions as text, parenthesized by Python precedence: each node class renders to
(precedence, text) through a table. Operators print infix unless the text's own operator
would fold them (`T.Add(x, 0)`); integer `/` is `T.Div`, truncating `%` is `T.truncmod`."""

from __future__ import annotations

from collections.abc import Callable

from tirc.ir import dtype as dt
from tirc.ir import intrinsics, tvm_spelling
from tirc.ir.buffer import Buffer
from tirc.ir.expr import (
    EQ,
    GE,
    GT,
    LE,
    LT,
    NE,
    Add,
    And,
    BinaryOp,
    Broadcast,
    BufferLoad,
    Call,
    Cast,
    CompareOp,
    Div,
    FloatImm,
    FloorDiv,
    FloorMod,
    IntImm,
    Let,
    LogicalOp,
    Max,
    Min,
    Mod,
    Mul,
    Not,
    Or,
    PrimExpr,
    Ramp,
    Select,
    Shuffle,
    StringImm,
    Sub,
    Var,
    are_exprs,
    subroutine_name,
    vscale_times,
)
from tirc.ir.functor import Dispatch
from tirc.text.printing import precedence as prec
from tirc.text.printing.folding import would_fold
from tirc.text.printing.literals import format_float_imm, format_int, quote
from tirc.text.printing.names import NameTable, sanitize
from tirc.text.printing.values import format_value

Rendered = tuple[int, str]

# binary node class -> (infix operator, call-form name used when the operator would fold)
_INFIX: dict[type, tuple[str, str]] = {
    Add: ("+", "T.Add"),
    Sub: ("-", "T.Sub"),
    Mul: ("*", "T.Mul"),
    FloorDiv: ("//", "T.FloorDiv"),
    FloorMod: ("%", "T.FloorMod"),
    EQ: ("==", "T.EQ"),
    NE: ("!=", "T.NE"),
    LT: ("<", "T.LT"),
    LE: ("<=", "T.LE"),
    GT: (">", "T.GT"),
    GE: (">=", "T.GE"),
    And: ("and", "T.And"),
    Or: ("or", "T.Or"),
}
# node class -> (its function, the node's own name used when that function would fold it)
_CALL_FORM: dict[type, tuple[str, str]] = {
    Min: ("T.min", "T.Min"),
    Max: ("T.max", "T.Max"),
    Mod: ("T.truncmod", "T.Mod"),
}

# intrinsics whose result dtype TVM writes after the arguments rather than before them


class ExprPrinter:
    """Renders expressions against a NameTable; `on_free_var` names variables met unbound."""

    def __init__(
        self,
        names: NameTable,
        on_free_var: Callable[[Var], str],
        scalar_buffers: set[Buffer] | None = None,
    ) -> None:
        self.names = names
        self.on_free_var = on_free_var
        # buffers printed as scalars (`x: T.int32 = ...`): `x[0]` reads as `x`
        self.scalar_buffers: set[Buffer] = scalar_buffers if scalar_buffers is not None else set()
        # the pointer type a handle-valued call's result prints as (`T.handle("float32",
        # "global").ty`), given by the binding that types it, for the next call rendered
        self.result_type: str | None = None

    def expr(self, node: PrimExpr) -> str:
        """The text of `node` in a context that needs no parentheses (an argument, a line)."""
        return self.render(node)[1]

    def render(self, node: object) -> Rendered:
        rule = RULES.get(type(node))
        if rule is None:
            return prec.ATOM, f"<{type(node).__name__}>"
        return rule(self, node)

    def operand(self, node: PrimExpr, needed: int) -> str:
        """The text of `node` as an operand that must bind at least as tightly as `needed`."""
        level, text = self.render(node)
        return f"({text})" if level < needed else text

    def typed_call(self, node: Call, result_type: str) -> str:
        """`node`, a call whose result is a handle, with its result type written as
        `result_type`, as TVM 0.27 writes a typed pointer (tirc's calls return plain handles,
        so the type comes from the variable the call's value is bound to)."""
        self.result_type = result_type
        try:
            return self.render(node)[1]
        finally:
            self.result_type = None

    def lanes(self, lanes: int, scalable: bool) -> str:
        """A vector's lane count: `8`, or `T.vscale() * 4` for a scalable vector."""
        return self.render(vscale_times(lanes))[1] if scalable else str(lanes)

    def args(self, items: tuple[object, ...] | list[object]) -> str:
        return ", ".join(self.argument(item) for item in items)

    def argument(self, item: object) -> str:
        """A call argument: an expression, or one of the few non-expression arguments."""
        if isinstance(item, PrimExpr):
            return self.render(item)[1]
        return format_value(item, self)

    def var_name(self, var: Var) -> str:
        name = self.names.get(var)
        return name if name is not None else self.on_free_var(var)

    def buffer_name(self, buffer: Buffer) -> str:
        name = self.names.get(buffer)
        return name if name is not None else sanitize(buffer.name)

    def indices(self, indices: tuple[PrimExpr, ...]) -> str:
        if not indices:
            return "()"
        return ", ".join(self.render(index)[1] for index in indices)


RULES: Dispatch[ExprPrinter, [], Rendered] = Dispatch("printer")


@RULES.register(Var)
def _var(printer: ExprPrinter, node: Var) -> Rendered:
    name = printer.names.get(node)
    return prec.ATOM, name if name is not None else printer.on_free_var(node)


@RULES.register(IntImm)
def _int(printer: ExprPrinter, node: IntImm) -> Rendered:
    return prec.ATOM, format_int(node.value, node.dtype)


@RULES.register(FloatImm)
def _float(printer: ExprPrinter, node: FloatImm) -> Rendered:
    return prec.ATOM, format_float_imm(node.value, node.dtype)


@RULES.register(StringImm)
def _string(printer: ExprPrinter, node: StringImm) -> Rendered:
    return prec.ATOM, quote(node.value)


@RULES.register(Cast)
def _cast(printer: ExprPrinter, node: Cast) -> Rendered:
    return prec.ATOM, f'T.Cast("{node.dtype}", {printer.render(node.value)[1]})'


# the classes in _INFIX: every BinaryOp, CompareOp and LogicalOp but Div, Mod, Min and Max,
# which have their own renderers
@RULES.register(BinaryOp, CompareOp, LogicalOp)
def _binary(printer: ExprPrinter, node: BinaryOp | CompareOp | LogicalOp) -> Rendered:
    symbol, call = _INFIX[type(node)]
    a, b = node.a, node.b
    if would_fold(node) or _refuses_operands(node):
        return prec.ATOM, f"{call}({printer.render(a)[1]}, {printer.render(b)[1]})"
    level = prec.INFIX_PRECEDENCE[symbol]
    # a comparison on the left of a comparison would read as a chain: keep its parentheses
    left_needed = level + 1 if level == prec.COMPARE else level
    return level, f"{printer.operand(a, left_needed)} {symbol} {printer.operand(b, level + 1)}"


def _refuses_operands(node: PrimExpr) -> bool:
    """Floor division and remainder of floats: `//` and `%` take integers only (as in TVM),
    so such a node prints as its constructor, which reads back as itself (T.truncmod takes
    floats: C's fmod)."""
    return isinstance(node, (FloorDiv, FloorMod)) and not (
        node.a.dtype.is_integer or node.a.dtype.is_bool
    )


@RULES.register(Div)
def _div(printer: ExprPrinter, node: Div) -> Rendered:
    # `/` on integers would read back as true division; TVM spells truncation T.Div
    if node.dtype.is_float and not would_fold(node):
        level = prec.MULTIPLY
        left = printer.operand(node.a, level)
        return level, f"{left} / {printer.operand(node.b, level + 1)}"
    return prec.ATOM, f"T.Div({printer.render(node.a)[1]}, {printer.render(node.b)[1]})"


@RULES.register(Min, Max, Mod)  # the classes in _CALL_FORM
def _call_form(printer: ExprPrinter, node: Min | Max | Mod) -> Rendered:
    function, exact = _CALL_FORM[type(node)]
    a, b = node.a, node.b
    name = exact if would_fold(node) else function
    return prec.ATOM, f"{name}({printer.render(a)[1]}, {printer.render(b)[1]})"


@RULES.register(Not)
def _not(printer: ExprPrinter, node: Not) -> Rendered:
    return prec.NOT, f"not {printer.operand(node.a, prec.NOT)}"


@RULES.register(Select)
def _select(printer: ExprPrinter, node: Select) -> Rendered:
    args = printer.args((node.condition, node.true_value, node.false_value))
    return prec.ATOM, f"T.Select({args})"


@RULES.register(Ramp)
def _ramp(printer: ExprPrinter, node: Ramp) -> Rendered:
    lanes = printer.lanes(node.lanes, node.scalable)
    return prec.ATOM, f"T.Ramp({printer.args((node.base, node.stride))}, {lanes})"


@RULES.register(Broadcast)
def _broadcast(printer: ExprPrinter, node: Broadcast) -> Rendered:
    lanes = printer.lanes(node.lanes, node.scalable)
    return prec.ATOM, f"T.Broadcast({printer.render(node.value)[1]}, {lanes})"


@RULES.register(Shuffle)
def _shuffle(printer: ExprPrinter, node: Shuffle) -> Rendered:
    return prec.ATOM, f"T.Shuffle([{printer.args(node.vectors)}], [{printer.args(node.indices)}])"


@RULES.register(Let)
def _let(printer: ExprPrinter, node: Let) -> Rendered:
    value = printer.render(node.value)[1]
    var = printer.var_name(node.var)
    return prec.ATOM, f"T.Let({printer.render(node.body)[1]}, where={{{var}: {value}}})"


def is_scalar_index(indices: tuple[PrimExpr, ...]) -> bool:
    """`[0]`, the one index a buffer printed as a scalar is read and written at."""
    if len(indices) != 1:
        return False
    index = indices[0]
    return type(index) is IntImm and index.value == 0 and index.dtype == dt.INT32


@RULES.register(BufferLoad)
def _load(printer: ExprPrinter, node: BufferLoad) -> Rendered:
    buffer = node.buffer
    name = printer.buffer_name(buffer)
    if (
        buffer in printer.scalar_buffers
        and node.predicate is None
        and is_scalar_index(node.indices)
    ):
        return prec.ATOM, name
    indices = printer.indices(node.indices)
    if node.predicate is not None:
        predicate = printer.render(node.predicate)[1]
        return prec.ATOM, f"{name}.vload([{indices}], predicate={predicate})"
    return prec.ATOM, f"{name}[{indices}]"


@RULES.register(Call)
def _call(printer: ExprPrinter, node: Call) -> Rendered:
    op = node.op
    intrinsic = intrinsics.lookup(op)
    args = node.args
    result_type, printer.result_type = printer.result_type, None  # for this call alone
    # Operators on constants only are Python's arithmetic when read back (`~0` is -1):
    # such a call keeps its call form.
    is_constant = all(isinstance(arg, IntImm) for arg in args)
    if (
        intrinsic is not None
        and intrinsic.infix is not None
        and not is_constant
        and are_exprs(args)
    ):
        symbol = intrinsic.infix
        if len(args) == 1:
            return prec.UNARY, f"{symbol}{printer.operand(args[0], prec.UNARY)}"
        if len(args) == 2:
            level = prec.INFIX_PRECEDENCE[symbol]
            left = printer.operand(args[0], level)
            return level, f"{left} {symbol} {printer.operand(args[1], level + 1)}"
    spelled = tvm_spelling.to_tvm(node)  # as TVM 0.27 writes it, so that TVM reads it
    if spelled is not None:
        return printer.render(spelled)
    text = printer.args(args)
    if subroutine_name(node) is not None:  # `Module.f(...)`: another function of the module
        return prec.ATOM, f"{op}({text})"
    if op in tvm_spelling.KEYWORD_DTYPE:
        name, default = tvm_spelling.KEYWORD_DTYPE[op]
        keyword = "" if node.dtype == default else f'dtype="{node.dtype}"'
        return prec.ATOM, f"T.{name}({', '.join(part for part in (text, keyword) if part)})"
    if op == "ptx_cp_async" and len(args) == 5:
        return prec.ATOM, f'T.{tvm_spelling.CP_ASYNC_RAW}("{node.dtype}", {text})'
    if op in intrinsics.DTYPE_LAST:
        dtype = (result_type or "T.handle().ty") if node.dtype.is_handle else f'"{node.dtype}"'
        text = f"{text}, {dtype}" if text else dtype
    elif intrinsic is not None and intrinsic.result is intrinsics.Result.EXPLICIT:
        if intrinsics.FIXED_RESULTS.get(op) == node.dtype:  # written without its dtype
            return prec.ATOM, f"T.{op}({text})"
        dtype = result_type if result_type and node.dtype.is_handle else f'"{node.dtype}"'
        text = f"{dtype}, {text}" if text else dtype
    return prec.ATOM, f"T.{op}({text})"


# Callable[..., ]: each renderer takes its own node class

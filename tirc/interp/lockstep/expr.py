"""Expressions of a lockstep kernel: the thread model's source compiler, with a lane variant
of a rule where the Python text must differ.

Generated lane code holds a value every lane agrees on as the thread model does (a Python
scalar or tuple: whether it does is known when compiling, see LaneState) and any other value
as a numpy array (rows, vector lanes), rows being 1 or every lane. `_mask` holds the
executing lanes (None: all); only their faults count, and operands the thread model
evaluates only conditionally (`if_then_else` branches, the right side of `and` / `or`) run
under the narrower mask. A construct without a lane rule raises Unsupported when compiling:
the kernel then runs in the thread model.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import numpy as np

from tirc.interp.fault import describe_access
from tirc.interp.memory.lanes import (
    Frame,
    Located,
    Memory,
    check_bounds,
    fault_first,
    is_below,
    load_raw,
    pick,
    store_raw,
)
from tirc.interp.memory.storage import access_type
from tirc.interp.semantics import arith, interval
from tirc.interp.semantics import values as V
from tirc.interp.semantics.cast import Cast, cast_kind
from tirc.interp.semantics.operators import ARITHMETIC, COMPARISONS, DIVISIONS, EXTREMA, Division
from tirc.interp.semantics.warp import SHUFFLES
from tirc.interp.threads.context import Code, Context
from tirc.interp.threads.expr import ExprCompiler, let
from tirc.ir import expr as E
from tirc.ir import stmt as S
from tirc.ir.buffer import Buffer
from tirc.ir.dtype import DataType
from tirc.ir.expr import PrimExpr, Var
from tirc.ir.functor import Dispatch, walk
from tirc.ir.integer import int_range
from tirc.ir.node import Node

Mask = np.ndarray | None
CallRule = Callable[["LaneExprCompiler", E.Call], Code]
# intrinsic name -> its lane rule (registered by lockstep.calls and lockstep.wmma)
CALLS: dict[str, CallRule] = {}
# intrinsics whose lane rule runs even where every lane agrees (they touch lane memory)
LANE_ONLY: set[str] = set()


class Unsupported(Exception):
    """A construct the lockstep model does not run; the kernel runs in the thread model."""


def narrow(mask: Mask, condition: np.ndarray, lanes: int) -> np.ndarray:
    """mask & condition (a (rows, 1) bool value) as an (L,) lane mask."""
    if condition.shape[0] != lanes:  # the same in every lane
        if mask is None:
            return np.full(lanes, bool(condition[0, 0]))
        return mask.copy() if condition[0, 0] else np.zeros(lanes, bool)
    column = condition[:, 0]
    return column.copy() if mask is None else mask & column


def is_flat(scope: str | None) -> bool:
    """Memory every lane reaches alike (its loads at the same place agree)."""
    return scope in (None, "", "global")


class LaneState:
    """What compiling one kernel knows: the variables whose value differs between lanes, the
    scope and the generated name of each memory."""

    def __init__(self, scopes: dict[Var, str]):
        self.varying: set[Var] = set()
        self.bound: set[Var] = set()  # those a Bind assigns
        self.scopes = scopes  # data var -> scope of its memory
        self.memories: dict[Var, str] = {}  # data var -> name of its lanes memory

    def is_varying(self, expr: PrimExpr) -> bool:
        found = False

        def visit(node: Node) -> None:
            nonlocal found
            if isinstance(node, Var) and node in self.varying:
                found = True
            elif isinstance(node, E.BufferLoad):
                found |= not is_flat(self.scopes.get(node.buffer.data, node.buffer.scope))
            elif isinstance(node, E.Call) and (node.op in SHUFFLES or node.op in LANE_ONLY):
                found = True
            elif isinstance(node, E.Call) and node.op == "tvm_warp_activemask":
                found = True

        walk(expr, visit)
        return found

    def scan(self, stmt: S.Stmt) -> None:
        """Marks every variable some lanes may hold apart from others (a thread index, a
        lane-varying value, a Bind under a lane-varying condition), until nothing changes."""

        def allocation(node: Node) -> None:
            if isinstance(node, S.AllocBuffer | S.DeclBuffer):
                self.scopes.setdefault(node.buffer.data, node.buffer.scope)

        walk(stmt, allocation)
        while True:
            before = len(self.varying)
            walk(stmt, self._let)
            self._scan(stmt, False)
            if len(self.varying) == before:
                return

    def _scan(self, stmt: S.Stmt, divergent: bool) -> None:
        if isinstance(stmt, S.Bind) and (divergent or self.is_varying(stmt.value)):
            self.varying.add(stmt.var)
            self.bound.add(stmt.var)
        elif isinstance(stmt, S.For) and (
            self.is_varying(stmt.min)
            or self.is_varying(stmt.extent)
            or (stmt.kind is S.ForKind.THREAD_BINDING and _is_thread(stmt.thread_binding))
        ):
            self.varying.add(stmt.loop_var)
        elif isinstance(stmt, S.AttrStmt) and stmt.key == "thread_extent":
            if isinstance(stmt.node, S.IterVar) and _is_thread(stmt.node):
                self.varying.add(stmt.node.var)
        elif isinstance(stmt, S.IfThenElse | S.While):
            divergent = divergent or self.is_varying(stmt.condition)
        for child in parts(stmt):
            self._scan(child, divergent)

    def _let(self, node: Node) -> None:
        if isinstance(node, E.Let) and self.is_varying(node.value):
            self.varying.add(node.var)


def _is_thread(binding: S.IterVar | None) -> bool:
    """Whether a binding is to a thread or block index (a virtual thread is a loop)."""
    return binding is not None and not binding.thread_tag.startswith(("vthread", "cthread"))


def parts(stmt: S.Stmt) -> tuple[S.Stmt, ...]:
    """The statements directly inside stmt."""
    if isinstance(stmt, S.SeqStmt):
        return stmt.stmts
    if isinstance(stmt, S.IfThenElse):
        return (stmt.then_case,) if stmt.else_case is None else (stmt.then_case, stmt.else_case)
    body = getattr(stmt, "body", None)
    return (body,) if isinstance(body, S.Stmt) else ()


# run-time helpers of generated lane code


def check_index(
    value: np.ndarray | int, limit: int, dim: int, site: int, mask: Mask, frame: Frame
) -> np.ndarray | int:
    """value, after a fault on the first executing lane whose index is outside [0, limit)."""
    if isinstance(value, np.ndarray):
        if not is_below(value, limit):
            check_bounds(value, limit, dim, frame, None if mask is None else mask[:, None], site)
        return value if value.dtype.kind in "iu" else value.astype(np.int64)
    if not 0 <= value < limit:
        active = None if mask is None else mask[:, None]
        check_bounds(np.full((1, 1), value, np.int64), limit, dim, frame, active, site)
    return value


def locate(
    frame: Frame,
    memory: Memory,
    dims: tuple[tuple[object, int, int], ...],
    offset: int,
    predicate: object,
    element_lanes: int,
    mask: Mask,
    site: int,
) -> Located:
    """Where a vector or predicated access goes: (memory, element offsets (rows, width),
    active elements, site); dims holds (index, extent, stride) per dimension."""
    active: np.ndarray | None = None
    if predicate is not None:
        active = np.asarray(predicate)
        active = active.reshape(-1, active.shape[-1])
        if mask is not None:
            active = active & np.broadcast_to(mask[:, None], (mask.size, active.shape[1]))
    elif mask is not None:
        active = mask[:, None]
    total = np.full((1, 1), offset, np.int64)
    for dim, (index, extent, stride) in enumerate(dims):
        value = np.asarray(index)
        value = value.reshape(-1, value.shape[-1]) if value.ndim else value.reshape(1, 1)
        if not is_below(value, extent):
            check_bounds(value, extent, dim, frame, active, site)
        total = total + value.astype(np.int64) * stride
    if element_lanes > 1:
        rows, width = total.shape
        steps = np.arange(element_lanes)
        total = (total[:, :, None] * element_lanes + steps).reshape(rows, width * element_lanes)
        if active is not None:
            active = np.broadcast_to(active, (active.shape[0], width))
            active = np.repeat(active, element_lanes, axis=1)
    return memory, total, active, site


def divide(division: Division, site: int) -> Callable[..., np.ndarray]:
    """Integer division (or C's remainder) that faults on the first executing zero."""

    def checked(x: np.ndarray, y: np.ndarray, frame: Frame, mask: Mask) -> np.ndarray:
        def message(lane: int, column: int) -> str:
            return arith.by_zero(pick(x, lane, column), division.written)

        fault_first(y == 0, frame, mask, site, message)
        return division.lanes(x, y)

    return checked


def _to_int(target: DataType, site: int) -> Callable[..., np.ndarray]:
    low, high = int_range(target)
    kind, name = V.value_type(target), str(target)

    def to_int(x: np.ndarray, frame: Frame, mask: Mask) -> np.ndarray:
        x = V.wide(x)
        result, bad = arith.lanes_float_to_int(x, low, high, kind)

        def message(lane: int, column: int) -> str:
            return arith.cast_out_of_range(float(pick(x, lane, column)), name)

        fault_first(bad, frame, mask, site, message)
        return result

    return to_int


def _short_circuit(is_and: bool) -> Callable[..., np.ndarray]:
    """`and` / `or` evaluating the right operand for the lanes the left one leaves open."""

    def evaluate(
        x: np.ndarray, right: Callable[[np.ndarray], object], mask: Mask, count: int
    ) -> np.ndarray:
        needed = narrow(mask, x if is_and else ~x, count)
        if not needed.any():
            return x
        y = np.asarray(right(needed))
        return (x & y) if is_and else (x | y)

    return evaluate


def _join_lanes(vectors: tuple[np.ndarray, ...], indices: list[int]) -> np.ndarray:
    rows = max(vector.shape[0] for vector in vectors)
    joined = np.concatenate([np.broadcast_to(v, (rows, v.shape[1])) for v in vectors], axis=1)
    return joined[:, indices]


# the compiler


class LaneExprCompiler(ExprCompiler):
    """Compiles what every lane agrees on with the thread model's rules (inherited), the rest
    with the lane rules below."""

    def __init__(self, ctx: Context, lanes: LaneState):
        super().__init__(ctx)
        self.lane = lanes

    def compile(self, expr: PrimExpr) -> Code:
        if isinstance(expr, E.Call) and expr.op in LANE_ONLY:
            return replace(CALLS[expr.op](self, expr), varying=True)
        if not self.lane.is_varying(expr):
            for node in _nodes(expr):  # a call without a lane rule may need the threads
                if isinstance(node, E.Call) and node.op not in CALLS:
                    raise Unsupported(f"T.{node.op}")
            return super().compile(expr)
        rule = _RULES.get(type(expr))
        if rule is None:
            raise Unsupported(type(expr).__name__)
        return replace(rule(self, expr), varying=True, pure=False, slot=None)

    def name(self, value: object, hint: str) -> str:
        return self.ctx.constant(value, hint)

    def dtype(self, dtype: DataType | np.dtype) -> str:
        return self.name(dtype, str(dtype))

    def operand(self, code: Code, dtype: DataType) -> str:
        """A value as lane arithmetic may use it (a uniform vector becomes a numpy row)."""
        if code.varying or dtype.lanes == 1:
            return code.text
        return f"_np.array([{code.text}], {self.dtype(V.value_type(dtype))})"

    def array(self, code: Code, dtype: DataType) -> str:
        """A value as numpy lanes, (1, lanes) where every lane agrees."""
        if code.varying:
            return code.text
        return f"{self.name(V.constant, 'constant')}({code.text}, {self.dtype(dtype)})"

    def rounded(self, text: str, dtype: DataType, wide: bool = False) -> str:
        """Float lanes rounded to dtype; float32 operations round themselves unless `wide`
        (computed in float64)."""
        kind = str(dtype.element)
        if kind == "float64" or (kind == "float32" and not wide):
            return text
        return f"{self.name(V.round_to, 'round_to')}({text}, {self.dtype(dtype)})"

    # memory

    def place(
        self,
        buffer: Buffer,
        indices: tuple[PrimExpr, ...],
        predicate: PrimExpr | None,
        node: Node,
        verb: str,
    ) -> str:
        """The generated Located of an access: a tuple for one element of every lane, else
        a call of `locate`."""
        memory = self.lane.memories.get(buffer.data)
        if memory is None:
            raise Unsupported(f"memory of {buffer.name}")
        if buffer.axis_separators or len(indices) != len(buffer.shape):
            raise Unsupported("indexing")
        layout = self.access.default_layout(buffer)
        if any(part.varying for part in (layout.offset, *layout.shape, *layout.strides)):
            raise Unsupported("a layout that differs between lanes")
        site = self.ctx.site(node, describe_access(verb, buffer), True)
        codes = [self.compile(index) for index in indices]
        if self.access.is_vector_access(buffer, indices, predicate):
            dims = ", ".join(
                f"({self.operand(code, index.dtype)}, {extent.text}, {stride.text})"
                for code, index, extent, stride in zip(
                    codes, indices, layout.shape, layout.strides, strict=True
                )
            )
            active = (
                "None"
                if predicate is None
                else self.operand(self.compile(predicate), predicate.dtype)
            )
            return (
                f"{self.name(locate, 'locate')}(_frame, {memory}, ({dims},), "
                f"{layout.offset.text}, {active}, {buffer.dtype.lanes}, _mask, {site})"
            )
        terms = [] if layout.offset.constant == 0 else [layout.offset.text]
        check = self.name(check_index, "check_index")
        for dim, (code, extent, stride) in enumerate(
            zip(codes, layout.shape, layout.strides, strict=True)
        ):
            text = code.text
            if not interval.is_index_within((code.low, code.high), extent.constant):
                text = f"{check}({text}, {extent.text}, {dim}, {site}, _mask, _frame)"
            terms.append(text if stride.constant == 1 else f"({text} * {stride.text})")
        return f"({memory}, {' + '.join(terms) or '0'}, _mask, {site})"

    def load(self, expr: E.BufferLoad) -> Code:
        place = self.place(expr.buffer, expr.indices, expr.predicate, expr, "load from")
        dtype = expr.buffer.dtype
        kinds = f"{self.dtype(access_type(dtype))}, {self.dtype(V.value_type(dtype))}"
        return Code(f"{self.name(load_raw, 'load')}(_frame, {place}, {kinds}, {self.dtype(dtype)})")

    def store(self, stmt: S.BufferStore) -> None:
        value = self.compile(stmt.value)
        buffer = stmt.buffer
        place = self.place(buffer, stmt.indices, stmt.predicate, stmt, "store to")
        text = self.operand(value, stmt.value.dtype)
        kinds = f"{self.dtype(access_type(buffer.dtype))}, {self.dtype(buffer.dtype)}"
        self.ctx.emit(f"{self.name(store_raw, 'store')}(_frame, {place}, {text}, {kinds})")


def _nodes(expr: Node) -> list[Node]:
    found: list[Node] = []
    walk(expr, found.append)
    return found


def is_total(expr: PrimExpr) -> bool:
    """Whether evaluating expr for any lane can neither fail nor depend on the mask."""
    return not any(
        isinstance(node, E.BufferLoad | E.Call | E.Cast) or type(node) in DIVISIONS
        for node in _nodes(expr)
    )


_RULES: Dispatch[LaneExprCompiler, [], Code] = Dispatch("expression (lockstep)")


@_RULES.register(E.Var)
def _var(compiler: LaneExprCompiler, expr: Var) -> Code:
    name = compiler.ctx.names.get(expr)
    if name is None:
        raise Unsupported(f"variable {expr.name}")
    return Code(name, *compiler.ctx.bounds.get(expr, (None, None)))


def _arith(compiler: LaneExprCompiler, expr: PrimExpr) -> Code:
    """+ - * as numpy computes them: integers wrap, float32 rounds, other floats round after."""
    assert isinstance(expr, E.BinaryOp)
    a, b = compiler.compile(expr.a), compiler.compile(expr.b)
    dtype: DataType = expr.a.dtype
    operator = ARITHMETIC[type(expr)]
    text = f"({compiler.operand(a, dtype)} {operator.symbol} {compiler.operand(b, dtype)})"
    if dtype.is_float:
        return Code(compiler.rounded(text, dtype))
    if not dtype.is_integer:
        raise Unsupported(f"arithmetic on {dtype}")
    low, high = int_range(dtype.element)
    if operator.bounds is not None:
        value = operator.bounds((a.low, a.high), (b.low, b.high))
        if interval.within(value, low, high):  # nothing wraps
            return Code(text, value[0], value[1])
    return Code(text, low, high)


def _division(compiler: LaneExprCompiler, expr: PrimExpr) -> Code:
    assert isinstance(expr, E.BinaryOp)
    dtype: DataType = expr.a.dtype
    a = compiler.array(compiler.compile(expr.a), dtype)
    b = compiler.array(compiler.compile(expr.b), dtype)
    division = DIVISIONS[type(expr)]
    if dtype.is_float:
        wide, function = compiler.name(V.wide, "wide"), compiler.name(division.float_lanes, "div")
        return Code(compiler.rounded(f"{function}({wide}({a}), {wide}({b}))", dtype, True))
    if not dtype.is_integer:
        raise Unsupported(f"division of {dtype}")
    divisor = expr.b
    if isinstance(divisor, E.IntImm) and divisor.value > 0 and divisor.dtype.lanes == 1:
        by = compiler.name(V.constant(divisor.value, divisor.dtype), "by")
        return Code(f"{compiler.name(division.by_positive, 'by_positive')}({a}, {by})")
    what = "modulo" if division.written == "%" else "division"
    checked = compiler.name(divide(division, compiler.ctx.site(expr, what)), "divide")
    return Code(f"{checked}({a}, {b}, _frame, _mask)")


def _extremum_rule(compiler: LaneExprCompiler, expr: PrimExpr) -> Code:
    assert isinstance(expr, E.BinaryOp)
    a = compiler.operand(compiler.compile(expr.a), expr.a.dtype)
    b = compiler.operand(compiler.compile(expr.b), expr.b.dtype)
    return Code(f"{compiler.name(EXTREMA[type(expr)].lanes, 'extremum')}({a}, {b})")


def _compare(compiler: LaneExprCompiler, expr: PrimExpr) -> Code:
    assert isinstance(expr, E.CompareOp)
    a = compiler.operand(compiler.compile(expr.a), expr.a.dtype)
    b = compiler.operand(compiler.compile(expr.b), expr.b.dtype)
    return Code(f"({a} {COMPARISONS[type(expr)].symbol} {b})", 0, 1)


@_RULES.register(E.And, E.Or)
def _logical(compiler: LaneExprCompiler, expr: E.And | E.Or) -> Code:
    """The right operand only for the lanes the left one does not decide (Python's `and` /
    `or` in the thread model), where evaluating it could fail."""
    is_and = isinstance(expr, E.And)
    a = compiler.compile(expr.a)
    if expr.dtype.lanes == 1 and not is_total(expr.b):
        b = compiler.compile(expr.b)
        if not a.varying:  # a decides for every lane, or b is the result
            b_text, a_text = compiler.array(b, expr.b.dtype), compiler.array(a, expr.a.dtype)
            picked = (b_text, a_text) if is_and else (a_text, b_text)
            return Code(f"({picked[0]} if {a.text} else {picked[1]})")
        function = compiler.name(_short_circuit(is_and), "and" if is_and else "or")
        return Code(f"{function}({a.text}, lambda _mask: {b.text}, _mask, _lanes.count)")
    b_operand = compiler.operand(compiler.compile(expr.b), expr.b.dtype)
    a_operand = compiler.operand(a, expr.a.dtype)
    return Code(f"({a_operand} {'&' if is_and else '|'} {b_operand})", 0, 1)


@_RULES.register(E.Not)
def _not(compiler: LaneExprCompiler, expr: E.Not) -> Code:
    return Code(f"(~{compiler.compile(expr.a).text})", 0, 1)


@_RULES.register(E.Select)
def _select(compiler: LaneExprCompiler, expr: E.Select) -> Code:
    c = compiler.operand(compiler.compile(expr.condition), expr.condition.dtype)
    t = compiler.operand(compiler.compile(expr.true_value), expr.dtype)
    f = compiler.operand(compiler.compile(expr.false_value), expr.dtype)
    return Code(f"_np.where({c}, {t}, {f})")


@_RULES.register(E.Cast)
def _cast(compiler: LaneExprCompiler, expr: E.Cast) -> Code:
    value = compiler.compile(expr.value).text
    source: DataType = expr.value.dtype.element
    target = expr.dtype.element
    if source.is_handle or target.is_handle:
        raise Unsupported("handle cast")
    kind = cast_kind(source, target)
    if kind is Cast.SAME:
        return Code(value)
    if kind is Cast.TO_BOOL:
        return Code(f"({value} != 0)")
    if kind is Cast.WRAP:
        return Code(f"{value}.astype({compiler.dtype(V.value_type(target))})")
    if kind is Cast.TRUNCATE:
        to_int = compiler.name(_to_int(target, compiler.ctx.site(expr, "cast")), "to_int")
        return Code(f"{to_int}({value}, _frame, _mask)")
    if not target.is_float:
        raise Unsupported(f"cast to {target}")
    return Code(compiler.rounded(f"{value}.astype(_np.float64)", target, True))


@_RULES.register(E.Ramp)
def _ramp(compiler: LaneExprCompiler, expr: E.Ramp) -> Code:
    dtype = expr.dtype.element
    base = compiler.array(compiler.compile(expr.base), expr.base.dtype)
    stride = compiler.array(compiler.compile(expr.stride), expr.stride.dtype)
    if dtype.is_float:
        wide = compiler.name(V.wide, "wide")
        steps = compiler.name(np.arange(expr.lanes, dtype=np.float64)[None, :], "steps")
        return Code(compiler.rounded(f"({wide}({base}) + {wide}({stride}) * {steps})", dtype, True))
    steps = compiler.name(np.arange(expr.lanes, dtype=V.value_type(dtype))[None, :], "steps")
    return Code(f"({base} + {stride} * {steps})")


@_RULES.register(E.Broadcast)
def _broadcast(compiler: LaneExprCompiler, expr: E.Broadcast) -> Code:
    return Code(f"_np.repeat({compiler.compile(expr.value).text}, {expr.lanes}, axis=1)")


@_RULES.register(E.Shuffle)
def _shuffle(compiler: LaneExprCompiler, expr: E.Shuffle) -> Code:
    indices = [index.value for index in expr.indices if isinstance(index, E.IntImm)]
    if len(indices) != len(expr.indices):
        raise Unsupported("shuffle with variable indices")
    vectors = ", ".join(compiler.array(compiler.compile(v), v.dtype) for v in expr.vectors)
    join = compiler.name(_join_lanes, "join_lanes")
    return Code(f"{join}(({vectors},), {compiler.name(indices, 'indices')})")


@_RULES.register(E.BufferLoad)
def _load(compiler: LaneExprCompiler, expr: E.BufferLoad) -> Code:
    return compiler.load(expr)


@_RULES.register(E.Call)
def _call(compiler: LaneExprCompiler, expr: E.Call) -> Code:
    rule = CALLS.get(expr.op)
    if rule is None:
        raise Unsupported(f"T.{expr.op}")
    return rule(compiler, expr)


_RULES.register(E.Let)(let)  # the thread model's: a walrus, on lanes as on one lane
for _node in ARITHMETIC:
    _RULES.register(_node)(_arith)
for _node in DIVISIONS:
    _RULES.register(_node)(_division)
for _node in EXTREMA:
    _RULES.register(_node)(_extremum_rule)
for _node in COMPARISONS:
    _RULES.register(_node)(_compare)

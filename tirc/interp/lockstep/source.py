"""EXPERIMENT (issue 20, H3): the lockstep model as a lane backend of the thread model's
source compiler. A kernel compiles to one more nested `def` of the host function, whose
values are Python scalars where every lane agrees (known when compiling: they depend on no
thread index and no per-lane or per-block memory; the thread model's rules emit them) and
numpy arrays (rows, lanes) elsewhere (the lane rules below). `_mask` holds the executing
lanes (None: all). Anything not covered raises Unsupported: the closures in lockstep/ run.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace

import numpy as np

from tirc.interp.lockstep.expr import (
    Unsupported,
    _below,
    _check_bounds,
    checked_division,
    load_raw,
    narrow,
    store_raw,
)
from tirc.interp.memory.lanes import Frame, allocate_rows, fault_in_lane, first_lane, pick
from tirc.interp.memory.storage import SHARED_SCOPES, access_type
from tirc.interp.semantics import arith, interval
from tirc.interp.semantics import values as V
from tirc.interp.semantics.bits import reinterpret_bits
from tirc.interp.semantics.extensions import extern_function
from tirc.interp.semantics.math_functions import FLOAT_BINARY, FLOAT_UNARY, LANEWISE
from tirc.interp.semantics.math_functions import lane_function
from tirc.interp.semantics.operators import ARITHMETIC, COMPARISONS, DIVISIONS, EXTREMA
from tirc.interp.semantics.warp import SHUFFLES, WARP_SIZE, shuffle_source
from tirc.interp.threads.access import AccessCompiler
from tirc.interp.threads.call import CallCompiler
from tirc.interp.threads.context import Code, Context, KernelState
from tirc.interp.threads.expr import ExprCompiler
from tirc.interp.threads.kernel import COORDINATES
from tirc.interp.threads.stmt import StmtCompiler
from tirc.ir import expr as E
from tirc.ir import stmt as S
from tirc.ir.buffer import Buffer
from tirc.ir.dtype import DataType
from tirc.ir.expr import PrimExpr, Var
from tirc.ir.functor import walk
from tirc.ir.integer import int_range
from tirc.ir.node import Node

ENABLED = os.environ.get("TIRC_LANE_SOURCE") == "1"
LANE_CALLS = {"if_then_else", "likely", "tvm_warp_activemask", *SHUFFLES, *LANEWISE}


# which variables differ between lanes: a fixpoint over the kernel


def _memory_is_flat(scope: str | None) -> bool:
    return scope in (None, "", "global")


class Lanes:
    """What compiling one lane kernel knows: varying variables, lane memories."""

    def __init__(self, outer_scopes: dict[Var, str]):
        self.varying: set[Var] = set()
        self.scopes: dict[Var, str] = dict(outer_scopes)  # data var -> scope
        self.memories: dict[Var, str] = {}  # data var -> name of its lanes memory
        self.bound: set[Var] = set()  # varying variables a Bind assigns

    def is_varying(self, expr: PrimExpr) -> bool:
        found = False

        def visit(node: Node) -> None:
            nonlocal found
            if isinstance(node, Var) and node in self.varying:
                found = True
            elif isinstance(node, E.BufferLoad):
                if not _memory_is_flat(self.scopes.get(node.buffer.data, node.buffer.scope)):
                    found = True
            elif isinstance(node, E.Call) and (node.op in SHUFFLES or node.op.endswith("mask")):
                found = True

        walk(expr, visit)
        return found

    def scan(self, stmt: S.Stmt) -> None:
        """Marks every variable some lanes may hold apart from others, until nothing changes."""
        for node_list in (_allocations(stmt),):
            for buffer in node_list:
                self.scopes.setdefault(buffer.data, buffer.scope)
        while True:
            before = len(self.varying)
            self._scan(stmt, False)
            if len(self.varying) == before:
                return

    def _scan(self, stmt: S.Stmt, divergent: bool) -> None:
        if isinstance(stmt, S.SeqStmt):
            for item in stmt.stmts:
                self._scan(item, divergent)
        elif isinstance(stmt, S.Bind):
            if divergent or self.is_varying(stmt.value):
                self.varying.add(stmt.var)
                self.bound.add(stmt.var)
            self._lets(stmt.value)
        elif isinstance(stmt, S.For):
            binding = stmt.thread_binding
            tag = binding.thread_tag if binding is not None else ""
            if stmt.kind is S.ForKind.THREAD_BINDING and tag in COORDINATES:
                self.varying.add(stmt.loop_var)
            elif self.is_varying(stmt.min) or self.is_varying(stmt.extent):
                self.varying.add(stmt.loop_var)
            self._scan(stmt.body, divergent)
        elif isinstance(stmt, S.AttrStmt):
            if isinstance(stmt.node, S.IterVar) and stmt.node.thread_tag in COORDINATES:
                self.varying.add(stmt.node.var)
            self._scan(stmt.body, divergent)
        elif isinstance(stmt, S.IfThenElse):
            inner = divergent or self.is_varying(stmt.condition)
            self._scan(stmt.then_case, inner)
            if stmt.else_case is not None:
                self._scan(stmt.else_case, inner)
        elif isinstance(stmt, S.While):
            self._scan(stmt.body, divergent or self.is_varying(stmt.condition))
        elif isinstance(stmt, S.AllocBuffer | S.DeclBuffer):
            pass
        elif isinstance(stmt, S.BufferStore | S.Evaluate | S.AssertStmt):
            walk(stmt, self._let_visit)
        elif hasattr(stmt, "body"):
            self._scan(stmt.body, divergent)  # type: ignore[attr-defined]  # experiment

    def _lets(self, expr: PrimExpr) -> None:
        walk(expr, self._let_visit)

    def _let_visit(self, node: Node) -> None:
        if isinstance(node, E.Let) and self.is_varying(node.value):
            self.varying.add(node.var)


def _allocations(stmt: S.Stmt) -> list[Buffer]:
    found: list[Buffer] = []

    def visit(node: Node) -> None:
        if isinstance(node, S.AllocBuffer | S.DeclBuffer):
            found.append(node.buffer)

    walk(stmt, visit)
    return found


# run-time helpers of generated lane code


def _to_array(value: object, kind: np.dtype, lanes: int) -> np.ndarray:
    if isinstance(value, np.ndarray):
        return value
    array = np.empty((1, lanes), dtype=kind)
    array[...] = value
    return array


def _merge(mask: np.ndarray | None, new: np.ndarray, old: np.ndarray | None) -> np.ndarray:
    if mask is not None and old is not None:
        new = np.where(mask[:, None], new, old)
    return V.owned(new)


def _check(
    value: np.ndarray | int, limit: int, dim: int, site: int, mask: np.ndarray | None, frame: Frame
) -> np.ndarray | int:
    if isinstance(value, np.ndarray):
        if not _below(value, limit):
            active = None if mask is None else mask[:, None]
            _check_bounds(value, limit, dim, frame, active, site)
        return value
    if not 0 <= value < limit:
        active = None if mask is None else mask[:, None]
        _check_bounds(np.full((1, 1), value, np.int64), limit, dim, frame, active, site)
    return value


def _locate(
    frame: Frame,
    memory: object,
    dims: tuple,
    offset: int,
    predicate: object,
    element_lanes: int,
    mask: np.ndarray | None,
    site: int,
) -> tuple:
    """(memory, element offsets (rows, width), active elements or None, site) of a vector
    or predicated access; dims holds (index, extent, stride) per dimension."""
    active: np.ndarray | None = None
    if predicate is not None:
        active = np.asarray(predicate)
        active = active.reshape(1, -1) if active.ndim < 2 else active
        if mask is not None:
            active = active & np.broadcast_to(mask[:, None], (mask.size, active.shape[1]))
    elif mask is not None:
        active = mask[:, None]
    total: np.ndarray = np.full((1, 1), offset, np.int64)
    for dim, (index, extent, stride) in enumerate(dims):
        value = np.asarray(index)
        value = value.reshape(1, -1) if value.ndim < 2 else value
        if not _below(value, extent):
            _check_bounds(value, extent, dim, frame, active, site)
        total = total + value.astype(np.int64) * stride
    if element_lanes > 1:
        rows, width = total.shape
        total = (total[:, :, None] * element_lanes + np.arange(element_lanes)).reshape(
            rows, width * element_lanes
        )
        if active is not None:
            active = np.repeat(
                np.broadcast_to(active, (active.shape[0], width)), element_lanes, axis=1
            )
    return memory, total, active, site


def _load_at(located: tuple, frame: Frame, kind: np.dtype, held: np.dtype, dtype: DataType):  # type: ignore[no-untyped-def]  # experiment
    return load_raw(frame, located, kind, held, dtype)  # type: ignore[arg-type]  # experiment


def _store_at(located: tuple, frame: Frame, values: object, kind: np.dtype, dtype: DataType) -> None:
    raw = _to_array(values, V.value_type(dtype), 1)
    raw = raw if raw.dtype == kind else V.encode(raw, dtype)
    store_raw(frame, located, raw, kind)  # type: ignore[arg-type]  # experiment


def _load(
    frame: Frame,
    memory: object,
    offsets: np.ndarray | int,
    mask: np.ndarray | None,
    site: int,
    kind: np.dtype,
    held: np.dtype,
    dtype: DataType,
) -> np.ndarray:
    if isinstance(offsets, np.ndarray) and offsets.dtype.kind not in "iu":
        offsets = offsets.astype(np.int64)
    active = None if mask is None else mask[:, None]
    return load_raw(frame, (memory, offsets, active, site), kind, held, dtype)  # type: ignore[arg-type]  # experiment


def _store(
    frame: Frame,
    memory: object,
    offsets: np.ndarray | int,
    mask: np.ndarray | None,
    site: int,
    values: object,
    kind: np.dtype,
    dtype: DataType,
) -> None:
    if isinstance(offsets, np.ndarray) and offsets.dtype.kind not in "iu":
        offsets = offsets.astype(np.int64)
    raw = _to_array(values, V.value_type(dtype), dtype.lanes)
    raw = raw if raw.dtype == kind else V.encode(raw, dtype)
    active = None if mask is None else mask[:, None]
    store_raw(frame, (memory, offsets, active, site), raw, kind)  # type: ignore[arg-type]  # experiment


def _extremum(compare: Callable[..., np.ndarray]) -> Callable[..., np.ndarray]:
    return lambda x, y: np.where(compare(x, y), x, y)


def _divide(division: object, site: int) -> Callable[..., np.ndarray]:
    rule = checked_division(lambda f, m: f[0], lambda f, m: f[1], division, site)  # type: ignore[arg-type]  # experiment

    def divide(x: object, y: object, frame: Frame, mask: np.ndarray | None) -> np.ndarray:
        return rule((np.asarray(x), np.asarray(y), frame.lanes), mask)  # type: ignore[arg-type]  # experiment

    return divide


class _Pair(tuple):  # (x, y, lanes) that checked_division reads as a frame
    pass


def _to_int(low: int, high: int, kind: np.dtype, name: str, site: int) -> Callable[..., np.ndarray]:
    def to_int(x: np.ndarray, frame: Frame, mask: np.ndarray | None) -> np.ndarray:
        x = V.wide(x)
        bad = ~((x > low - 1) & (x < high + 1))
        if bad.any():
            found = first_lane(bad, frame.lanes, mask)
            if found is not None:
                lane, column = found
                message = arith.cast_out_of_range(float(pick(x, lane, column)), name)
                raise fault_in_lane(site, message, frame.lanes, lane)
            x = np.where(bad, 0.0, x)
        return np.trunc(x).astype(kind)

    return to_int


def _shuffle(kind: int, lanes_of_value: int) -> Callable[..., np.ndarray]:
    def shuffle(value, amount, width, frame: Frame, mask):  # type: ignore[no-untyped-def]  # experiment
        lanes = frame.lanes
        values = np.broadcast_to(np.asarray(value), (lanes.count, lanes_of_value))
        delta = np.broadcast_to(np.asarray(amount).reshape(-1).astype(np.int64), (lanes.count,))
        size = np.broadcast_to(np.asarray(width).reshape(-1).astype(np.int64), (lanes.count,))
        lane = lanes.tid % WARP_SIZE
        source = shuffle_source(kind, lane, delta, size)
        thread = lanes.tid - lane + source
        valid = (source >= 0) & (source < WARP_SIZE) & (thread < lanes.per_block)
        origin = np.where(valid, lanes.index - lane + source, lanes.index)
        if mask is not None:
            valid &= mask[origin]
        return np.where(valid[:, None], values[origin], values)

    return shuffle


def _active_mask(kind: np.dtype) -> Callable[..., np.ndarray]:
    def active_mask(frame: Frame, mask: np.ndarray | None) -> np.ndarray:
        lanes = frame.lanes
        warps_per_block = -(-lanes.per_block // WARP_SIZE)
        warp = lanes.block_row * warps_per_block + lanes.tid // WARP_SIZE
        bits = np.left_shift(np.uint64(1), (lanes.tid % WARP_SIZE).astype(np.uint64))
        if mask is not None:
            bits = np.where(mask, bits, np.uint64(0))
        totals = np.zeros(lanes.blocks * warps_per_block, dtype=np.uint64)
        np.add.at(totals, warp, bits)
        return totals[warp][:, None].astype(kind)

    return active_mask


_WMMA = ("tvm_fill_fragment", "tvm_load_matrix_sync", "tvm_store_matrix_sync", "tvm_mma_sync")
_BITWISE = {"bitwise_and": "&", "bitwise_or": "|", "bitwise_xor": "^"}


def _shift(left: bool, dtype: DataType, site: int) -> Callable[..., np.ndarray]:
    kind = V.value_type(dtype)

    def shift(x: np.ndarray, amount: np.ndarray, frame: Frame, mask: np.ndarray | None):  # type: ignore[no-untyped-def]  # experiment
        bad = (amount < 0) | (amount >= dtype.bits)
        if bad.any():
            found = first_lane(bad, frame.lanes, mask)
            if found is not None:
                raise fault_in_lane(site, arith.bad_shift(dtype.bits), frame.lanes, found[0])
            amount = np.where(bad, 0, amount)
        amount = amount.astype(kind)
        return np.left_shift(x, amount) if left else np.right_shift(x, amount)

    return shift


# the compilers


class LaneExprCompiler(ExprCompiler):
    def __init__(self, ctx: Context, lanes: Lanes):
        self.ctx = ctx
        self.lane = lanes
        self.access = LaneAccessCompiler(ctx, self)
        self.calls = LaneCallCompiler(ctx, self)

    def compile(self, expr: PrimExpr) -> Code:
        if isinstance(expr, E.Call) and expr.op in _WMMA:
            from tirc.interp.lockstep.source_wmma import compile_wmma

            return replace(compile_wmma(self.calls, expr), varying=True)
        if not self.lane.is_varying(expr):
            for node in _nodes(expr):
                if isinstance(node, E.Call) and node.op not in _UNIFORM_CALLS:
                    raise Unsupported(f"a call of T.{node.op}")
            return super().compile(expr)
        rule = _EXPR_RULES.get(type(expr))
        if rule is None:
            raise Unsupported(type(expr).__name__)
        return replace(rule(self, expr), varying=True, pure=False, slot=None)

    def name(self, value: object, hint: str) -> str:
        return self.ctx.constant(value, hint)

    def operand(self, code: Code, dtype: DataType) -> str:
        """A value as lane code may use it: uniform vectors become numpy rows."""
        if code.varying or dtype.lanes == 1:
            return code.text
        kind = self.name(V.value_type(dtype), str(V.value_type(dtype)))
        return f"_np.array([{code.text}], {kind})"

    def array(self, code: Code, dtype: DataType) -> str:
        """A value as a numpy array, (1, lanes) where every lane agrees."""
        if code.varying:
            return code.text
        constant = self.name(V.constant, "constant")
        return f"{constant}({code.text}, {self.name(dtype, str(dtype))})"

    def operands(self, expr: E.BinaryOp | E.CompareOp | E.LogicalOp) -> tuple[str, str]:
        a, b = self.compile(expr.a), self.compile(expr.b)
        return self.operand(a, expr.a.dtype), self.operand(b, expr.b.dtype)

    def rounded(self, text: str, dtype: DataType, wide: bool = False) -> str:
        """Float lanes rounded to dtype; float32 operations round themselves unless `wide`
        (computed in float64)."""
        kind = str(dtype.element)
        if kind == "float64" or (kind == "float32" and not wide):
            return text
        return f"{self.name(V.round_array, 'round_array')}({text}, {self.name(dtype, kind)})"


_UNIFORM_CALLS = {"call_pure_extern", "call_extern", "bitwise_not", "reinterpret", "fmod",
                  "nextafter", "assume", "undef", "likely", "tvm_storage_sync", *LANEWISE, "if_then_else", "shift_left",
                  "shift_right", "bitwise_and", "bitwise_or", "bitwise_xor"}


def _nodes(expr: PrimExpr) -> Iterator[Node]:
    found: list[Node] = []
    walk(expr, found.append)
    return iter(found)


_EXPR_RULES: dict[type, Callable[[LaneExprCompiler, PrimExpr], Code]] = {}


def _rule(*types: type) -> Callable:  # type: ignore[type-arg]  # experiment
    def register(function: Callable) -> Callable:  # type: ignore[type-arg]  # experiment
        for node in types:
            _EXPR_RULES[node] = function
        return function

    return register


@_rule(E.Var)
def _var(compiler: LaneExprCompiler, expr: Var) -> Code:
    name = compiler.ctx.names.get(expr)
    if name is None:
        raise Unsupported(f"variable {expr.name}")
    return Code(name, *compiler.ctx.bounds.get(expr, (None, None)))


def _arith(expr: PrimExpr) -> Callable[..., Code]:
    def rule(compiler: LaneExprCompiler, expr: E.BinaryOp) -> Code:
        a_code, b_code = compiler.compile(expr.a), compiler.compile(expr.b)
        a, b = compiler.operand(a_code, expr.a.dtype), compiler.operand(b_code, expr.b.dtype)
        dtype = expr.a.dtype
        operator = ARITHMETIC[type(expr)]
        text = f"({a} {operator.symbol} {b})"
        if dtype.is_float:
            return Code(compiler.rounded(text, dtype))
        if not dtype.is_integer:
            raise Unsupported(f"arithmetic on {dtype}")
        low, high = int_range(dtype.element)
        if operator.bounds is not None:
            value = operator.bounds((a_code.low, a_code.high), (b_code.low, b_code.high))
            if interval.within(value, low, high):  # numpy would not wrap either
                return Code(text, value[0], value[1])
        return Code(text, low, high)

    return rule


for _node in ARITHMETIC:
    _rule(_node)(_arith(_node))


@_rule(*DIVISIONS)
def _division(compiler: LaneExprCompiler, expr: E.BinaryOp) -> Code:
    a = compiler.array(compiler.compile(expr.a), expr.a.dtype)
    b = compiler.array(compiler.compile(expr.b), expr.b.dtype)
    dtype: DataType = expr.a.dtype
    division = DIVISIONS[type(expr)]
    if dtype.is_float:
        wide = compiler.name(V.wide, "wide")
        function = compiler.name(division.float_lanes, "float_lanes")
        return Code(compiler.rounded(f"{function}({wide}({a}), {wide}({b}))", dtype, True))
    if not dtype.is_integer:
        raise Unsupported(f"division of {dtype}")
    divisor = expr.b
    if isinstance(divisor, E.IntImm) and divisor.value > 0 and divisor.dtype.lanes == 1:
        by = compiler.name(V.constant(divisor.value, divisor.dtype), "by")
        quick = compiler.name(division.by_positive, "by_positive")
        return Code(f"{quick}({a}, {by})")
    site = compiler.ctx.site(expr, "division")
    divide = compiler.name(_divide(division, site), "divide")
    return Code(f"{divide}({a}, {b}, _frame, _mask)")


@_rule(*EXTREMA)
def _extremum_rule(compiler: LaneExprCompiler, expr: E.BinaryOp) -> Code:
    a, b = compiler.operands(expr)
    pick_ = compiler.name(_extremum(EXTREMA[type(expr)].lanes), "extremum")
    return Code(f"{pick_}({a}, {b})")


@_rule(*COMPARISONS)
def _compare(compiler: LaneExprCompiler, expr: E.CompareOp) -> Code:
    a, b = compiler.operands(expr)
    return Code(f"({a} {COMPARISONS[type(expr)].symbol} {b})", 0, 1)


@_rule(E.And, E.Or)
def _logical(compiler: LaneExprCompiler, expr: E.LogicalOp) -> Code:
    """The right operand only for the lanes the left one does not decide (as Python's
    `and` / `or` in the thread model), where evaluating it could fail."""
    is_and = isinstance(expr, E.And)
    a_code = compiler.compile(expr.a)
    if expr.dtype.lanes == 1 and not _is_total(expr.b):
        if not a_code.varying:  # it decides for every lane, or b is the result
            b = compiler.array(compiler.compile(expr.b), expr.b.dtype)
            return Code(f"({b} if {a_code.text} else {compiler.array(a_code, expr.a.dtype)})"
                        if is_and else
                        f"({compiler.array(a_code, expr.a.dtype)} if {a_code.text} else {b})")
        b = compiler.compile(expr.b)
        logical = compiler.name(_short_circuit(is_and), "and" if is_and else "or")
        return Code(f"{logical}({a_code.text}, lambda _mask: {b.text}, _mask, _lanes.count)")
    a = compiler.operand(a_code, expr.a.dtype)
    b = compiler.operand(compiler.compile(expr.b), expr.b.dtype)
    return Code(f"({a} {'&' if is_and else '|'} {b})", 0, 1)


def _short_circuit(is_and: bool) -> Callable[..., np.ndarray]:
    def evaluate(x: np.ndarray, right: Callable[..., object], mask: np.ndarray | None,
                 count: int) -> np.ndarray:
        decisive = x if not is_and else ~x
        needed = narrow(mask, ~decisive, count)
        if not needed.any():
            return x
        y = np.asarray(right(needed))
        return (x & y) if is_and else (x | y)

    return evaluate


def _choose(kind: np.dtype) -> Callable[..., np.ndarray]:
    """if_then_else with a lane-varying condition: each branch for the lanes taking it."""

    def choose(condition: np.ndarray, yes: Callable[..., object], no: Callable[..., object],
               mask: np.ndarray | None, count: int) -> np.ndarray:
        taken = narrow(mask, condition, count)
        skipped = narrow(mask, ~condition, count)
        t = yes(taken) if taken.any() else np.zeros((1, 1), kind)
        f = no(skipped) if skipped.any() else np.zeros((1, 1), kind)
        return np.where(condition, t, f)

    return choose


@_rule(E.Let)
def _let(compiler: LaneExprCompiler, expr: E.Let) -> Code:
    value = compiler.compile(expr.value)
    name = compiler.ctx.bind(expr.var, value.low, value.high)
    body = compiler.compile(expr.body)
    return Code(f"(({name} := {value.text}), {body.text})[1]", body.low, body.high)


def _is_total(expr: PrimExpr) -> bool:
    return not any(
        isinstance(node, E.BufferLoad | E.Call | E.Cast) or type(node) in DIVISIONS
        for node in _nodes(expr)
    )


@_rule(E.Not)
def _not(compiler: LaneExprCompiler, expr: E.Not) -> Code:
    return Code(f"(~{compiler.compile(expr.a).text})", 0, 1)


@_rule(E.Select)
def _select(compiler: LaneExprCompiler, expr: E.Select) -> Code:
    c = compiler.operand(compiler.compile(expr.condition), expr.condition.dtype)
    t = compiler.operand(compiler.compile(expr.true_value), expr.dtype)
    f = compiler.operand(compiler.compile(expr.false_value), expr.dtype)
    return Code(f"_np.where({c}, {t}, {f})")


@_rule(E.Cast)
def _cast(compiler: LaneExprCompiler, expr: E.Cast) -> Code:
    value = compiler.compile(expr.value).text
    source: DataType = expr.value.dtype.element
    target = expr.dtype.element
    if source.is_handle or target.is_handle:
        raise Unsupported("handle cast")
    if source == target:
        return Code(value)
    if target.is_bool:
        return Code(f"({value} != 0)")
    kind = compiler.name(V.value_type(target), str(V.value_type(target)))
    if target.is_integer:
        if not source.is_float:
            return Code(f"{value}.astype({kind})")
        low, high = int_range(target)
        site = compiler.ctx.site(expr, "cast")
        to_int = compiler.name(_to_int(low, high, V.value_type(target), str(target), site), "to_int")
        return Code(f"{to_int}({value}, _frame, _mask)")
    if not target.is_float:
        raise Unsupported(f"cast to {target}")
    return Code(compiler.rounded(f"{value}.astype(_np.float64)", target, True))


@_rule(E.Ramp)
def _ramp(compiler: LaneExprCompiler, expr: E.Ramp) -> Code:
    base = compiler.compile(expr.base).text
    stride = compiler.compile(expr.stride).text
    dtype = expr.dtype.element
    if dtype.is_float:
        wide = compiler.name(V.wide, "wide")
        steps = compiler.name(np.arange(expr.lanes, dtype=np.float64)[None, :], "steps")
        base = compiler.array(compiler.compile(expr.base), expr.base.dtype)
        stride = compiler.array(compiler.compile(expr.stride), expr.stride.dtype)
        text = f"({wide}({base}) + {wide}({stride}) * {steps})"
        return Code(compiler.rounded(text, dtype, True))
    steps = compiler.name(np.arange(expr.lanes, dtype=V.value_type(dtype))[None, :], "steps")
    return Code(f"({base} + {stride} * {steps})")


@_rule(E.Shuffle)
def _shuffle_rule(compiler: LaneExprCompiler, expr: E.Shuffle) -> Code:
    indices = [index.value for index in expr.indices if isinstance(index, E.IntImm)]
    if len(indices) != len(expr.indices):
        raise Unsupported("shuffle with variable indices")
    parts = [compiler.array(compiler.compile(v), v.dtype) for v in expr.vectors]
    join = compiler.name(_join_lanes, "join_lanes")
    return Code(f"{join}(({', '.join(parts)},), {compiler.name(indices, 'indices')})")


def _join_lanes(parts: tuple[np.ndarray, ...], indices: list[int]) -> np.ndarray:
    values = np.broadcast_arrays(*parts) if len(parts) > 1 else list(parts)
    rows = max(value.shape[0] for value in values)
    joined = np.concatenate([np.broadcast_to(v, (rows, v.shape[1])) for v in values], axis=1)
    return joined[:, indices]


@_rule(E.Broadcast)
def _broadcast(compiler: LaneExprCompiler, expr: E.Broadcast) -> Code:
    value = compiler.compile(expr.value).text
    return Code(f"_np.repeat({value}, {expr.lanes}, axis=1)")


@_rule(E.BufferLoad)
def _load_rule(compiler: LaneExprCompiler, expr: E.BufferLoad) -> Code:
    return compiler.access.lane_load(expr)


@_rule(E.Call)
def _call(compiler: LaneExprCompiler, expr: E.Call) -> Code:
    return compiler.calls.lane_call(expr)


class LaneAccessCompiler(AccessCompiler):
    exprs: LaneExprCompiler

    def lane_offset(
        self, buffer: Buffer, indices: tuple[PrimExpr, ...], node: Node, verb: str
    ) -> tuple[str, str, int]:
        """(memory name, element offsets text (an int or an (rows, lanes) array), site)."""
        from tirc.interp.fault import describe_access

        memory = self.exprs.lane.memories.get(buffer.data)
        if memory is None:
            raise Unsupported(f"memory of {buffer.name}")
        if buffer.axis_separators or len(indices) != len(buffer.shape):
            raise Unsupported("indexing")
        layout = self.default_layout(buffer)
        site = self.ctx.site(node, describe_access(verb, buffer), True)
        terms: list[str] = []
        if layout.offset.varying:
            raise Unsupported("a layout that differs between lanes")
        if layout.offset.constant != 0:
            terms.append(layout.offset.text)
        lanes = 1
        check = self.exprs.name(_check, "check")
        for dim, (index, extent, stride) in enumerate(
            zip(indices, layout.shape, layout.strides, strict=True)
        ):
            if extent.varying or stride.varying:
                raise Unsupported("a layout that differs between lanes")
            code = self.exprs.compile(index)
            lanes = max(lanes, index.dtype.lanes)
            text = self.exprs.operand(code, index.dtype)
            proven = code.low is not None and code.high is not None
            limit = extent.constant
            if not (proven and limit is not None and 0 <= code.low and code.high < limit):  # type: ignore[operator]  # experiment
                text = f"{check}({text}, {extent.text}, {dim}, {site}, _mask, _frame)"
            if stride.constant != 1:
                text = f"({text} * {stride.text})"
            terms.append(text)
        element_lanes = buffer.dtype.lanes
        if element_lanes > 1 or lanes > 1:
            raise Unsupported("vector access")  # TODO: lane offsets per vector lane
        return memory, " + ".join(terms) or "0", site

    def lane_load(self, expr: E.BufferLoad) -> Code:
        if expr.predicate is not None or expr.buffer.dtype.lanes > 1 or any(i.dtype.lanes > 1 for i in expr.indices):
            return self.vector_lane_load(expr)
        memory, offset, site = self.lane_offset(expr.buffer, expr.indices, expr, "load from")
        dtype = expr.buffer.dtype
        load = self.exprs.name(_load, "load")
        kinds = (
            self.exprs.name(access_type(dtype), f"k_{access_type(dtype)}"),
            self.exprs.name(V.value_type(dtype), f"h_{V.value_type(dtype)}"),
            self.exprs.name(dtype, str(dtype)),
        )
        return Code(f"{load}(_frame, {memory}, {offset}, _mask, {site}, {', '.join(kinds)})")

    def located(
        self, buffer: Buffer, indices: tuple[PrimExpr, ...], predicate: PrimExpr | None,
        node: Node, verb: str,
    ) -> str:
        from tirc.interp.fault import describe_access

        memory = self.exprs.lane.memories.get(buffer.data)
        if memory is None:
            raise Unsupported(f"memory of {buffer.name}")
        if buffer.axis_separators or len(indices) != len(buffer.shape):
            raise Unsupported("indexing")
        layout = self.default_layout(buffer)
        site = self.ctx.site(node, describe_access(verb, buffer), True)
        if layout.offset.varying:
            raise Unsupported("a layout that differs between lanes")
        parts = []
        for index, extent, stride in zip(indices, layout.shape, layout.strides, strict=True):
            if extent.varying or stride.varying:
                raise Unsupported("a layout that differs between lanes")
            code = self.exprs.operand(self.exprs.compile(index), index.dtype)
            parts.append(f"({code}, {extent.text}, {stride.text})")
        mask = "None"
        if predicate is not None:
            mask = self.exprs.operand(self.exprs.compile(predicate), predicate.dtype)
        locate = self.exprs.name(_locate, "locate")
        dims = f"({', '.join(parts)},)"
        return (
            f"{locate}(_frame, {memory}, {dims}, {layout.offset.text}, {mask}, "
            f"{buffer.dtype.lanes}, _mask, {site})"
        )

    def vector_lane_load(self, expr: E.BufferLoad) -> Code:
        located = self.located(expr.buffer, expr.indices, expr.predicate, expr, "load from")
        dtype = expr.buffer.dtype
        load = self.exprs.name(_load_at, "load_at")
        kinds = (
            self.exprs.name(access_type(dtype), f"k_{access_type(dtype)}"),
            self.exprs.name(V.value_type(dtype), f"h_{V.value_type(dtype)}"),
            self.exprs.name(dtype, str(dtype)),
        )
        return Code(f"{load}({located}, _frame, {', '.join(kinds)})")

    def lane_store(self, stmt: S.BufferStore) -> None:
        buffer = stmt.buffer
        value = self.exprs.compile(stmt.value)
        if (
            stmt.predicate is not None
            or buffer.dtype.lanes > 1
            or any(i.dtype.lanes > 1 for i in stmt.indices)
        ):
            located = self.located(buffer, stmt.indices, stmt.predicate, stmt, "store to")
            text = self.exprs.operand(value, stmt.value.dtype)
            store = self.exprs.name(_store_at, "store_at")
            kind = self.exprs.name(access_type(buffer.dtype), f"k_{access_type(buffer.dtype)}")
            self.ctx.emit(
                f"{store}({located}, _frame, {text}, {kind}, {self.exprs.name(buffer.dtype, 'dt')})"
            )
            return
        memory, offset, site = self.lane_offset(buffer, stmt.indices, stmt, "store to")
        dtype = buffer.dtype
        store = self.exprs.name(_store, "store")
        kind = self.exprs.name(access_type(dtype), f"k_{access_type(dtype)}")
        type_name = self.exprs.name(dtype, str(dtype))
        self.ctx.emit(
            f"{store}(_frame, {memory}, {offset}, _mask, {site}, {value.text}, {kind}, {type_name})"
        )


class LaneCallCompiler(CallCompiler):
    exprs: LaneExprCompiler

    def lane_call(self, call: E.Call) -> Code:
        op = call.op
        names = self.exprs.name
        args = [a for a in call.args if isinstance(a, PrimExpr)]
        if op == "likely":
            return self.exprs.compile(args[0])
        if op == "if_then_else":
            condition = self.exprs.compile(args[0])
            if not condition.varying:
                yes = self.exprs.array(self.exprs.compile(args[1]), call.dtype)
                no = self.exprs.array(self.exprs.compile(args[2]), call.dtype)
                return Code(f"({yes} if {condition.text} else {no})")
            if args[0].dtype.lanes > 1:
                yes = self.exprs.operand(self.exprs.compile(args[1]), call.dtype)
                no = self.exprs.operand(self.exprs.compile(args[2]), call.dtype)
                return Code(f"_np.where({condition.text}, {yes}, {no})")
            yes = self.exprs.compile(args[1]).text
            no = self.exprs.compile(args[2]).text
            choose = names(_choose(V.value_type(call.dtype)), "choose")
            return Code(
                f"{choose}({condition.text}, lambda _mask: {yes}, lambda _mask: {no}, "
                f"_mask, _lanes.count)"
            )
        if op in LANEWISE:
            source = args[0].dtype.element
            result = call.dtype
            if op in FLOAT_UNARY and not source.is_float or op in FLOAT_BINARY and not result.is_float:
                raise Unsupported(op)
            if op == "fabs" and source.is_integer:
                raise Unsupported(op)
            function = lane_function(op, source, result.element)
            each = names(V.elementwise(function, V.value_type(result)), op)
            texts = [self.exprs.array(self.exprs.compile(a), a.dtype) for a in args]
            text = f"{each}({', '.join(texts)})"
            return Code(self.exprs.rounded(text, result) if result.is_float else text)
        if op in SHUFFLES:
            _, value, amount, width, _ = (self.exprs.compile(a).text for a in args)
            shuffle = names(_shuffle(SHUFFLES[op], call.dtype.lanes), op)
            return Code(f"{shuffle}({value}, {amount}, {width}, _frame, _mask)")
        if op in ("bitwise_and", "bitwise_or", "bitwise_xor"):
            a, b = (self.exprs.operand(self.exprs.compile(x), x.dtype) for x in args)
            return Code(f"({a} {_BITWISE[op]} {b})")
        if op == "bitwise_not":
            return Code(f"(~{self.exprs.compile(args[0]).text})")
        if op in ("shift_left", "shift_right"):
            dtype = args[0].dtype.element
            if not dtype.is_integer:
                raise Unsupported(f"shift of {dtype}")
            a, b = (self.exprs.array(self.exprs.compile(x), x.dtype) for x in args)
            site = self.ctx.site(call, "shift")
            shift = names(_shift(op == "shift_left", dtype, site), op)
            return Code(f"{shift}({a}, {b}, _frame, _mask)")
        if op in ("call_extern", "call_pure_extern"):
            name_arg = call.args[0]
            operands = args[1:] if isinstance(name_arg, E.StringImm) else []
            if not operands or any(a.dtype.lanes > 1 or a.dtype.is_handle for a in operands):
                raise Unsupported("extern call")
            assert isinstance(name_arg, E.StringImm)
            function = extern_function(name_arg.value, [a.dtype for a in operands], call.dtype)
            if function is None:
                raise Unsupported(f"extern {name_arg.value}")
            each = names(V.elementwise(function, V.value_type(call.dtype)), name_arg.value)
            texts = [self.exprs.array(self.exprs.compile(a), a.dtype) for a in operands]
            text = f"{each}({', '.join(texts)})"
            return Code(self.exprs.rounded(text, call.dtype, True) if call.dtype.is_float else text)
        if op == "fmod":
            a, b = (self.exprs.array(self.exprs.compile(x), x.dtype) for x in args)
            modulo = DIVISIONS[E.Mod]
            if args[0].dtype.is_integer:
                divide = names(_divide(modulo, self.ctx.site(call, "fmod")), "fmod")
                return Code(f"{divide}({a}, {b}, _frame, _mask)")
            wide, function = names(V.wide, "wide"), names(modulo.float_lanes, "fmod")
            return Code(self.exprs.rounded(f"{function}({wide}({a}), {wide}({b}))", call.dtype, True))
        if op == "nextafter":
            kind = {"float64": np.float64, "float32": np.float32, "float16": np.float16}.get(
                str(call.dtype.element)
            )
            if kind is None:
                raise Unsupported(f"nextafter of {call.dtype}")
            a, b = (self.exprs.array(self.exprs.compile(x), x.dtype) for x in args)
            k, held = names(np.dtype(kind), str(np.dtype(kind))), names(V.value_type(call.dtype), "held")
            return Code(f"_np.nextafter({a}.astype({k}), {b}.astype({k})).astype({held})")
        if op == "reinterpret":
            value_arg = args[-1]
            if value_arg.dtype.is_handle or call.dtype.is_handle:
                raise Unsupported("pointer reinterpret")
            value = self.exprs.array(self.exprs.compile(value_arg), value_arg.dtype)
            source, target = names(value_arg.dtype, "source"), names(call.dtype, "target")
            decode, encode = names(V.decode, "decode"), names(V.encode, "encode")
            bits = names(reinterpret_bits, "reinterpret_bits")
            return Code(f"{decode}({bits}({encode}({value}, {source}), {target}), {target})")
        if op == "tvm_warp_activemask":
            function = names(_active_mask(V.value_type(call.dtype)), "active_mask")
            return Code(f"{function}(_frame, _mask)")
        raise Unsupported(f"T.{op}")


class LaneStmtCompiler(StmtCompiler):
    exprs: LaneExprCompiler

    def __init__(self, ctx: Context, lanes: Lanes):
        self.ctx = ctx
        self.exprs = LaneExprCompiler(ctx, lanes)
        self.lane = lanes
        self.masked = False  # whether _mask may be other than None here
        self.loops: list[str | None] = []  # per enclosing loop: its broken lanes' name
        # (None: a plain Python loop, left by `break` in every executing lane alike)

    def divergent_jumps(self, body: S.Stmt) -> bool:
        """Whether a break or continue of this loop sits under a lane-varying condition."""

        def search(stmt: S.Stmt, divergent: bool) -> bool:
            if isinstance(stmt, S.Break | S.Continue):
                return divergent
            if isinstance(stmt, S.For | S.While):
                return False
            if isinstance(stmt, S.IfThenElse):
                inner = divergent or self.lane.is_varying(stmt.condition)
                return search(stmt.then_case, inner) or (
                    stmt.else_case is not None and search(stmt.else_case, inner)
                )
            if isinstance(stmt, S.SeqStmt):
                return any(search(item, divergent) for item in stmt.stmts)
            inner_body = getattr(stmt, "body", None)
            return isinstance(inner_body, S.Stmt) and search(inner_body, divergent)

        return search(body, False)

    def run_loop_body(self, body: S.Stmt, broken: str, check: bool = True) -> None:
        ctx = self.ctx
        if check:
            ctx.emit("if _mask is not None and not _mask.any():")
            with ctx.indented():
                ctx.emit("break")
        was = self.masked
        self.masked = True
        self.loops.append(broken)
        self.compile(body)
        self.loops.pop()
        self.masked = was

    def compile(self, stmt: S.Stmt) -> None:
        rule = _STMT_RULES.get(type(stmt))
        if rule is None:
            raise Unsupported(type(stmt).__name__)
        with self.ctx.at(stmt):
            rule(self, stmt)

    @contextmanager
    def under(self, condition: str) -> Iterator[None]:
        """A block run by the lanes of _mask where condition (an array) holds."""
        ctx = self.ctx
        saved = ctx.fresh("_entry")
        narrow_ = self.exprs.name(narrow, "narrow")
        ctx.emit(f"{saved} = _mask")
        ctx.emit(f"_mask = {narrow_}({saved}, {condition}, _lanes.count)")
        ctx.emit("if _mask.any():")
        was = self.masked
        self.masked = True
        with ctx.indented():
            yield
        self.masked = was
        ctx.emit(f"_mask = {saved}")


_STMT_RULES: dict[type, Callable[[LaneStmtCompiler, S.Stmt], None]] = {}


def _stmt(*types: type) -> Callable:  # type: ignore[type-arg]  # experiment
    def register(function: Callable) -> Callable:  # type: ignore[type-arg]  # experiment
        for node in types:
            _STMT_RULES[node] = function
        return function

    return register


def _has_jump(stmt: S.Stmt) -> bool:
    """Whether stmt holds a break or continue of an enclosing loop (not of a loop inside)."""
    if isinstance(stmt, S.Break | S.Continue):
        return True
    if isinstance(stmt, S.For | S.While):
        return False
    if isinstance(stmt, S.SeqStmt):
        return any(_has_jump(item) for item in stmt.stmts)
    if isinstance(stmt, S.IfThenElse):
        return _has_jump(stmt.then_case) or (
            stmt.else_case is not None and _has_jump(stmt.else_case)
        )
    body = getattr(stmt, "body", None)
    return isinstance(body, S.Stmt) and _has_jump(body)


@_stmt(S.SeqStmt)
def _seq(compiler: LaneStmtCompiler, stmt: S.SeqStmt) -> None:
    """After a statement that may stop lanes (break, continue), the rest runs only while
    some lane executes."""
    items = list(stmt.stmts)
    for index, item in enumerate(items):
        compiler.compile(item)
        if _has_jump(item) and index + 1 < len(items):
            compiler.ctx.emit("if _mask is None or _mask.any():")
            with compiler.ctx.indented():
                _seq(compiler, S.SeqStmt(tuple(items[index + 1 :])))
            return


def _iteration(
    entry: np.ndarray | None, within: object, broken: np.ndarray | None
) -> np.ndarray | None:
    """The lanes that run the next iteration (None: all)."""
    mask = entry
    if within is not True:
        within = np.asarray(within).reshape(-1)
        mask = within.copy() if mask is None else mask & within
    if broken is not None:
        mask = ~broken if mask is None else mask & ~broken
    return mask


def _leave(broken: np.ndarray | None, mask: np.ndarray | None, count: int) -> np.ndarray:
    leaving = np.ones(count, bool) if mask is None else mask
    return leaving if broken is None else broken | leaving


def _union(a: np.ndarray | None, b: np.ndarray | None) -> np.ndarray | None:
    return None if a is None or b is None else a | b


def _loop_counts(
    first: np.ndarray, size: np.ndarray, by: np.ndarray, entry: np.ndarray | None, lanes: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    start = np.broadcast_to(np.asarray(first).reshape(-1).astype(np.int64), (lanes,))
    step = np.broadcast_to(np.asarray(by).reshape(-1).astype(np.int64), (lanes,))
    extent = np.broadcast_to(np.asarray(size).reshape(-1).astype(np.int64), (lanes,))
    if (step <= 0).any():
        raise Unsupported("a loop step that is not positive")
    counts = np.maximum(-(-extent // step), 0)
    active = counts if entry is None else np.where(entry, counts, 0)
    return start, step, counts, int(active.max(initial=0))


@_stmt(S.Bind)
def _bind(compiler: LaneStmtCompiler, stmt: S.Bind) -> None:
    var = stmt.var
    if var.dtype.is_handle:
        raise Unsupported("handle variable")
    if var not in compiler.lane.varying:
        from tirc.interp.threads.stmt import _bind as thread_bind

        thread_bind(compiler, stmt)
        return
    value = compiler.exprs.compile(stmt.value)
    kind = V.value_type(var.dtype)
    text = value.text
    if not value.varying:
        to_array = compiler.exprs.name(_to_array, "to_array")
        text = f"{to_array}({text}, {compiler.exprs.name(kind, str(kind))}, {var.dtype.lanes})"
    ctx = compiler.ctx
    name = ctx.bind(var)
    if compiler.masked:
        merge = compiler.exprs.name(_merge, "merge")
        ctx.emit(f"{name} = {merge}(_mask, {text}, {name})")
    else:
        ctx.emit(f"{name} = {compiler.exprs.name(V.owned, 'owned')}({text})")
    ctx.bounds[var] = (value.low, value.high) if not compiler.masked else (None, None)
    ctx.var_slots.pop(var, None)


@_stmt(S.For)
def _for(compiler: LaneStmtCompiler, stmt: S.For) -> None:
    binding = stmt.thread_binding
    tag = binding.thread_tag if binding is not None else ""
    if stmt.kind is S.ForKind.THREAD_BINDING and tag in COORDINATES:
        _thread_binding(compiler, tag, stmt.loop_var, stmt.min, stmt.extent, stmt.body)
        return
    _loop(compiler, stmt.loop_var, stmt.min, stmt.extent, stmt.step, stmt.body)


def _loop(
    compiler: LaneStmtCompiler,
    var: Var,
    start: PrimExpr,
    extent: PrimExpr,
    step: PrimExpr | None,
    body: S.Stmt,
) -> None:
    """A loop: the thread model's where bounds agree and no lane leaves it alone; else run
    to the largest count, each lane masked past its own and once it broke out."""
    jumps = _has_jump(body)
    if var not in compiler.lane.varying and not (jumps and compiler.divergent_jumps(body)):
        from tirc.interp.threads.stmt import serial_loop

        compiler.loops.append(None)
        serial_loop(compiler, var, start, extent, step, body)
        compiler.loops.pop()
        return
    ctx, exprs = compiler.ctx, compiler.exprs
    entry, broken = ctx.fresh("_entry"), ctx.fresh("_broken")
    ctx.emit(f"{entry} = _mask")
    ctx.emit(f"{broken} = None")
    iteration = exprs.name(_iteration, "iteration")
    kind = exprs.name(V.value_type(var.dtype), str(V.value_type(var.dtype)))
    if var in compiler.lane.varying:
        first, by, counts, trips, number = (ctx.fresh(hint) for hint in
                                            ("_first", "_by", "_counts", "_trips", "_i"))
        low = exprs.array(exprs.compile(start), start.dtype)
        size = exprs.array(exprs.compile(extent), extent.dtype)
        stride = exprs.array(exprs.compile(step), step.dtype) if step is not None else "1"
        counts_of = exprs.name(_loop_counts, "loop_counts")
        ctx.emit(f"{first}, {by}, {counts}, {trips} = "
                 f"{counts_of}({low}, {size}, {stride}, {entry}, _lanes.count)")
        ctx.emit(f"for {number} in range({trips}):")
        name = ctx.bind(var)
        with ctx.indented(loop=True):
            ctx.emit(f"_mask = {iteration}({entry}, {number} < {counts}, {broken})")
            ctx.emit(f"{name} = ({first} + {number} * {by}).astype({kind})[:, None]")
            compiler.run_loop_body(body, broken)
    else:
        low_code = exprs.compile(start)
        size_code = exprs.compile(extent)
        stride_text = exprs.compile(step).text if step is not None else "1"
        name = ctx.bind(var)
        ctx.emit(f"for {name} in range({low_code.text}, {low_code.text} + {size_code.text}, "
                 f"{stride_text}):")
        with ctx.indented(loop=True):
            ctx.emit(f"_mask = {iteration}({entry}, True, {broken})")
            compiler.run_loop_body(body, broken)
    ctx.emit(f"_mask = {entry}")


@_stmt(S.While)
def _while(compiler: LaneStmtCompiler, stmt: S.While) -> None:
    ctx, exprs = compiler.ctx, compiler.exprs
    varying = compiler.lane.is_varying(stmt.condition)
    if not varying and not (_has_jump(stmt.body) and compiler.divergent_jumps(stmt.body)):
        compiler.loops.append(None)
        condition = exprs.compile(stmt.condition)
        ctx.emit(f"while {condition.text}:")
        with ctx.indented(loop=True):
            compiler.compile(stmt.body)
        compiler.loops.pop()
        return
    entry, broken = ctx.fresh("_entry"), ctx.fresh("_broken")
    iteration = exprs.name(_iteration, "iteration")
    ctx.emit(f"{entry} = _mask")
    ctx.emit(f"{broken} = None")
    ctx.emit("while True:")
    with ctx.indented(loop=True):
        ctx.emit(f"_mask = {iteration}({entry}, True, {broken})")
        ctx.emit("if _mask is not None and not _mask.any():")
        with ctx.indented():
            ctx.emit("break")
        condition = exprs.compile(stmt.condition)
        if condition.varying:
            held = ctx.fresh("_c")
            narrow_ = exprs.name(narrow, "narrow")
            leave = exprs.name(_leave, "leave")
            ctx.emit(f"{held} = {condition.text}")
            ctx.emit(f"{broken} = {leave}({broken}, {narrow_}(_mask, ~{held}, _lanes.count), 0)")
            ctx.emit(f"_mask = {iteration}({entry}, True, {broken})")
            ctx.emit("if _mask is not None and not _mask.any():")
        else:
            ctx.emit(f"if not {condition.text}:")
        with ctx.indented():
            ctx.emit("break")
        compiler.run_loop_body(stmt.body, broken, check=False)
    ctx.emit(f"_mask = {entry}")


@_stmt(S.Break)
def _break(compiler: LaneStmtCompiler, stmt: S.Break) -> None:
    broken = compiler.loops[-1] if compiler.loops else None
    if broken is None:
        compiler.ctx.emit("break")
        return
    leave = compiler.exprs.name(_leave, "leave")
    compiler.ctx.emit(f"{broken} = {leave}({broken}, _mask, _lanes.count)")
    compiler.ctx.emit("_mask = _np.zeros(_lanes.count, bool)")


@_stmt(S.Continue)
def _continue(compiler: LaneStmtCompiler, stmt: S.Continue) -> None:
    if compiler.loops and compiler.loops[-1] is None:
        compiler.ctx.emit("continue")
        return
    compiler.ctx.emit("_mask = _np.zeros(_lanes.count, bool)")


def _thread_binding(
    compiler: LaneStmtCompiler,
    tag: str,
    var: Var,
    start: PrimExpr | None,
    extent: PrimExpr,
    body: S.Stmt,
) -> None:
    ctx = compiler.ctx
    kind = V.value_type(var.dtype)
    launched = ctx.kernel.extents[tag] if ctx.kernel is not None else None
    high = None if launched is None or launched.constant is None else launched.constant - 1
    name = ctx.bind(var, 0, high) if start is None else ctx.bind(var)
    text = f"_lanes.coordinates[{tag!r}][:, None].astype({compiler.exprs.name(kind, str(kind))})"
    if start is not None:
        low = compiler.exprs.compile(start)
        text = f"({text} + {low.text})"
    ctx.emit(f"{name} = {text}")
    size = compiler.exprs.compile(extent)
    if size.varying:
        raise Unsupported("a thread extent that differs between lanes")
    if launched is not None and size.text == launched.text:
        compiler.compile(body)
        return
    with compiler.under(f"_lanes.coordinates[{tag!r}][:, None] < {size.text}"):
        compiler.compile(body)


@_stmt(S.AttrStmt)
def _attr(compiler: LaneStmtCompiler, stmt: S.AttrStmt) -> None:
    if stmt.key in ("thread_extent", "virtual_thread") and isinstance(stmt.node, S.IterVar):
        tag = stmt.node.thread_tag
        if stmt.key == "virtual_thread" or tag.startswith("vthread") or tag == "cthread":
            start = E.IntImm(0, stmt.value.dtype)
            _loop(compiler, stmt.node.var, start, stmt.value, None, stmt.body)
            return
        if tag not in COORDINATES:
            raise Unsupported(f"thread tag {tag}")
        _thread_binding(compiler, tag, stmt.node.var, None, stmt.value, stmt.body)
        return
    compiler.compile(stmt.body)


@_stmt(S.IfThenElse)
def _if(compiler: LaneStmtCompiler, stmt: S.IfThenElse) -> None:
    if not compiler.lane.is_varying(stmt.condition):
        from tirc.interp.threads.stmt import _if as thread_if

        thread_if(compiler, stmt)
        return
    condition = compiler.exprs.compile(stmt.condition)
    ctx = compiler.ctx
    held, entry = ctx.fresh("_c"), ctx.fresh("_entry")
    narrow_ = compiler.exprs.name(narrow, "narrow")
    ctx.emit(f"{held} = {condition.text}")
    ctx.emit(f"{entry} = _mask")
    was = compiler.masked
    compiler.masked = True
    jumps = _has_jump(stmt)
    for case, taken in ((stmt.then_case, held), (stmt.else_case, f"~{held}")):
        if case is None:
            continue
        ctx.emit(f"_mask = {narrow_}({entry}, {taken}, _lanes.count)")
        ctx.emit("if _mask.any():")
        with ctx.indented():
            compiler.compile(case)
        if jumps and case is stmt.then_case:
            ctx.emit(f"{held}_after = _mask")
    compiler.masked = was
    if not jumps:
        ctx.emit(f"_mask = {entry}")
        return
    union = compiler.exprs.name(_union, "union")
    if stmt.else_case is None:
        ctx.emit(f"_mask = {union}({held}_after, {narrow_}({entry}, ~{held}, _lanes.count))")
    else:
        ctx.emit(f"_mask = {union}({held}_after, _mask)")
    ctx.emit(f"if {entry} is None and _mask is not None and _mask.all():")
    with ctx.indented():
        ctx.emit("_mask = None")


@_stmt(S.BufferStore)
def _store_rule(compiler: LaneStmtCompiler, stmt: S.BufferStore) -> None:
    compiler.exprs.access.lane_store(stmt)


@_stmt(S.AllocBuffer, S.DeclBuffer)
def _alloc(compiler: LaneStmtCompiler, stmt: S.AllocBuffer | S.DeclBuffer) -> None:
    buffer = stmt.buffer
    memories = compiler.lane.memories
    if isinstance(stmt, S.DeclBuffer) and stmt.data is not None and stmt.data is not buffer.data:
        if not isinstance(stmt.data, Var) or stmt.data not in memories:
            raise Unsupported("a buffer over a computed pointer")
        memories[buffer.data] = memories[stmt.data]
        compiler.ctx.names[buffer.data] = compiler.ctx.names[stmt.data]
        return
    if buffer.data in memories:
        return
    count = compiler.element_count(buffer)
    if count.varying:
        raise Unsupported("a size that differs between lanes")
    size = access_type(buffer.dtype).itemsize * buffer.dtype.lanes
    per_block = buffer.scope in SHARED_SCOPES
    name = compiler.ctx.fresh(f"{buffer.name}_m")
    rows = "_lanes.blocks" if per_block else "_lanes.count"
    allocate = compiler.exprs.name(allocate_rows, "allocate_rows")
    compiler.ctx.emit(f"{name} = {allocate}({rows}, {count.text} * {size}, {per_block})")
    memories[buffer.data] = name
    compiler.lane.scopes[buffer.data] = buffer.scope


@_stmt(S.AssertStmt)
def _assert(compiler: LaneStmtCompiler, stmt: S.AssertStmt) -> None:
    condition = compiler.exprs.compile(stmt.condition)
    message = f"{stmt.kind}: {' '.join(stmt.message) or 'assertion failed'}"
    site = compiler.ctx.site(stmt, "assert")
    if not condition.varying:
        compiler.ctx.emit(f"if not {condition.text}:")
        with compiler.ctx.indented():
            compiler.ctx.emit(f"_fault({site}, {message!r})")
        return
    check = compiler.exprs.name(_check_assert, "check_assert")
    compiler.ctx.emit(f"{check}({condition.text}, {site}, {message!r}, _frame, _mask)")


def _check_assert(holds: np.ndarray, site: int, message: str, frame: Frame, mask: object) -> None:
    found = first_lane(~holds, frame.lanes, mask)  # type: ignore[arg-type]  # experiment
    if found is not None:
        raise fault_in_lane(site, message, frame.lanes, found[0])


@_stmt(S.Evaluate)
def _evaluate(compiler: LaneStmtCompiler, stmt: S.Evaluate) -> None:
    value = stmt.value
    if not isinstance(value, E.Call):
        return
    if value.op == "tvm_storage_sync":
        return  # lockstep order is a legal schedule of a race-free kernel
    code = compiler.exprs.compile(value)
    if not code.is_atom:
        compiler.ctx.emit(code.text)


# compiling and launching


@dataclass(frozen=True)
class LaneKernel:
    free: tuple[Var, ...]
    scopes: tuple[str | None, ...]


def emit_lane_kernel(compiler: StmtCompiler, stmt: S.Stmt, free: tuple[Var, ...]) -> str | None:
    """Emits `def _lanes_N(_frame):` for the kernel at stmt; its name, or None (Unsupported)."""
    ctx = compiler.ctx
    saved = (
        len(ctx.lines),
        len(ctx.line_nodes),
        len(ctx.sites),
        dict(ctx.names),
        dict(ctx.bounds),
        dict(ctx.views),
        dict(ctx.layouts),
        set(ctx.storages),
        list(ctx.slots),
        dict(ctx.var_slots),
        dict(ctx.affine),
        ctx.kernel,
        ctx.depth,
        ctx.nesting,
        ctx.loops,
    )
    lanes = Lanes({var: ctx.scopes.get(var, "global") for var in free if var.dtype.is_handle})
    try:
        lanes.scan(stmt)
        name = ctx.fresh("_lanes")
        ctx.emit(f"def {name}(_frame):")
        with ctx.function_body(), ctx.indented(loop=True):
            ctx.slots.clear()
            ctx.kernel = KernelState(COORDINATES, _extents(compiler, stmt))
            ctx.emit("_lanes = _frame.lanes")
            ctx.emit("_mask = None")
            ctx.emit(f"_np = {ctx.constant(np, 'numpy')}")
            for var in free:
                if var.dtype.is_handle:
                    memory = ctx.fresh(f"{var.name}_m")
                    ctx.emit(f"{memory} = _frame.memory[{ctx.constant(var, 'var')}]")
                    lanes.memories[var] = memory
            for var in sorted(lanes.bound, key=lambda v: v.name):
                ctx.emit(f"{ctx.bind(var)} = None")  # a lane that never binds it keeps None
            LaneStmtCompiler(ctx, lanes).compile(stmt)
    except Unsupported as error:
        if os.environ.get("TIRC_LANE_DEBUG"):
            print("lane source unsupported:", error)
        del ctx.lines[saved[0] :]
        del ctx.line_nodes[saved[1] :]
        del ctx.sites[saved[2] :]
        result = None
    else:
        result = name
        if os.environ.get("TIRC_LANE_DEBUG"):
            print("lane source: compiled")
    ctx.names, ctx.bounds, ctx.views, ctx.layouts, ctx.storages = (
        saved[3], saved[4], saved[5], saved[6], saved[7],
    )
    ctx.slots[:] = saved[8]
    ctx.var_slots, ctx.affine = saved[9], saved[10]
    ctx.kernel, ctx.depth, ctx.nesting, ctx.loops = saved[11], saved[12], saved[13], saved[14]
    return result


def _extents(compiler: StmtCompiler, stmt: S.Stmt) -> dict[str, Code]:
    from tirc.interp.threads.kernel import _launch_extents

    return _launch_extents(compiler, stmt)


def free_variables(ctx: Context, stmt: S.Stmt) -> tuple[Var, ...]:
    free: list[Var] = []

    def collect(node: Node) -> None:
        if isinstance(node, Var) and node in ctx.names and node not in free:
            free.append(node)
        elif isinstance(node, Buffer):
            collect(node.data)
            for part in (*node.shape, *node.strides, node.elem_offset):
                if part is not None:
                    walk(part, collect)

    walk(stmt, collect)
    return tuple(free)


__all__ = ["ENABLED", "emit_lane_kernel", "free_variables", "interval"]

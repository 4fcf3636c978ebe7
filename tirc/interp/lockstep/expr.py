"""Expressions of a GPU kernel to closures `(frame, mask) -> array` over all lanes at once.

`mask` (None: every lane) says which lanes are executing; only their faults count, and
operands that the scalar interpreter evaluates only conditionally (`if_then_else` branches,
the right side of `and` / `or`) are evaluated under the narrower mask. Anything the lockstep
mode has no exact rule for raises Unsupported at compile time: the kernel then runs in the
thread model instead.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

import numpy as np

from tirc.interp.fault import Fault, describe_access
from tirc.interp.memory.lanes import (
    Frame,
    LaneMemory,
    Memory,
    RowMemory,
    fault_in_lane,
    first_lane,
    pick,
)
from tirc.interp.memory.storage import access_type
from tirc.interp.semantics import arith
from tirc.interp.semantics import values as V
from tirc.interp.semantics.operators import (
    ARITHMETIC,
    COMPARISONS,
    DIVISIONS,
    EXTREMA,
    Division,
    Lanes,
)
from tirc.ir import expr as E
from tirc.ir.buffer import Buffer
from tirc.ir.dtype import DataType
from tirc.ir.expr import PrimExpr, Var
from tirc.ir.functor import Dispatch
from tirc.ir.integer import int_range, wrap
from tirc.ir.node import Node

if TYPE_CHECKING:
    from tirc.interp.threads.context import Context

Mask = np.ndarray | None
Eval = Callable[["Frame", Mask], np.ndarray]
Located = tuple["Memory", "np.ndarray | int", "np.ndarray | None", int]
CallRule = Callable[["ExprCompiler", E.Call], Eval]


class Unsupported(Exception):
    """A construct the lockstep mode does not run; the kernel falls back to threads."""


def narrow(mask: Mask, condition: np.ndarray, lanes: int) -> np.ndarray:
    """mask & condition (a (rows, 1) bool value) as an (L,) lane mask."""
    if condition.shape[0] != lanes:  # the same in every lane
        if mask is None:
            return np.full(lanes, bool(condition[0, 0]))
        return mask.copy() if condition[0, 0] else np.zeros(lanes, bool)
    column = condition[:, 0]
    return column.copy() if mask is None else mask & column


class ExprCompiler:
    def __init__(
        self, ctx: Context, known: set[Var], handles: set[Var], calls: Mapping[str, CallRule]
    ):
        self.ctx = ctx
        self.known = known  # scalar variables defined where the code runs
        self.handles = handles  # data handles with memory
        self.calls = calls  # intrinsic name -> its rule (lockstep.calls)

    def compile(self, expr: PrimExpr) -> Eval:
        if isinstance(expr, E.Call):
            call_rule = self.calls.get(expr.op)
            if call_rule is None:
                raise Unsupported(f"T.{expr.op}")
            return call_rule(self, expr)
        rule = _RULES.get(type(expr))
        if rule is None:
            raise Unsupported(type(expr).__name__)
        return rule(self, expr)

    def site(self, node: Node | None, what: str, is_access: bool = False) -> int:
        return self.ctx.site(node, what, is_access)

    # memory access

    def access(
        self,
        buffer: Buffer,
        indices: tuple[PrimExpr, ...],
        predicate: PrimExpr | None,
        node: Node | None,
        verb: str,
    ) -> Callable[[Frame, Mask], Located]:
        """(memory, element offsets (rows, width) or one lane-uniform element (an int),
        active elements or None, site)."""
        if buffer.data not in self.handles:
            raise Unsupported(f"memory of {buffer.name}")
        if buffer.axis_separators or len(indices) != len(buffer.shape):
            raise Unsupported("indexing")
        site = self.site(node, describe_access(verb, buffer), True)
        index_codes = [self.compile(index) for index in indices]
        extents = [self.static(extent) for extent in buffer.shape]
        if buffer.strides:
            strides = [self.static(stride) for stride in buffer.strides]
        else:
            strides = _row_major(extents)
        offset = self.static(buffer.elem_offset) if buffer.elem_offset is not None else 0
        guard = self.compile(predicate) if predicate is not None else None
        dims = tuple(zip(range(len(indices)), index_codes, extents, strides, strict=True))
        data = buffer.data
        element_lanes = buffer.dtype.lanes
        if len(dims) == 1 and offset == 0 and guard is None and element_lanes == 1:
            limit, stride = extents[0], strides[0]
            if isinstance(limit, int) and isinstance(stride, int) and stride == 1:
                return _locate_flat(data, index_codes[0], limit, site)

        def locate(frame: Frame, mask: Mask) -> Located:
            active: np.ndarray | None = None
            if guard is not None:
                active = guard(frame, mask)
                if mask is not None:
                    active = active & np.broadcast_to(mask[:, None], (mask.size, active.shape[1]))
            elif mask is not None:
                active = mask[:, None]
            scalar = 0  # the lane-uniform part of the offset, and the rest (None: nothing)
            varying: np.ndarray | None = None
            if isinstance(offset, int):
                scalar = offset
            else:
                varying = offset(frame, mask).astype(np.int64, copy=False)
            only = len(dims) == 1 and varying is None  # an index that may be the offset itself
            for dim, index, extent, stride in dims:
                value = index(frame, mask)
                limit = extent if isinstance(extent, int) else extent(frame, mask)
                step = stride if isinstance(stride, int) else stride(frame, mask)
                if value.shape == (1, 1) and isinstance(limit, int) and isinstance(step, int):
                    number = int(value[0, 0])
                    if not 0 <= number < limit:
                        _check_bounds(value, limit, dim, frame, active, site)
                    scalar += number * step
                    continue
                if not isinstance(limit, int) or not _below(value, limit):
                    _check_bounds(value, limit, dim, frame, active, site)
                if only and step == 1 and value.dtype.kind in "iu":
                    varying = value
                    continue
                term = value.astype(np.int64, copy=False)
                if not isinstance(step, int):
                    term = term * step.astype(np.int64, copy=False)
                elif step != 1:
                    term = term * step
                varying = term if varying is None else varying + term
            if varying is None:
                if element_lanes == 1:
                    return frame.memory[data], scalar, active, site
                total = np.full((1, 1), scalar, np.int64)
            elif scalar:
                total = varying.astype(np.int64, copy=False) + scalar
            else:
                total = varying
            if element_lanes > 1:
                rows, width = total.shape
                total = (
                    total.astype(np.int64, copy=False)[:, :, None] * element_lanes
                    + np.arange(element_lanes)
                ).reshape(rows, width * element_lanes)
                if active is not None:
                    active = np.repeat(
                        np.broadcast_to(active, (active.shape[0], width)), element_lanes, axis=1
                    )
            return frame.memory[data], total, active, site

        return locate

    def static(self, expr: PrimExpr) -> int | Eval:
        """An integer known when compiling (a constant), else the code computing it."""
        if isinstance(expr, E.IntImm) and not expr.dtype.is_bool:
            return int(_wrapped(expr.value, expr.dtype))
        return self.compile(expr)


def _locate_flat(data: Var, index: Eval, limit: int, site: int) -> Callable[[Frame, Mask], Located]:
    """locate for the common access: one index into an extent known when compiling (the
    element offset is the index itself)."""

    def locate(frame: Frame, mask: Mask) -> Located:
        active = None if mask is None else mask[:, None]
        value = index(frame, mask)
        if value.size == 1 and value.ndim == 2:
            number = int(value[0, 0])
            if not 0 <= number < limit:
                _check_bounds(value, limit, 0, frame, active, site)
            return frame.memory[data], number, active, site
        if not _below(value, limit):
            _check_bounds(value, limit, 0, frame, active, site)
        if value.dtype.kind not in "iu":
            value = value.astype(np.int64)
        return frame.memory[data], value, active, site

    return locate


_UNSIGNED = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


def _below(value: np.ndarray, limit: int) -> bool:
    """Whether every element of an integer array lies in [0, limit), in one pass: a signed
    array seen as unsigned puts every negative number above any limit."""
    if limit <= 0:
        return False
    kind = value.dtype.kind
    if kind == "i":
        return int(value.view(_UNSIGNED[value.dtype.itemsize]).max(initial=0)) < limit
    if kind == "u":
        return int(value.max(initial=0)) < limit
    return False


def _check_bounds(
    value: np.ndarray,
    limit: int | np.ndarray,
    dim: int,
    frame: Frame,
    active: np.ndarray | None,
    site: int,
) -> None:
    """Faults on the first executing element whose index lies outside [0, limit)."""
    bounds = np.asarray(limit, dtype=np.int64).reshape(-1, 1) if isinstance(limit, int) else limit
    index = value.astype(np.int64, copy=False)
    bad = (index < 0) | (index >= bounds.astype(np.int64, copy=False))
    if not bad.any():
        return
    found = first_lane(bad, frame.lanes, active)
    if found is not None:
        lane, column = found
        message = (
            f"index {pick(index, lane, column)} is outside "
            f"[0, {pick(bounds, lane, column)}) in dimension {dim}"
        )
        raise fault_in_lane(site, message, frame.lanes, lane)


def _row_major(extents: list[int | Eval]) -> list[int | Eval]:
    """Each dimension's stride: the product of the later extents (an int when all are)."""
    strides: list[int | Eval] = []
    later: list[int | Eval] = []
    for extent in reversed(extents):
        known = [part for part in later if isinstance(part, int)]
        if len(known) == len(later):
            strides.append(math.prod(known))
        else:
            strides.append(_product(list(later)))
        later.append(extent)
    return list(reversed(strides))


def _product(parts: list[int | Eval]) -> Eval:
    def stride(frame: Frame, mask: Mask) -> np.ndarray:
        total = np.ones((1, 1), np.int64)
        for part in parts:
            if isinstance(part, int):
                total = total * part
            else:
                total = total * part(frame, mask).astype(np.int64, copy=False)
        return total

    return stride


def load_raw(
    frame: Frame, located: Located, kind: np.dtype, held: np.dtype, dtype: DataType
) -> np.ndarray:
    """The values a load reads (held: their value type), for the active lanes (zero in the
    others)."""
    memory, offsets, active, site = located
    rows = frame.row_index(memory) if memory.per_lane else None
    try:
        if isinstance(offsets, int):  # one element, checked for an executing lane
            if active is not None and not active.any():
                return np.zeros((1, 1), dtype=held)
            raw = memory.load_one(kind, offsets, rows)
        else:
            if active is not None:
                if not active.any():
                    return np.zeros(offsets.shape, dtype=held)
                if offsets.shape[0] != 1 or active.shape[1] != 1:
                    # inactive lanes' offsets were not checked; a lane-uniform one was (for an
                    # executing lane), unless a vector lane is off in every lane
                    offsets = np.where(active, offsets, 0)
            raw = memory.load(kind, offsets, rows)
    except IndexError:
        raise Fault(site, "memory access out of bounds") from None
    if active is not None:
        raw = np.where(active, raw, np.zeros((), raw.dtype))
    return raw if raw.dtype == held else V.decode(raw, dtype)


def store_raw(frame: Frame, located: Located, raw: np.ndarray, kind: np.dtype) -> None:
    """Stores memory's representation of values for the active lanes."""
    memory, offsets, active, site = located
    try:
        if _store_in_rows(memory, offsets, active, raw, kind):
            return
        if isinstance(offsets, int):
            if active is None and not isinstance(memory, LaneMemory):
                memory.store_one(kind, offsets, raw)
                return
            offsets = np.full((1, 1), offsets, np.int64)
        rows = frame.row_index(memory) if memory.per_lane else None
        shapes = [offsets, raw] + ([rows] if rows is not None else [])
        if active is not None:
            shapes.append(active)
        shaped = np.broadcast_arrays(*shapes)
        if active is None:
            offsets_b, raw_b = shaped[0], shaped[1]
            rows_b = shaped[2] if rows is not None else None
        else:
            chosen = shaped[-1]
            if not chosen.any():
                return
            offsets_b, raw_b = shaped[0][chosen], shaped[1][chosen]
            rows_b = shaped[2][chosen] if rows is not None else None
        memory.store(kind, offsets_b, raw_b, rows_b)
    except IndexError:
        raise Fault(site, "memory access out of bounds") from None


def _store_in_rows(
    memory: object,
    offsets: np.ndarray | int,
    active: np.ndarray | None,
    raw: np.ndarray,
    kind: np.dtype,
) -> bool:
    """Stores to each lane's own memory at lane-uniform elements without a scatter; False
    when the store is not of that kind."""
    if not isinstance(memory, RowMemory | LaneMemory) or memory.per_block:
        return False
    if isinstance(offsets, int):
        column = offsets
    elif offsets.shape[0] != 1:
        return False
    elif active is None:
        width = offsets.shape[1]
        if width == 1 or len(set(offsets[0].tolist())) == width:
            memory.store_columns(kind, offsets[0], raw)
            return True
        return False
    elif offsets.shape[1] != 1:
        return False
    else:
        column = int(offsets[0, 0])
    if active is None:
        memory.store_lanes(kind, column, raw, None)
        return True
    if active.shape[1] != 1:
        return False
    lanes = active[:, 0]
    if lanes.any():
        memory.store_lanes(kind, column, raw, lanes)
    return True


# expressions


_RULES: Dispatch[ExprCompiler, [], Eval] = Dispatch("expression (lockstep)")


@_RULES.register(Var)
def _var(compiler: ExprCompiler, expr: Var) -> Eval:
    if expr not in compiler.known or expr.dtype.is_handle:
        raise Unsupported(f"variable {expr.name}")
    return lambda frame, mask: frame.values[expr]


@_RULES.register(E.IntImm)
def _int_imm(compiler: ExprCompiler, expr: E.IntImm) -> Eval:
    value = V.constant(_wrapped(expr.value, expr.dtype), expr.dtype)
    return lambda frame, mask: value


def _wrapped(number: int, dtype: DataType) -> int | bool:
    if dtype.is_bool:
        return bool(number)
    low, high = int_range(dtype)
    if not low <= number <= high:
        return wrap(number, dtype)
    return number


@_RULES.register(E.FloatImm)
def _float_imm(compiler: ExprCompiler, expr: E.FloatImm) -> Eval:
    value = V.constant(V.round_to(expr.value, expr.dtype), expr.dtype)
    return lambda frame, mask: value


def _arith(op: Lanes) -> Callable[..., Eval]:
    def rule(compiler: ExprCompiler, expr: E.BinaryOp) -> Eval:
        a, b = compiler.compile(expr.a), compiler.compile(expr.b)
        dtype = expr.a.dtype
        if dtype.is_float and str(dtype.element) != "float32":
            return lambda frame, mask: V.round_array(op(a(frame, mask), b(frame, mask)), dtype)
        if dtype.is_integer or dtype.is_float:  # float32: numpy's own ops round as needed
            return lambda frame, mask: op(a(frame, mask), b(frame, mask))
        raise Unsupported(f"arithmetic on {dtype}")

    return rule


def _division(compiler: ExprCompiler, expr: PrimExpr) -> Eval:
    assert isinstance(expr, E.BinaryOp)  # the rules give it Div, Mod, FloorDiv and FloorMod
    a, b = compiler.compile(expr.a), compiler.compile(expr.b)
    dtype: DataType = expr.a.dtype
    division = DIVISIONS[type(expr)]
    if dtype.is_float:
        function = division.float_lanes
        return lambda frame, mask: V.round_array(
            function(V.wide(a(frame, mask)), V.wide(b(frame, mask))), dtype
        )
    if not dtype.is_integer:
        raise Unsupported(f"division of {dtype}")
    divisor = expr.b
    if isinstance(divisor, E.IntImm) and divisor.value > 0 and divisor.dtype.lanes == 1:
        by = V.constant(divisor.value, divisor.dtype)
        quick = division.by_positive
        return lambda frame, mask: quick(a(frame, mask), by)
    return checked_division(a, b, division, compiler.site(expr, "division"))


def checked_division(a: Eval, b: Eval, division: Division, site: int) -> Eval:
    def divide(frame: Frame, mask: Mask) -> np.ndarray:
        x, y = a(frame, mask), b(frame, mask)
        zero = y == 0
        if zero.any():
            found = first_lane(zero, frame.lanes, mask)
            if found is not None:
                lane, column = found
                message = arith.by_zero(pick(x, lane, column), division.written)
                raise fault_in_lane(site, message, frame.lanes, lane)
        return division.lanes(x, y)

    return divide


def _extremum(compare: Lanes) -> Callable[..., Eval]:
    def rule(compiler: ExprCompiler, expr: E.BinaryOp) -> Eval:
        a, b = compiler.compile(expr.a), compiler.compile(expr.b)

        def pick(frame: Frame, mask: Mask) -> np.ndarray:
            x, y = a(frame, mask), b(frame, mask)
            return np.where(compare(x, y), x, y)

        return pick

    return rule


def _compare(op: Lanes) -> Callable[..., Eval]:
    def rule(compiler: ExprCompiler, expr: E.CompareOp) -> Eval:
        a, b = compiler.compile(expr.a), compiler.compile(expr.b)
        return lambda frame, mask: op(a(frame, mask), b(frame, mask))

    return rule


def _logical(is_and: bool) -> Callable[..., Eval]:
    """Python's `and` / `or` (which the scalar interpreter emits) skip the right operand."""

    def rule(compiler: ExprCompiler, expr: E.LogicalOp) -> Eval:
        a, b = compiler.compile(expr.a), compiler.compile(expr.b)
        vector = expr.dtype.lanes > 1

        def evaluate(frame: Frame, mask: Mask) -> np.ndarray:
            x = a(frame, mask)
            if vector:
                y = b(frame, mask)
            elif x.shape[0] == 1:  # the same in every lane: it decides, or b is the result
                return x if bool(x[0, 0]) != is_and else b(frame, mask)
            else:
                decisive = x if not is_and else ~x
                needed = narrow(mask, ~decisive, frame.lanes.count)
                if not needed.any():
                    return x
                y = b(frame, needed)
            return (x & y) if is_and else (x | y)

        return evaluate

    return rule


@_RULES.register(E.Not)
def _not(compiler: ExprCompiler, expr: E.Not) -> Eval:
    a = compiler.compile(expr.a)
    return lambda frame, mask: np.logical_not(a(frame, mask))


@_RULES.register(E.Select)
def _select(compiler: ExprCompiler, expr: E.Select) -> Eval:
    c = compiler.compile(expr.condition)
    t = compiler.compile(expr.true_value)
    f = compiler.compile(expr.false_value)
    return lambda frame, mask: np.where(c(frame, mask), t(frame, mask), f(frame, mask))


@_RULES.register(E.Cast)
def _cast(compiler: ExprCompiler, expr: E.Cast) -> Eval:
    value = compiler.compile(expr.value)
    source: DataType = expr.value.dtype.element
    target = expr.dtype.element
    if source.is_handle or target.is_handle:
        raise Unsupported("handle cast")
    if source == target:
        return value
    if target.is_bool:
        return lambda frame, mask: value(frame, mask) != 0
    kind = V.value_type(target)
    if target.is_integer:
        if not source.is_float:
            return lambda frame, mask: value(frame, mask).astype(kind)
        low, high = int_range(target)
        site = compiler.site(expr, "cast")
        name = str(target)

        def to_int(frame: Frame, mask: Mask) -> np.ndarray:
            x = V.wide(value(frame, mask))
            bad = ~((x > low - 1) & (x < high + 1))  # NaN compares false: bad
            if bad.any():
                found = first_lane(bad, frame.lanes, mask)
                if found is not None:
                    lane, column = found
                    number = float(pick(x, lane, column))
                    message = arith.cast_out_of_range(number, name)
                    raise fault_in_lane(site, message, frame.lanes, lane)
                x = np.where(bad, 0.0, x)
            return np.trunc(x).astype(kind)

        return to_int
    if not target.is_float:
        raise Unsupported(f"cast to {target}")
    return lambda frame, mask: V.round_array(value(frame, mask).astype(np.float64), target)


@_RULES.register(E.Ramp)
def _ramp(compiler: ExprCompiler, expr: E.Ramp) -> Eval:
    base, stride = compiler.compile(expr.base), compiler.compile(expr.stride)
    dtype = expr.dtype.element
    if dtype.is_float:
        wide_steps = np.arange(expr.lanes, dtype=np.float64)[None, :]
        return lambda frame, mask: V.round_array(
            V.wide(base(frame, mask)) + V.wide(stride(frame, mask)) * wide_steps, dtype
        )
    steps = np.arange(expr.lanes, dtype=V.value_type(dtype))[None, :]
    return lambda frame, mask: base(frame, mask) + stride(frame, mask) * steps


@_RULES.register(E.Broadcast)
def _broadcast(compiler: ExprCompiler, expr: E.Broadcast) -> Eval:
    value = compiler.compile(expr.value)
    lanes = expr.lanes
    return lambda frame, mask: np.repeat(value(frame, mask), lanes, axis=1)


@_RULES.register(E.Shuffle)
def _shuffle(compiler: ExprCompiler, expr: E.Shuffle) -> Eval:
    parts = [compiler.compile(vector) for vector in expr.vectors]
    indices = [index.value for index in expr.indices if isinstance(index, E.IntImm)]
    if len(indices) != len(expr.indices):
        raise Unsupported("shuffle with variable indices")

    def shuffle(frame: Frame, mask: Mask) -> np.ndarray:
        values = np.broadcast_arrays(*[part(frame, mask) for part in parts])
        rows = max(value.shape[0] for value in values)
        joined = np.concatenate([np.broadcast_to(v, (rows, v.shape[1])) for v in values], axis=1)
        return joined[:, indices]

    return shuffle


@_RULES.register(E.Let)
def _let(compiler: ExprCompiler, expr: E.Let) -> Eval:
    value = compiler.compile(expr.value)
    if expr.var.dtype.is_handle:
        raise Unsupported("handle let")
    compiler.known.add(expr.var)
    body = compiler.compile(expr.body)
    var = expr.var

    def let(frame: Frame, mask: Mask) -> np.ndarray:
        frame.values[var] = V.owned(value(frame, mask))
        return body(frame, mask)

    return let


@_RULES.register(E.BufferLoad)
def _load(compiler: ExprCompiler, expr: E.BufferLoad) -> Eval:
    locate = compiler.access(expr.buffer, expr.indices, expr.predicate, expr, "load from")
    dtype = expr.buffer.dtype
    kind, held = access_type(dtype), V.value_type(dtype)
    return lambda frame, mask: load_raw(frame, locate(frame, mask), kind, held, dtype)


for _node, _operator in ARITHMETIC.items():
    _RULES.register(_node)(_arith(_operator.lanes))
for _node in DIVISIONS:
    _RULES.register(_node)(_division)
for _node, _operator in EXTREMA.items():
    _RULES.register(_node)(_extremum(_operator.lanes))
for _node, _operator in COMPARISONS.items():
    _RULES.register(_node)(_compare(_operator.lanes))
_RULES.register(E.And)(_logical(True))
_RULES.register(E.Or)(_logical(False))

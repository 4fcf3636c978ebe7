"""Expressions of a GPU kernel to closures `(frame, mask) -> array` over all lanes at once.

`mask` (None: every lane) says which lanes are executing; only their faults count, and
operands that the scalar interpreter evaluates only conditionally (`if_then_else` branches,
the right side of `and` / `or`) are evaluated under the narrower mask. Anything the lockstep
mode has no exact rule for raises Unsupported at compile time: the kernel then runs in the
thread model instead.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from tirc.interp import lockstep_values as V
from tirc.interp.lockstep_memory import RowMemory, fault_in_lane, first_lane, pick
from tirc.interp.runtime import describe_shape, round_to
from tirc.ir import expr as E
from tirc.ir.buffer import Buffer
from tirc.ir.dtype import DataType
from tirc.ir.expr import PrimExpr, Var
from tirc.ir.integer import int_range

if TYPE_CHECKING:
    from tirc.interp.context import Context
    from tirc.interp.lockstep_stmt import Frame

Mask = np.ndarray | None
Eval = Callable[["Frame", Mask], np.ndarray]

SHUFFLE_INDEX, SHUFFLE_UP, SHUFFLE_DOWN = 0, 1, 2


class Unsupported(Exception):
    """A construct the lockstep mode does not run; the kernel falls back to threads."""


def narrow(mask: Mask, condition: np.ndarray, lanes: int) -> np.ndarray:
    """mask & condition (a (rows, 1) bool value) as an (L,) lane mask."""
    column = np.broadcast_to(condition[:, 0], (lanes,))
    return column.copy() if mask is None else mask & column


class ExprCompiler:
    def __init__(self, ctx: Context, known: set[Var], handles: set[Var]):
        self.ctx = ctx
        self.known = known  # scalar variables defined where the code runs
        self.handles = handles  # data handles with memory

    def compile(self, expr: PrimExpr) -> Eval:
        rule = _RULES.get(type(expr))
        if rule is None:
            raise Unsupported(type(expr).__name__)
        return rule(self, expr)

    def site(self, node: object, what: str, is_access: bool = False) -> int:
        return self.ctx.site(node, what, is_access)  # type: ignore[arg-type]

    # memory access

    def access(
        self,
        buffer: Buffer,
        indices: tuple[PrimExpr, ...],
        predicate: PrimExpr | None,
        node: object,
        verb: str,
    ) -> Callable[[Frame, Mask], tuple[object, np.ndarray, np.ndarray | None, int]]:
        """(memory, element offsets (rows, width), active elements or None, site)."""
        if buffer.data not in self.handles:
            raise Unsupported(f"memory of {buffer.name}")
        if buffer.axis_separators or len(indices) != len(buffer.shape):
            raise Unsupported("indexing")
        site = self.site(node, f"{verb} {buffer.name}{describe_shape(buffer)}", True)
        index_codes = [self.compile(index) for index in indices]
        extents = [self.compile(extent) for extent in buffer.shape]
        if buffer.strides:
            strides = [self.compile(stride) for stride in buffer.strides]
        else:
            strides = _row_major(extents)
        offset_code = self.compile(buffer.elem_offset) if buffer.elem_offset is not None else None
        guard = self.compile(predicate) if predicate is not None else None
        data = buffer.data
        element_lanes = buffer.dtype.lanes

        def locate(frame: Frame, mask: Mask) -> tuple[object, np.ndarray, np.ndarray | None, int]:
            active: np.ndarray | None = None
            if guard is not None:
                active = guard(frame, mask)
                if mask is not None:
                    active = active & np.broadcast_to(mask[:, None], (mask.size, active.shape[1]))
            elif mask is not None:
                active = mask[:, None]
            total: np.ndarray = (
                np.zeros((1, 1), np.int64)
                if offset_code is None
                else offset_code(frame, mask).astype(np.int64, copy=False)
            )
            for dim, (index, extent, stride) in enumerate(
                zip(index_codes, extents, strides, strict=True)
            ):
                value = index(frame, mask).astype(np.int64, copy=False)
                limit = extent(frame, mask).astype(np.int64, copy=False)
                bad = (value < 0) | (value >= limit)
                if bad.any():
                    found = first_lane(bad, frame.lanes, active)
                    if found is not None:
                        lane, column = found
                        message = (
                            f"index {pick(value, lane, column)} is outside "
                            f"[0, {pick(limit, lane, column)}) in dimension {dim}"
                        )
                        raise fault_in_lane(site, message, frame.lanes, lane)
                total = total + value * stride(frame, mask).astype(np.int64, copy=False)
            if element_lanes > 1:
                rows, width = total.shape
                total = (total[:, :, None] * element_lanes + np.arange(element_lanes)).reshape(
                    rows, width * element_lanes
                )
                if active is not None:
                    active = np.repeat(
                        np.broadcast_to(active, (active.shape[0], width)), element_lanes, axis=1
                    )
            return frame.memory[data], total, active, site

        return locate


def _row_major(extents: list[Eval]) -> list[Eval]:
    strides: list[Eval] = []
    later: list[Eval] = []
    for extent in reversed(extents):
        parts = list(later)

        def stride(frame: Frame, mask: Mask, parts: list[Eval] = parts) -> np.ndarray:
            total = np.ones((1, 1), np.int64)
            for part in parts:
                total = total * part(frame, mask).astype(np.int64, copy=False)
            return total

        strides.append(stride)
        later.append(extent)
    return list(reversed(strides))


def load_values(
    frame: Frame, located: tuple[object, np.ndarray, np.ndarray | None, int], dtype: DataType
) -> np.ndarray:
    from tirc.interp.fault import Fault

    memory, offsets, active, site = located
    if active is not None:
        offsets = np.where(active, offsets, 0)
        if not active.any():
            return np.zeros(offsets.shape, dtype=V.value_type(dtype))
    try:
        if isinstance(memory, RowMemory):
            raw = memory.load(dtype, offsets, frame.row_index(memory))
        else:
            raw = memory.load(dtype, offsets, None)  # type: ignore[attr-defined]
    except IndexError:
        raise Fault(site, "memory access out of bounds") from None
    if active is not None:
        raw = np.where(active, raw, np.zeros((), raw.dtype))
    return V.decode(raw, dtype)


def store_values(
    frame: Frame,
    located: tuple[object, np.ndarray, np.ndarray | None, int],
    values: np.ndarray,
    dtype: DataType,
) -> None:
    from tirc.interp.fault import Fault

    memory, offsets, active, site = located
    raw = V.encode(values, dtype)
    if (
        active is None
        and isinstance(memory, RowMemory)
        and not memory.per_block
        and offsets.shape[0] == 1
        and len(set(offsets[0].tolist())) == offsets.shape[1]
    ):
        try:
            memory.store_columns(dtype, offsets[0], raw)
        except IndexError:
            raise Fault(site, "memory access out of bounds") from None
        return
    rows = frame.row_index(memory) if isinstance(memory, RowMemory) else None
    shapes = [offsets, raw] + ([rows] if rows is not None else [])
    if active is not None:
        shapes.append(active)
    shaped = np.broadcast_arrays(*shapes)
    try:
        if active is None:
            offsets_b, raw_b = shaped[0], shaped[1]
            rows_b = shaped[2] if rows is not None else None
        else:
            chosen = shaped[-1]
            if not chosen.any():
                return
            offsets_b, raw_b = shaped[0][chosen], shaped[1][chosen]
            rows_b = shaped[2][chosen] if rows is not None else None
        memory.store(dtype, offsets_b, raw_b, rows_b)  # type: ignore[attr-defined]
    except IndexError:
        raise Fault(site, "memory access out of bounds") from None


# expressions


def _var(compiler: ExprCompiler, expr: PrimExpr) -> Eval:
    assert isinstance(expr, Var)
    if expr not in compiler.known or expr.dtype.is_handle:
        raise Unsupported(f"variable {expr.name}")
    return lambda frame, mask: frame.values[expr]


def _int_imm(compiler: ExprCompiler, expr: PrimExpr) -> Eval:
    assert isinstance(expr, E.IntImm)
    value = V.constant(_wrapped(expr.value, expr.dtype), expr.dtype)
    return lambda frame, mask: value


def _wrapped(number: int, dtype: DataType) -> int | bool:
    if dtype.is_bool:
        return bool(number)
    low, high = int_range(dtype)
    if not low <= number <= high:
        from tirc.ir.integer import wrap

        return wrap(number, dtype)
    return number


def _float_imm(compiler: ExprCompiler, expr: PrimExpr) -> Eval:
    assert isinstance(expr, E.FloatImm)
    value = V.constant(round_to(expr.value, expr.dtype), expr.dtype)
    return lambda frame, mask: value


def _arith(op: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> Callable[..., Eval]:
    def rule(compiler: ExprCompiler, expr: PrimExpr) -> Eval:
        a, b = compiler.compile(expr.a), compiler.compile(expr.b)  # type: ignore[attr-defined]
        dtype: DataType = expr.a.dtype  # type: ignore[attr-defined]
        if dtype.is_float:
            return lambda frame, mask: V.round_to(op(a(frame, mask), b(frame, mask)), dtype)
        if dtype.is_integer:
            return lambda frame, mask: op(a(frame, mask), b(frame, mask))
        raise Unsupported(f"arithmetic on {dtype}")

    return rule


_INT_DIVISION = {
    E.FloorDiv: (V.floordiv, "//"),
    E.FloorMod: (V.floormod, "%"),
    E.Div: (V.truncdiv, "/"),
    E.Mod: (V.truncmod, "%"),
}
_FLOAT_DIVISION = {
    E.FloorDiv: V.ffloordiv,
    E.FloorMod: V.ffloormod,
    E.Div: V.fdiv,
    E.Mod: V.fmod,
}


def _division(compiler: ExprCompiler, expr: PrimExpr) -> Eval:
    a, b = compiler.compile(expr.a), compiler.compile(expr.b)  # type: ignore[attr-defined]
    dtype: DataType = expr.a.dtype  # type: ignore[attr-defined]
    if dtype.is_float:
        function = _FLOAT_DIVISION[type(expr)]
        return lambda frame, mask: V.round_to(function(a(frame, mask), b(frame, mask)), dtype)
    if not dtype.is_integer:
        raise Unsupported(f"division of {dtype}")
    operation, symbol = _INT_DIVISION[type(expr)]
    site = compiler.site(expr, "division")
    return _checked_division(a, b, operation, symbol, site)


def _checked_division(
    a: Eval, b: Eval, operation: Callable[..., np.ndarray], symbol: str, site: int
) -> Eval:
    def divide(frame: Frame, mask: Mask) -> np.ndarray:
        x, y = a(frame, mask), b(frame, mask)
        zero = y == 0
        if zero.any():
            found = first_lane(zero, frame.lanes, mask)
            if found is not None:
                lane, column = found
                message = f"integer division by zero ({pick(x, lane, column)} {symbol} 0)"
                raise fault_in_lane(site, message, frame.lanes, lane)
        return operation(x, y)

    return divide


def _where(symbol: str) -> Callable[..., Eval]:
    compare = np.less if symbol == "<" else np.greater

    def rule(compiler: ExprCompiler, expr: PrimExpr) -> Eval:
        a, b = compiler.compile(expr.a), compiler.compile(expr.b)  # type: ignore[attr-defined]

        def pick(frame: Frame, mask: Mask) -> np.ndarray:
            x, y = a(frame, mask), b(frame, mask)
            return np.where(compare(x, y), x, y)

        return pick

    return rule


def _compare(op: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> Callable[..., Eval]:
    def rule(compiler: ExprCompiler, expr: PrimExpr) -> Eval:
        a, b = compiler.compile(expr.a), compiler.compile(expr.b)  # type: ignore[attr-defined]
        return lambda frame, mask: op(a(frame, mask), b(frame, mask))

    return rule


def _logical(is_and: bool) -> Callable[..., Eval]:
    """Python's `and` / `or` (which the scalar interpreter emits) skip the right operand."""

    def rule(compiler: ExprCompiler, expr: PrimExpr) -> Eval:
        a, b = compiler.compile(expr.a), compiler.compile(expr.b)  # type: ignore[attr-defined]
        vector = expr.dtype.lanes > 1  # type: ignore[attr-defined]

        def evaluate(frame: Frame, mask: Mask) -> np.ndarray:
            x = a(frame, mask)
            if vector:
                y = b(frame, mask)
            else:
                decisive = x if not is_and else ~x
                needed = narrow(mask, ~decisive, frame.lanes.count)
                if not needed.any():
                    return x
                y = b(frame, needed)
            return (x & y) if is_and else (x | y)

        return evaluate

    return rule


def _not(compiler: ExprCompiler, expr: PrimExpr) -> Eval:
    a = compiler.compile(expr.a)  # type: ignore[attr-defined]
    return lambda frame, mask: np.logical_not(a(frame, mask))


def _select(compiler: ExprCompiler, expr: PrimExpr) -> Eval:
    assert isinstance(expr, E.Select)
    c = compiler.compile(expr.condition)
    t = compiler.compile(expr.true_value)
    f = compiler.compile(expr.false_value)
    return lambda frame, mask: np.where(c(frame, mask), t(frame, mask), f(frame, mask))


def _cast(compiler: ExprCompiler, expr: PrimExpr) -> Eval:
    assert isinstance(expr, E.Cast)
    value = compiler.compile(expr.value)
    source: DataType = expr.value.dtype.element  # type: ignore[attr-defined]
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
            x = value(frame, mask)
            bad = ~((x > low - 1) & (x < high + 1))  # NaN compares false: bad
            if bad.any():
                found = first_lane(bad, frame.lanes, mask)
                if found is not None:
                    lane, column = found
                    number = float(pick(x, lane, column))  # type: ignore[arg-type]
                    message = f"cast of {number!r} to {name} is out of range (undefined behaviour)"
                    raise fault_in_lane(site, message, frame.lanes, lane)
                x = np.where(bad, 0.0, x)
            return np.trunc(x).astype(kind)

        return to_int
    if not target.is_float:
        raise Unsupported(f"cast to {target}")
    return lambda frame, mask: V.round_to(value(frame, mask).astype(np.float64), target)


def _ramp(compiler: ExprCompiler, expr: PrimExpr) -> Eval:
    assert isinstance(expr, E.Ramp)
    base, stride = compiler.compile(expr.base), compiler.compile(expr.stride)
    dtype = expr.dtype.element
    steps = np.arange(expr.lanes, dtype=V.value_type(dtype))[None, :]
    if dtype.is_float:
        return lambda frame, mask: V.round_to(
            base(frame, mask) + stride(frame, mask) * steps, dtype
        )
    return lambda frame, mask: base(frame, mask) + stride(frame, mask) * steps


def _broadcast(compiler: ExprCompiler, expr: PrimExpr) -> Eval:
    assert isinstance(expr, E.Broadcast)
    value = compiler.compile(expr.value)
    lanes = expr.lanes
    return lambda frame, mask: np.repeat(value(frame, mask), lanes, axis=1)


def _shuffle(compiler: ExprCompiler, expr: PrimExpr) -> Eval:
    assert isinstance(expr, E.Shuffle)
    parts = [compiler.compile(vector) for vector in expr.vectors]
    if not all(isinstance(index, E.IntImm) for index in expr.indices):
        raise Unsupported("shuffle with variable indices")
    indices = [index.value for index in expr.indices]  # type: ignore[attr-defined]

    def shuffle(frame: Frame, mask: Mask) -> np.ndarray:
        values = np.broadcast_arrays(*[part(frame, mask) for part in parts])
        rows = max(value.shape[0] for value in values)
        joined = np.concatenate([np.broadcast_to(v, (rows, v.shape[1])) for v in values], axis=1)
        return joined[:, indices]

    return shuffle


def _let(compiler: ExprCompiler, expr: PrimExpr) -> Eval:
    assert isinstance(expr, E.Let)
    value = compiler.compile(expr.value)
    if expr.var.dtype.is_handle:
        raise Unsupported("handle let")
    compiler.known.add(expr.var)
    body = compiler.compile(expr.body)
    var = expr.var

    def let(frame: Frame, mask: Mask) -> np.ndarray:
        frame.values[var] = value(frame, mask)
        return body(frame, mask)

    return let


def _load(compiler: ExprCompiler, expr: PrimExpr) -> Eval:
    assert isinstance(expr, E.BufferLoad)
    locate = compiler.access(expr.buffer, expr.indices, expr.predicate, expr, "load from")
    dtype = expr.buffer.dtype
    return lambda frame, mask: load_values(frame, locate(frame, mask), dtype)


def _call(compiler: ExprCompiler, expr: PrimExpr) -> Eval:
    assert isinstance(expr, E.Call)
    from tirc.interp.lockstep_calls import compile_call

    return compile_call(compiler, expr)


_RULES: dict[type, Callable[[ExprCompiler, PrimExpr], Eval]] = {
    Var: _var,
    E.IntImm: _int_imm,
    E.FloatImm: _float_imm,
    E.Add: _arith(np.add),
    E.Sub: _arith(np.subtract),
    E.Mul: _arith(np.multiply),
    E.Div: _division,
    E.Mod: _division,
    E.FloorDiv: _division,
    E.FloorMod: _division,
    E.Min: _where("<"),
    E.Max: _where(">"),
    E.EQ: _compare(np.equal),
    E.NE: _compare(np.not_equal),
    E.LT: _compare(np.less),
    E.LE: _compare(np.less_equal),
    E.GT: _compare(np.greater),
    E.GE: _compare(np.greater_equal),
    E.And: _logical(True),
    E.Or: _logical(False),
    E.Not: _not,
    E.Select: _select,
    E.Cast: _cast,
    E.Ramp: _ramp,
    E.Broadcast: _broadcast,
    E.Shuffle: _shuffle,
    E.Let: _let,
    E.BufferLoad: _load,
    E.Call: _call,
}

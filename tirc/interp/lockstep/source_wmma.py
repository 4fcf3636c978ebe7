"""EXPERIMENT (issue 20, H3): the wmma intrinsics in the lane source (see source). The
semantics and the run-time tiles are lockstep.wmma's (Tiles); what changes is that operands
are generated code (a memory's name and each lane's first element) instead of closures."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from tirc.interp.lockstep.expr import Unsupported
from tirc.interp.lockstep.wmma import Operand, Tiles, _builtin, _constant, _layout
from tirc.interp.memory.lanes import Frame
from tirc.interp.semantics import values as V
from tirc.interp.semantics.wmma import MMA_SHAPE, fragment_shape, multiply_accumulate, tile
from tirc.interp.threads import wmma
from tirc.interp.threads.context import Code
from tirc.ir.dtype import parse_dtype
from tirc.ir.expr import BufferLoad, Call, PrimExpr, Var

if TYPE_CHECKING:
    from tirc.interp.lockstep.source import LaneCallCompiler

Mask = np.ndarray | None


def _place(
    tiles: Tiles, frame: Frame, mask: Mask, memory: object, start: object, where: object,
    step: object,
) -> tuple:
    first = np.asarray(start, np.int64).reshape(-1, 1)
    by = step if isinstance(step, int) else np.asarray(step, np.int64).reshape(-1, 1)
    if isinstance(where, tuple):
        major, minor = where
        offsets = first + major[None, :] * by + minor[None, :]
    else:
        offsets = first + by * where.size + where[None, :]
    tiles.check(frame, mask, memory, offsets)  # type: ignore[arg-type]  # experiment
    return memory, offsets


def _fill(tiles: Tiles, positions: np.ndarray):  # type: ignore[no-untyped-def]  # experiment
    size = positions.size

    def fill(frame, mask, memory, index, value):  # type: ignore[no-untyped-def]  # experiment
        place = _place(tiles, frame, mask, memory, 0, positions, index)
        fills = np.asarray(value).reshape(-1, 1) if np.ndim(value) < 2 else value
        if fills.dtype.kind == "f":
            fills = V.wide(fills)
        tiles.write(frame, mask, place, np.broadcast_to(fills, (fills.shape[0], size)))

    return fill


def _transfer(source: tuple, target: tuple):  # type: ignore[no-untyped-def]  # experiment
    (source_tiles, source_tile), (target_tiles, target_tile) = source, target

    def transfer(frame, mask, source_at, target_at):  # type: ignore[no-untyped-def]  # experiment
        place = _place(source_tiles, frame, mask, *source_at[:2], source_tile, source_at[2])
        values = source_tiles.read(frame, mask, place)
        target_place = _place(target_tiles, frame, mask, *target_at[:2], target_tile, target_at[2])
        target_tiles.write(frame, mask, target_place, values)

    return transfer


def _mma(d: Tiles, a: Tiles, b: Tiles, c: Tiles):  # type: ignore[no-untyped-def]  # experiment
    m, n, k = MMA_SHAPE

    def mma(frame, mask, d_at, a_at, b_at, c_at):  # type: ignore[no-untyped-def]  # experiment
        left = a.read(frame, mask, _place(a, frame, mask, a_at[0], 0, np.arange(m * k), a_at[1]))
        right = b.read(frame, mask, _place(b, frame, mask, b_at[0], 0, np.arange(k * n), b_at[1]))
        accumulator = c.read(
            frame, mask, _place(c, frame, mask, c_at[0], 0, np.arange(m * n), c_at[1])
        )
        place = _place(d, frame, mask, d_at[0], 0, np.arange(m * n), d_at[1])
        d.write(frame, mask, place, multiply_accumulate(left, right, accumulator))

    return mma


def _fragment(calls: LaneCallCompiler, arg: object, op: str) -> tuple[Operand, str]:
    """A fragment argument (a buffer's data in a wmma scope): its operand and memory name."""
    memory = calls.exprs.lane.memories.get(arg) if isinstance(arg, Var) else None
    if memory is None or not isinstance(arg, Var):
        raise Unsupported(f"a fragment of T.{op} that is not a buffer's data")
    pointer = arg.pointer
    if pointer is None or not pointer.scope.startswith("wmma."):
        raise Unsupported(f"a fragment of T.{op} outside the wmma scopes")
    if pointer.element.lanes != 1 or not (pointer.element.is_float or pointer.element.is_integer):
        raise Unsupported(f"a fragment of {pointer.element}")
    return Operand(None, pointer.element, arg.name, pointer.scope), memory  # type: ignore[arg-type]  # experiment


def _pointer(calls: LaneCallCompiler, arg: object, op: str) -> tuple[Operand, str, str]:
    """A pointer argument: (operand, memory name, first element text)."""
    exprs = calls.exprs
    if isinstance(arg, Call) and arg.op == "tvm_access_ptr":
        kind_arg, data, offset_arg = arg.args[0], arg.args[1], arg.args[2]
        dtype = kind_arg.dtype if isinstance(kind_arg, Call) else parse_dtype("float32")
        memory = exprs.lane.memories.get(data) if isinstance(data, Var) else None
        if memory is None or not isinstance(data, Var):
            raise Unsupported(f"a pointer of T.{op} into computed memory")
        if not isinstance(offset_arg, PrimExpr):
            raise Unsupported(f"a pointer offset of T.{op}")
        scope = data.pointer.scope if data.pointer is not None else "global"
        start = exprs.compile(offset_arg).text
        return Operand(None, dtype.element, data.name, scope), memory, start  # type: ignore[arg-type]  # experiment
    if isinstance(arg, Call) and arg.op == "address_of" and isinstance(arg.args[0], BufferLoad):
        load = arg.args[0]
        buffer = load.buffer
        if buffer.dtype.lanes != 1:
            raise Unsupported("the address of a vector element")
        memory, offset, _ = exprs.access.lane_offset(buffer, load.indices, load, "address of")
        operand = Operand(None, buffer.dtype.element, buffer.name, buffer.scope)  # type: ignore[arg-type]  # experiment
        return operand, memory, offset
    raise Unsupported(f"a pointer argument of T.{op}")


def _integer(calls: LaneCallCompiler, arg: object, op: str) -> str:
    if not isinstance(arg, PrimExpr):
        raise Unsupported(f"an argument of T.{op}")
    return calls.exprs.compile(arg).text


def compile_wmma(calls: LaneCallCompiler, call: Call) -> Code:
    op, name, site = call.op, calls.exprs.name, calls.ctx.site(call, call.op)
    if op == "tvm_fill_fragment":
        _builtin(call, wmma.fill_fragment)
        fragment, m, n, _, index_arg, value_arg = call.args
        size = _constant(m, op) * _constant(n, op)
        operand, memory = _fragment(calls, fragment, op)
        if not isinstance(value_arg, PrimExpr):
            raise Unsupported(f"a value of T.{op}")
        tiles = Tiles(operand, site, "T.tvm_fill_fragment writes")
        fill = name(_fill(tiles, np.arange(size, dtype=np.int64)), "fill")
        index, value = _integer(calls, index_arg, op), calls.exprs.compile(value_arg).text
        return Code(f"{fill}(_frame, _mask, {memory}, {index}, {value})")
    if op in ("tvm_load_matrix_sync", "tvm_store_matrix_sync"):
        load = op == "tvm_load_matrix_sync"
        _builtin(call, wmma.load_matrix_sync if load else wmma.store_matrix_sync)
        fragment_arg, m_arg, n_arg, k_arg, index_arg, pointer, stride_arg, layout = call.args
        verbs = ("writes", "reads") if load else ("reads", "writes")
        fragment, fragment_memory = _fragment(calls, fragment_arg, op)
        memory_operand, memory, start = _pointer(calls, pointer, op)
        rows, cols = _constant(m_arg, op), _constant(n_arg, op)
        if load:
            rows, cols = fragment_shape(fragment.scope, rows, cols, _constant(k_arg, op))
        in_memory = (Tiles(memory_operand, site, f"T.{op} {verbs[1]}"),
                     tile(rows, cols, _layout(layout, op)))
        in_fragment = (Tiles(fragment, site, f"T.{op} {verbs[0]}"),
                       np.arange(rows * cols, dtype=np.int64))
        memory_at = f"({memory}, {start}, {_integer(calls, stride_arg, op)})"
        fragment_at = f"({fragment_memory}, 0, {_integer(calls, index_arg, op)})"
        if load:
            transfer = name(_transfer(in_memory, in_fragment), "load_matrix")
            return Code(f"{transfer}(_frame, _mask, {memory_at}, {fragment_at})")
        transfer = name(_transfer(in_fragment, in_memory), "store_matrix")
        return Code(f"{transfer}(_frame, _mask, {fragment_at}, {memory_at})")
    if op == "tvm_mma_sync":
        _builtin(call, wmma.mma_sync)
        tiles, places = [], []
        for number, part in enumerate("DABC"):
            fragment, index_arg = call.args[2 * number], call.args[2 * number + 1]
            operand, memory = _fragment(calls, fragment, op)
            verb = "T.tvm_mma_sync writes" if part == "D" else "T.tvm_mma_sync reads"
            tiles.append(Tiles(operand, site, verb))
            places.append(f"({memory}, {_integer(calls, index_arg, op)})")
        mma = name(_mma(*tiles), "mma")
        return Code(f"{mma}(_frame, _mask, {', '.join(places)})")
    raise Unsupported(f"T.{op}")


WMMA_CALLS: dict[str, Callable[..., Code]] = dict.fromkeys(
    ("tvm_fill_fragment", "tvm_load_matrix_sync", "tvm_store_matrix_sync", "tvm_mma_sync"),
    compile_wmma,
)

"""The wmma intrinsics (tensor-core fragments) in lockstep kernels.

The semantics of semantics.wmma, as the thread model (threads.wmma) has them: a fragment is
each thread's own memory (scope wmma.matrix_a / wmma.matrix_b / wmma.accumulator, a
LaneMemory here), and every thread computes the whole fragment. Batched over the executing
lanes:

    T.tvm_load_matrix_sync(F.data, 16, 16, 16, i, T.tvm_access_ptr(t, S.data, off, n, 1), 16, L)
    -> each lane gathers its (rows, cols) tile of S at off + r * stride + c (col_major:
       c * stride + r), as float64, and writes it to elements i * rows * cols + ... of its F

    T.tvm_mma_sync(D.data, d, A.data, a, B.data, b, C.data, c)
    -> D[d] = A[a] @ B[b] + C[c] over (lanes, m, k) x (lanes, k, n) in float64, then stored
       as D's dtype (float32 rounds once; integers are exact)

Only the built-in implementations have a lane rule (one registered in their place makes
the kernel run in the thread model), and pointer arguments only as `T.tvm_access_ptr` or
`T.address_of` in these calls' pointer positions. A tile outside its memory is a located
fault naming the thread.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from tirc.analysis.wmma_fragments import operand_shape
from tirc.interp.lockstep.expr import CALLS, LANE_ONLY, LaneExprCompiler, Mask, Unsupported
from tirc.interp.memory.lanes import (
    FlatMemory,
    Frame,
    Memory,
    fault_first,
    load_raw,
    pick,
    store_raw,
)
from tirc.interp.memory.storage import access_type
from tirc.interp.semantics import values as V
from tirc.interp.semantics import wmma as fragments
from tirc.interp.semantics.extensions import INTRINSICS
from tirc.interp.threads import wmma
from tirc.interp.threads.call import pointer_element
from tirc.interp.threads.context import Code
from tirc.interp.threads.wmma_calls import mma_shape_in
from tirc.ir.dtype import DataType
from tirc.ir.expr import BufferLoad, Call, IntImm, PrimExpr, StringImm, Var

# (memory, each lane's element offsets (rows, tile) into memory's view of the dtype)
Place = tuple[Memory, np.ndarray]


@dataclass(frozen=True)
class Operand:
    """What a call reads or writes: a fragment, or memory a pointer argument points into,
    seen as elements of `dtype`."""

    dtype: DataType
    name: str
    scope: str


class Tiles:
    """Gathers and scatters of per-lane tiles through one operand, bounds-checked."""

    def __init__(self, operand: Operand, site: int, verb: str):
        self.operand = operand
        self.site = site
        self.verb = verb
        self.kind = access_type(operand.dtype)
        self.held = V.value_type(operand.dtype)

    def locate(
        self,
        frame: Frame,
        mask: Mask,
        at: tuple[Memory, object, object],
        tile: np.ndarray | tuple[np.ndarray, np.ndarray],
    ) -> Place:
        """Each lane's elements start + step * major + minor for a (major, minor) tile, or
        start + step * tile_size + tile for a fragment's (T,) positions (step: its index);
        at is (memory, start, step), start and step an int or each lane's."""
        memory, first, step = at
        start = np.asarray(first, np.int64).reshape(-1, 1)
        by = np.asarray(step, np.int64).reshape(-1, 1)
        if isinstance(tile, tuple):
            major, minor = tile
            offsets = start + major[None, :] * by + minor[None, :]
        else:
            offsets = start + by * tile.size + tile[None, :]
        self.check(frame, mask, memory, offsets)
        return memory, offsets

    def check(self, frame: Frame, mask: Mask, memory: Memory, offsets: np.ndarray) -> None:
        limit = _capacity(memory, self.kind.itemsize)
        if int(offsets.min(initial=0)) >= 0 and int(offsets.max(initial=-1)) < limit:
            return

        def message(lane: int, column: int) -> str:
            element = int(pick(offsets, lane, column))
            return fragments.outside_tile(self.verb, self.operand.name, element, limit)

        fault_first((offsets < 0) | (offsets >= limit), frame, mask, self.site, message)

    def read(self, frame: Frame, mask: Mask, place: Place) -> np.ndarray:
        """The elements as float64 (as the thread model computes with them)."""
        values = load_raw(
            frame, (*place, mask, self.site), self.kind, self.held, self.operand.dtype
        )
        return values.astype(np.float64, copy=False)

    def write(self, frame: Frame, mask: Mask, place: Place, values: np.ndarray) -> None:
        """Stores values for the executing lanes, converted as the thread model's stores
        convert them (semantics.wmma.to_memory)."""
        raw = self.encode(frame, mask, values)
        store_raw(frame, (*place, mask, self.site), raw, self.kind, self.operand.dtype)

    def encode(self, frame: Frame, mask: Mask, values: np.ndarray) -> np.ndarray:
        dtype = self.operand.dtype
        raw, bad = fragments.to_memory(values, dtype)

        def message(lane: int, column: int) -> str:
            value = pick(values, lane, column)
            return fragments.does_not_fit(self.verb, self.operand.name, value, dtype)

        if bad is not None:
            fault_first(bad, frame, mask, self.site, message)
        return raw


def _capacity(memory: Memory, itemsize: int) -> int:
    """The number of elements of itemsize bytes from the memory's base element on."""
    total = memory.storage.array.nbytes if isinstance(memory, FlatMemory) else memory.data.shape[1]
    return total // itemsize - memory.byte_offset // itemsize


def _builtin(call: Call, function: Callable[..., object]) -> None:
    """Only the built-in implementation has this rule; a replacement runs in the threads."""
    if INTRINSICS.get(call.op) is not function:
        raise Unsupported(f"a replaced T.{call.op}")


def _constant(arg: object, op: str) -> int:
    if not isinstance(arg, IntImm):
        raise Unsupported(f"a shape of T.{op} that is not a constant")
    return int(arg.value)


def _layout(arg: object, op: str) -> bool:
    """Whether the layout is row-major (anything else reads as column-major, as in wmma.py)."""
    if not isinstance(arg, StringImm):
        raise Unsupported(f"a layout of T.{op} that is not a string")
    return arg.value == "row_major"


def _fragment(compiler: LaneExprCompiler, arg: object, op: str) -> tuple[Operand, str]:
    """A fragment argument (a buffer's data in a wmma scope): its operand and memory."""
    memory = compiler.lane.memories.get(arg) if isinstance(arg, Var) else None
    if memory is None or not isinstance(arg, Var):
        raise Unsupported(f"a fragment of T.{op} that is not a buffer's data")
    pointer = arg.pointer
    if pointer is None or not pointer.scope.startswith("wmma."):
        raise Unsupported(f"a fragment of T.{op} outside the wmma scopes")
    if pointer.element.lanes != 1 or not (pointer.element.is_float or pointer.element.is_integer):
        raise Unsupported(f"a fragment of {pointer.element}")
    return Operand(pointer.element, arg.name, pointer.scope), memory


def _pointer(compiler: LaneExprCompiler, arg: object, op: str) -> tuple[Operand, str]:
    """A pointer argument: T.tvm_access_ptr(T.type_annotation(t), data, offset, extent, rw)
    (offset in elements of t) or T.address_of(buffer[indices]); (operand, "memory, start")."""
    if isinstance(arg, Call) and arg.op == "tvm_access_ptr":
        data, offset = arg.args[1], arg.args[2]
        memory = compiler.lane.memories.get(data) if isinstance(data, Var) else None
        if memory is None or not isinstance(data, Var):
            raise Unsupported(f"a pointer of T.{op} into computed memory")
        if not isinstance(offset, PrimExpr):
            raise Unsupported(f"a pointer offset of T.{op}")
        scope = data.pointer.scope if data.pointer is not None else "global"
        start = compiler.compile(offset).text
        return Operand(pointer_element(arg).element, data.name, scope), f"{memory}, {start}"
    if isinstance(arg, Call) and arg.op == "address_of" and isinstance(arg.args[0], BufferLoad):
        load = arg.args[0]
        buffer = load.buffer
        if buffer.dtype.lanes != 1:
            raise Unsupported("the address of a vector element")
        place = compiler.place(buffer, load.indices, None, load, "address of")
        operand = Operand(buffer.dtype.element, buffer.name, buffer.scope)
        return operand, f"*{place}[:2]"
    raise Unsupported(f"a pointer argument of T.{op}")


def _integer(compiler: LaneExprCompiler, arg: object, op: str) -> str:
    if not isinstance(arg, PrimExpr):
        raise Unsupported(f"an argument of T.{op}")
    return compiler.compile(arg).text


# the calls: run-time functions, and the rules that emit their calls


def _fill_with(target: Tiles, size: int) -> Callable[..., None]:
    positions = np.arange(size, dtype=np.int64)

    def fill(frame: Frame, mask: Mask, at: tuple[Memory, int, object], value: object) -> None:
        place = target.locate(frame, mask, at, positions)
        fills = np.asarray(value).reshape(-1, 1)
        if fills.dtype.kind == "f":
            fills = V.wide(fills)
        target.write(frame, mask, place, np.broadcast_to(fills, (fills.shape[0], size)))

    return fill


def _fill(compiler: LaneExprCompiler, call: Call) -> Code:
    """tvm_fill_fragment(F, m, n, k, index, value): the m * n elements of fragment index."""
    _builtin(call, wmma.fill_fragment)
    fragment, m, n, _, index, value = call.args
    size = _constant(m, call.op) * _constant(n, call.op)
    operand, memory = _fragment(compiler, fragment, call.op)
    if not isinstance(value, PrimExpr):
        raise Unsupported(f"a value of T.{call.op}")
    site = compiler.ctx.site(call, call.op)
    fill = compiler.name(_fill_with(Tiles(operand, site, f"T.{call.op} writes"), size), "fill")
    at = f"({memory}, 0, {_integer(compiler, index, call.op)})"
    return Code(f"{fill}(_frame, _mask, {at}, {compiler.compile(value).text})")


TileShape = np.ndarray | tuple[np.ndarray, np.ndarray]


def _transfer_between(
    source: Tiles, source_tile: TileShape, target: Tiles, target_tile: TileShape
) -> Callable[..., None]:
    def transfer(frame: Frame, mask: Mask, source_at: tuple, target_at: tuple) -> None:
        values = source.read(frame, mask, source.locate(frame, mask, source_at, source_tile))
        place = target.locate(frame, mask, target_at, target_tile)
        target.write(frame, mask, place, values)

    return transfer


def _matrix_sync(load: bool) -> Callable[[LaneExprCompiler, Call], Code]:
    """tvm_load_matrix_sync / tvm_store_matrix_sync(F, m, n, k, index, pointer, stride,
    layout): a tile from memory into fragment index of F (of F's shape: m x k for matrix_a,
    k x n for matrix_b, else m x n), or an m x n tile from the fragment into memory."""

    def rule(compiler: LaneExprCompiler, call: Call) -> Code:
        _builtin(call, wmma.load_matrix_sync if load else wmma.store_matrix_sync)
        fragment_arg, m_arg, n_arg, k_arg, index, pointer, stride, layout = call.args
        site = compiler.ctx.site(call, call.op)
        verbs = ("writes", "reads") if load else ("reads", "writes")
        fragment, fragment_memory = _fragment(compiler, fragment_arg, call.op)
        memory, memory_start = _pointer(compiler, pointer, call.op)
        rows, cols = _constant(m_arg, call.op), _constant(n_arg, call.op)
        if load:
            rows, cols = operand_shape(fragment.scope, rows, cols, _constant(k_arg, call.op))
        in_memory = (
            Tiles(memory, site, f"T.{call.op} {verbs[1]}"),
            fragments.tile(rows, cols, _layout(layout, call.op)),
            f"({memory_start}, {_integer(compiler, stride, call.op)})",
        )
        in_fragment = (
            Tiles(fragment, site, f"T.{call.op} {verbs[0]}"),
            np.arange(rows * cols, dtype=np.int64),
            f"({fragment_memory}, 0, {_integer(compiler, index, call.op)})",
        )
        source, target = (in_memory, in_fragment) if load else (in_fragment, in_memory)
        transfer = _transfer_between(source[0], source[1], target[0], target[1])
        name = compiler.name(transfer, "load_matrix" if load else "store_matrix")
        return Code(f"{name}(_frame, _mask, {source[2]}, {target[2]})")

    return rule


def _mma_of(
    shape: tuple[int, int, int], d: Tiles, a: Tiles, b: Tiles, c: Tiles
) -> Callable[..., None]:
    m, n, k = shape

    def mma(frame: Frame, mask: Mask, *places: tuple[Memory, int, object]) -> None:
        d_at, a_at, b_at, c_at = places
        left = a.read(frame, mask, a.locate(frame, mask, a_at, np.arange(m * k)))
        right = b.read(frame, mask, b.locate(frame, mask, b_at, np.arange(k * n)))
        accumulator = c.read(frame, mask, c.locate(frame, mask, c_at, np.arange(m * n)))
        place = d.locate(frame, mask, d_at, np.arange(m * n))
        d.write(frame, mask, place, fragments.multiply_accumulate(left, right, accumulator, shape))

    return mma


def _mma(compiler: LaneExprCompiler, call: Call) -> Code:
    """tvm_mma_sync(D, d, A, a, B, b, C, c): D[d] = A[a] @ B[b] + C[c] in float64, with the
    thread model's shape (D's fragment shape, threads.wmma_calls.mma_shape_in)."""
    _builtin(call, wmma.mma_sync)
    shape = mma_shape_in(compiler.ctx, call)
    site = compiler.ctx.site(call, call.op)
    tiles, places = [], []
    for number, name in enumerate("DABC"):
        fragment, index = call.args[2 * number], call.args[2 * number + 1]
        operand, memory = _fragment(compiler, fragment, call.op)
        verb = "T.tvm_mma_sync writes" if name == "D" else "T.tvm_mma_sync reads"
        tiles.append(Tiles(operand, site, verb))
        places.append(f"({memory}, 0, {_integer(compiler, index, call.op)})")
    mma = compiler.name(_mma_of(shape, *tiles), "mma")
    return Code(f"{mma}(_frame, _mask, {', '.join(places)})")


RULES: dict[str, Callable[[LaneExprCompiler, Call], Code]] = {
    "tvm_fill_fragment": _fill,
    "tvm_load_matrix_sync": _matrix_sync(load=True),
    "tvm_store_matrix_sync": _matrix_sync(load=False),
    "tvm_mma_sync": _mma,
}
CALLS.update(RULES)
LANE_ONLY.update(RULES)

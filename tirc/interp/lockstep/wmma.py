"""The wmma intrinsics (tensor-core fragments) in the lockstep GPU mode.

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

Only the built-in implementations have a lockstep rule (one registered in their place makes
the kernel run in the thread model), and pointer arguments only as `T.tvm_access_ptr` or
`T.address_of` in these calls' pointer positions. A tile outside its memory is a located
fault naming the thread.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from tirc.interp.lockstep.expr import (
    Eval,
    ExprCompiler,
    Mask,
    Unsupported,
    load_raw,
    store_raw,
)
from tirc.interp.memory.lanes import (
    FlatMemory,
    Frame,
    Memory,
    RowMemory,
    fault_in_lane,
    first_lane,
)
from tirc.interp.memory.storage import access_type
from tirc.interp.semantics import values as V
from tirc.interp.semantics.extensions import INTRINSICS
from tirc.interp.semantics.wmma import MMA_SHAPE, fragment_shape, multiply_accumulate, tile
from tirc.interp.threads import wmma
from tirc.ir.dtype import DataType, parse_dtype
from tirc.ir.expr import BufferLoad, Call, IntImm, PrimExpr, StringImm, Var
from tirc.ir.integer import int_range

# (memory, each lane's element offsets (rows, tile) into memory's view of the dtype)
Place = tuple[Memory, np.ndarray]

_NOTHING = np.zeros((1, 1), np.int32)


@dataclass(frozen=True)
class Operand:
    """Where a call reads or writes: a fragment, or the memory a pointer argument points into.

    `start` gives each lane's first element (an (rows, 1) int64 column); `dtype` is the element
    type the memory is seen as."""

    start: Callable[[Frame, Mask], tuple[Memory, np.ndarray]]
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
        tile: np.ndarray | tuple[np.ndarray, np.ndarray],
        step: Eval | int,
    ) -> Place:
        """Each lane's elements start + step * major + minor for a (major, minor) tile, or
        start + step * tile_size + tile for a fragment's (T,) positions (step: its index)."""
        memory, start = self.operand.start(frame, mask)
        by = step if isinstance(step, int) else step(frame, mask)
        if isinstance(tile, tuple):
            major, minor = tile
            offsets = start + major[None, :] * by + minor[None, :]
        else:
            offsets = start + by * tile.size + tile[None, :]
        self.check(frame, mask, memory, offsets)
        return memory, offsets

    def check(self, frame: Frame, mask: Mask, memory: Memory, offsets: np.ndarray) -> None:
        limit = _capacity(memory, self.kind.itemsize)
        low, high = int(offsets.min(initial=0)), int(offsets.max(initial=-1))
        if low >= 0 and high < limit:
            return
        bad = (offsets < 0) | (offsets >= limit)
        found = first_lane(bad, frame.lanes, mask)
        if found is None:
            return
        lane, column = found
        element = int(offsets[lane if offsets.shape[0] > 1 else 0, column])
        message = (
            f"{self.verb} {self.operand.name} at element {element}, "
            f"outside [0, {limit}) (memory access out of bounds)"
        )
        raise fault_in_lane(self.site, message, frame.lanes, lane)

    def read(self, frame: Frame, mask: Mask, place: Place) -> np.ndarray:
        """The elements as float64 (as the thread model computes with them)."""
        memory, offsets = place
        active = None if mask is None else mask[:, None]
        located = (memory, offsets, active, self.site)
        values = load_raw(frame, located, self.kind, self.held, self.operand.dtype)
        return values.astype(np.float64, copy=False)

    def write(self, frame: Frame, mask: Mask, place: Place, values: np.ndarray) -> None:
        """Stores float64 values for the executing lanes, converted as the thread model's
        `float(value)` / `int(value)` stores do."""
        memory, offsets = place
        raw = self.encode(frame, mask, values)
        active = None if mask is None else mask[:, None]
        store_raw(frame, (memory, offsets, active, self.site), raw, self.kind)

    def encode(self, frame: Frame, mask: Mask, values: np.ndarray) -> np.ndarray:
        dtype = self.operand.dtype
        if dtype.is_float:
            return V.encode(values.astype(np.float64, copy=False), dtype)
        low, high = int_range(dtype)
        if values.dtype.kind == "f":
            bad = ~((values > low - 1) & (values < high + 1))  # NaN compares false: bad
            whole = np.trunc(np.where(bad, 0.0, values))
        else:
            bad = (values < low) | (values > high)
            whole = values
        if bad.any():
            found = first_lane(bad, frame.lanes, mask)
            if found is not None:
                lane, column = found
                number = values[lane if values.shape[0] > 1 else 0, column].item()
                message = f"{self.verb} {self.operand.name}: {number!r} does not fit {dtype}"
                raise fault_in_lane(self.site, message, frame.lanes, lane)
        return whole.astype(self.kind)


def _capacity(memory: Memory, itemsize: int) -> int:
    """The number of elements of itemsize bytes from the memory's base element on."""
    if isinstance(memory, FlatMemory):
        total = memory.storage.array.nbytes
    elif isinstance(memory, RowMemory):
        total = memory.data.shape[1]
    else:
        total = memory.nbytes
    return total // itemsize - memory.byte_offset // itemsize


# operands


def _fragment(compiler: ExprCompiler, arg: object, op: str) -> Operand:
    """A fragment argument: the data of a buffer in a wmma scope."""
    if not isinstance(arg, Var) or arg not in compiler.handles:
        raise Unsupported(f"a fragment of T.{op} that is not a buffer's data")
    pointer = arg.pointer
    if pointer is None or not pointer.scope.startswith("wmma."):
        raise Unsupported(f"a fragment of T.{op} outside the wmma scopes")
    if pointer.element.lanes != 1 or not (pointer.element.is_float or pointer.element.is_integer):
        raise Unsupported(f"a fragment of {pointer.element}")
    zero = np.zeros((1, 1), np.int64)

    def start(frame: Frame, mask: Mask) -> tuple[Memory, np.ndarray]:
        return frame.memory[arg], zero

    return Operand(start, pointer.element, arg.name, pointer.scope)


def _pointer(compiler: ExprCompiler, arg: object, op: str) -> Operand:
    """A pointer argument: T.tvm_access_ptr(T.type_annotation(t), data, offset, extent, rw)
    (offset in elements of t) or T.address_of(buffer[indices])."""
    if isinstance(arg, Call) and arg.op == "tvm_access_ptr":
        kind_arg, data, offset_arg = arg.args[0], arg.args[1], arg.args[2]
        dtype = kind_arg.dtype if isinstance(kind_arg, Call) else parse_dtype("float32")
        if not isinstance(data, Var) or data not in compiler.handles:
            raise Unsupported(f"a pointer of T.{op} into computed memory")
        if not isinstance(offset_arg, PrimExpr):
            raise Unsupported(f"a pointer offset of T.{op}")
        offset = compiler.compile(offset_arg)

        def access_start(frame: Frame, mask: Mask) -> tuple[Memory, np.ndarray]:
            return frame.memory[data], offset(frame, mask).astype(np.int64)

        return Operand(access_start, dtype.element, data.name, _scope(data))
    if isinstance(arg, Call) and arg.op == "address_of" and isinstance(arg.args[0], BufferLoad):
        load = arg.args[0]
        buffer = load.buffer
        if buffer.dtype.lanes != 1:
            raise Unsupported("the address of a vector element")
        locate = compiler.access(buffer, load.indices, None, load, "address of")

        def address_start(frame: Frame, mask: Mask) -> tuple[Memory, np.ndarray]:
            memory, offsets, _, _ = locate(frame, mask)
            if isinstance(offsets, int):
                return memory, np.full((1, 1), offsets, np.int64)
            return memory, offsets.astype(np.int64)

        return Operand(address_start, buffer.dtype.element, buffer.name, buffer.scope)
    raise Unsupported(f"a pointer argument of T.{op}")


def _scope(data: Var) -> str:
    return data.pointer.scope if data.pointer is not None else "global"


def _constant(arg: object, op: str) -> int:
    if not isinstance(arg, IntImm):
        raise Unsupported(f"a shape of T.{op} that is not a constant")
    return int(arg.value)


def _layout(arg: object, op: str) -> bool:
    """Whether the layout is row-major (anything else reads as column-major, as in wmma.py)."""
    if not isinstance(arg, StringImm):
        raise Unsupported(f"a layout of T.{op} that is not a string")
    return arg.value == "row_major"


def _integer(compiler: ExprCompiler, arg: object, op: str) -> Eval:
    if not isinstance(arg, PrimExpr):
        raise Unsupported(f"an argument of T.{op}")
    code = compiler.compile(arg)
    return lambda frame, mask: code(frame, mask).astype(np.int64)


def _builtin(call: Call, function: Callable[..., object]) -> None:
    """Only the built-in implementation has this rule; a replacement runs in the threads."""
    if INTRINSICS.get(call.op) is not function:
        raise Unsupported(f"a replaced T.{call.op}")


# the calls


def _fill(compiler: ExprCompiler, call: Call) -> Eval:
    """tvm_fill_fragment(F, m, n, k, index, value): the m * n elements of fragment index."""
    _builtin(call, wmma.fill_fragment)
    fragment, m, n, _, index_arg, value_arg = call.args
    size = _constant(m, call.op) * _constant(n, call.op)
    index = _integer(compiler, index_arg, call.op)
    if not isinstance(value_arg, PrimExpr):
        raise Unsupported(f"a value of T.{call.op}")
    value = compiler.compile(value_arg)
    site = compiler.site(call, call.op)
    target = Tiles(_fragment(compiler, fragment, call.op), site, "T.tvm_fill_fragment writes")
    positions = np.arange(size, dtype=np.int64)

    def fill(frame: Frame, mask: Mask) -> np.ndarray:
        place = target.locate(frame, mask, positions, index)
        fills = value(frame, mask)
        if fills.dtype.kind == "f":
            fills = V.wide(fills)
        target.write(frame, mask, place, np.broadcast_to(fills, (fills.shape[0], size)))
        return _NOTHING

    return fill


def _matrix_sync(load: bool) -> Callable[[ExprCompiler, Call], Eval]:
    """tvm_load_matrix_sync / tvm_store_matrix_sync(F, m, n, k, index, pointer, stride,
    layout): a tile from memory into fragment index of F (of F's shape: m x k for matrix_a,
    k x n for matrix_b, else m x n), or an m x n tile from the fragment into memory."""

    def rule(compiler: ExprCompiler, call: Call) -> Eval:
        _builtin(call, wmma.load_matrix_sync if load else wmma.store_matrix_sync)
        fragment_arg, m_arg, n_arg, k_arg, index_arg, pointer, stride_arg, layout = call.args
        site = compiler.site(call, call.op)
        verbs = ("writes", "reads") if load else ("reads", "writes")
        fragment = Tiles(
            _fragment(compiler, fragment_arg, call.op), site, f"T.{call.op} {verbs[0]}"
        )
        memory = Tiles(_pointer(compiler, pointer, call.op), site, f"T.{call.op} {verbs[1]}")
        m, n = _constant(m_arg, call.op), _constant(n_arg, call.op)
        rows, cols = m, n
        if load:
            rows, cols = fragment_shape(fragment.operand.scope, m, n, _constant(k_arg, call.op))
        index = _integer(compiler, index_arg, call.op)
        stride = _integer(compiler, stride_arg, call.op)
        in_memory = (memory, tile(rows, cols, _layout(layout, call.op)), stride)
        in_fragment = (fragment, np.arange(rows * cols, dtype=np.int64), index)
        (source, source_tile, source_step), (target, target_tile, target_step) = (
            (in_memory, in_fragment) if load else (in_fragment, in_memory)
        )

        def transfer(frame: Frame, mask: Mask) -> np.ndarray:
            place = source.locate(frame, mask, source_tile, source_step)
            values = source.read(frame, mask, place)
            target.write(frame, mask, target.locate(frame, mask, target_tile, target_step), values)
            return _NOTHING

        return transfer

    return rule


def _mma(compiler: ExprCompiler, call: Call) -> Eval:
    """tvm_mma_sync(D, d, A, a, B, b, C, c): D[d] = A[a] @ B[b] + C[c] in float64, with the
    thread model's shape (MMA_SHAPE)."""
    _builtin(call, wmma.mma_sync)
    site = compiler.site(call, call.op)
    parts: list[tuple[Tiles, Eval]] = []
    for number, name in enumerate("DABC"):
        fragment, index_arg = call.args[2 * number], call.args[2 * number + 1]
        verb = "T.tvm_mma_sync writes" if name == "D" else "T.tvm_mma_sync reads"
        tiles = Tiles(_fragment(compiler, fragment, call.op), site, verb)
        parts.append((tiles, _integer(compiler, index_arg, call.op)))
    (d, d_index), (a, a_index), (b, b_index), (c, c_index) = parts

    def mma(frame: Frame, mask: Mask) -> np.ndarray:
        m, n, k = MMA_SHAPE
        left = a.read(frame, mask, a.locate(frame, mask, np.arange(m * k), a_index))
        right = b.read(frame, mask, b.locate(frame, mask, np.arange(k * n), b_index))
        accumulator = c.read(frame, mask, c.locate(frame, mask, np.arange(m * n), c_index))
        place = d.locate(frame, mask, np.arange(m * n), d_index)
        d.write(frame, mask, place, multiply_accumulate(left, right, accumulator))
        return _NOTHING

    return mma


RULES: dict[str, Callable[[ExprCompiler, Call], Eval]] = {
    "tvm_fill_fragment": _fill,
    "tvm_load_matrix_sync": _matrix_sync(load=True),
    "tvm_store_matrix_sync": _matrix_sync(load=False),
    "tvm_mma_sync": _mma,
}

"""Memory and lanes of the lockstep GPU mode.

A chunk of blocks runs at once; its threads are lanes 0..L-1, block by block, each block's
threads in thread order (x fastest), as the thread model numbers them. Global memory (and
shared memory allocated before the kernel) is one flat array; shared memory is one row of
bytes per block, local memory one per lane. Gathers read nothing for inactive lanes, scatters
write only active ones.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from tirc.interp.fault import Fault, fault_in, index_outside, thread_name
from tirc.interp.memory.storage import Pointer, Storage, fresh_bytes
from tirc.interp.semantics import values as V
from tirc.interp.semantics.warp import split_linear
from tirc.ir.dtype import DataType

if TYPE_CHECKING:
    from tirc.ir.expr import Var


class Lanes:
    """The geometry of one chunk: which block and thread each lane is."""

    def __init__(
        self,
        first_block: int,
        blocks: int,
        grid: tuple[int, int, int],
        dims: tuple[int, int, int],
    ):
        per_block = dims[0] * dims[1] * dims[2]
        self.count = blocks * per_block
        self.blocks = blocks
        self.per_block = per_block
        self.grid, self.dims = grid, dims
        lane = np.arange(self.count, dtype=np.int64)
        self.index = lane
        self.block_row = lane // per_block if per_block else lane
        self.tid = lane % per_block if per_block else lane
        self.thread = split_linear(self.tid, dims)
        self.block = split_linear(first_block + self.block_row, grid)
        self.coordinates: dict[str, np.ndarray] = {
            **{f"threadIdx.{axis}": value for axis, value in zip("xyz", self.thread, strict=True)},
            **{f"blockIdx.{axis}": value for axis, value in zip("xyz", self.block, strict=True)},
        }

    def describe(self, lane: int) -> str:
        x, y, z = (int(axis[lane]) for axis in self.thread)
        bx, by, bz = (int(axis[lane]) for axis in self.block)
        return thread_name((x, y, z), (bx, by, bz))


def first_lane(bad: np.ndarray, lanes: Lanes, active: np.ndarray | None) -> tuple[int, int] | None:
    """(lane, vector lane) of the first bad element (rows, width) that is active; active is
    None (every lane), an (L,) lane mask or an (rows, width) element mask."""
    if active is not None:
        if active.ndim == 1:
            active = active[:, None]
        bad, active = np.broadcast_arrays(bad, active)
        bad = bad & active
    if not bad.any():
        return None
    lane, column = np.unravel_index(int(np.argmax(bad)), bad.shape)
    return int(lane), int(column)


def pick(values: np.ndarray, lane: int, column: int) -> int | float:
    """The element of a (rows, width) value at a lane and vector lane."""
    row = lane if values.shape[0] > 1 else 0
    return values[row, column if values.shape[1] > 1 else 0].item()


def fault_in_lane(site: int, message: str, lanes: Lanes, lane: int) -> Fault:
    return fault_in(Fault(site, message), lanes.describe(lane))


def fault_first(
    bad: np.ndarray,
    frame: Frame,
    active: np.ndarray | None,
    site: int,
    message: str | Callable[[int, int], str],
) -> None:
    """The one way lane code faults: at the first executing lane where `bad` (rows, width)
    holds, saying message (or message(lane, vector lane)); nothing where no executing lane
    is bad."""
    if bad.any():
        found = first_lane(bad, frame.lanes, active)
        if found is not None:
            text = message if isinstance(message, str) else message(*found)
            raise fault_in_lane(site, text, frame.lanes, found[0])


class FlatMemory:
    """A storage every lane reaches alike (global memory, shared memory from outside).

    Memories take element offsets into a view of their bytes as `kind` (the access type of a
    dtype, tirc.interp.memory.storage.access_type); `rows` is each lane's row, for memories with
    rows.
    """

    per_lane = False
    per_block = False

    def __init__(self, storage: Storage, byte_offset: int = 0):
        self.storage = storage
        self.byte_offset = byte_offset
        self._views: dict[np.dtype, tuple[np.ndarray, int]] = {}

    def view(self, kind: np.dtype) -> tuple[np.ndarray, int]:
        found = self._views.get(kind)
        if found is None:
            raw = self.storage.array.view(np.uint8)
            flat = raw[: raw.size - raw.size % kind.itemsize].view(kind)
            found = (flat, self.byte_offset // kind.itemsize)
            self._views[kind] = found
        return found

    def load(self, kind: np.dtype, offsets: np.ndarray, rows: np.ndarray | None) -> np.ndarray:
        flat, base = self.view(kind)
        return np.take(flat, _shift(offsets, base))  # faster than flat[offsets]

    def load_one(self, kind: np.dtype, element: int, rows: np.ndarray | None) -> np.ndarray:
        flat, base = self.view(kind)
        return flat[_checked(element + base), None, None]  # a view: see semantics.values.owned

    def store(
        self, kind: np.dtype, offsets: np.ndarray, raw: np.ndarray, rows: np.ndarray | None
    ) -> None:
        flat, base = self.view(kind)
        flat[_shift(offsets, base)] = raw

    def store_one(self, kind: np.dtype, element: int, raw: np.ndarray) -> None:
        """Every lane stores raw ((L, 1) or (1, 1)) at one element: the last lane's value
        stays, as in a scatter."""
        flat, base = self.view(kind)
        flat[_checked(element + base)] = raw[-1, 0]


class RowMemory:
    """One row of bytes per lane or per block (shared memory)."""

    per_lane = True

    def __init__(self, data: np.ndarray, per_block: bool, byte_offset: int = 0):
        self.data = data  # (rows, bytes), uint8
        self.per_block = per_block
        self.byte_offset = byte_offset
        self._views: dict[np.dtype, tuple[np.ndarray, int]] = {}

    def view(self, kind: np.dtype) -> tuple[np.ndarray, int]:
        found = self._views.get(kind)
        if found is None:
            usable = self.data.shape[1] - self.data.shape[1] % kind.itemsize
            found = (self.data[:, :usable].view(kind), self.byte_offset // kind.itemsize)
            self._views[kind] = found
        return found

    def load(self, kind: np.dtype, offsets: np.ndarray, rows: np.ndarray | None) -> np.ndarray:
        table, base = self.view(kind)
        if offsets.shape[0] == 1 and not self.per_block:  # the same place in every row
            return table[:, _shift(offsets[0], base)]
        return table[rows, _shift(offsets, base)]

    def load_one(self, kind: np.dtype, element: int, rows: np.ndarray | None) -> np.ndarray:
        table, base = self.view(kind)
        column = table[:, _checked(element + base)]
        return column[:, None] if not self.per_block else column[rows]  # a view: see values.owned

    def store(
        self, kind: np.dtype, offsets: np.ndarray, raw: np.ndarray, rows: np.ndarray | None
    ) -> None:
        table, base = self.view(kind)
        table[rows, _shift(offsets, base)] = raw

    def store_one(self, kind: np.dtype, element: int, raw: np.ndarray) -> None:
        """Every lane stores raw ((L, 1) or (1, 1)) at one column of its row: in memory per
        block, the block's last lane's value stays, as in a scatter."""
        table, base = self.view(kind)
        values = raw[:, 0]
        if self.per_block and values.shape[0] != 1:
            values = values.reshape(table.shape[0], -1)[:, -1]
        table[:, _checked(element + base)] = values

    def store_columns(self, kind: np.dtype, columns: np.ndarray, raw: np.ndarray) -> None:
        """Every row (lane) stores raw (L, width) at the same distinct columns."""
        table, base = self.view(kind)
        table[:, _shift(columns, base)] = raw

    def store_lanes(
        self, kind: np.dtype, column: int, raw: np.ndarray, lanes: np.ndarray | None
    ) -> None:
        """The rows (lanes) in the (L,) mask `lanes` (None: all) store raw ((L, 1) or (1, 1))
        at a column."""
        table, base = self.view(kind)
        where = True if lanes is None else lanes
        np.copyto(table[:, _checked(column + base)], raw[:, 0], where=where)


def _shift(offsets: np.ndarray, base: int) -> np.ndarray:
    """Element offsets moved by a base element (in int64, which cannot overflow here)."""
    return offsets.astype(np.int64, copy=False) + base if base else offsets


def _checked(element: int) -> int:
    """A non-negative element number (a negative one would count from the end)."""
    if element < 0:
        raise IndexError(element)
    return element


Memory = FlatMemory | RowMemory


class Frame:
    """One chunk of lanes as generated lane code sees it: its geometry and its memories."""

    __slots__ = ("memory", "lanes", "_rows")

    def __init__(self, lanes: Lanes):
        self.memory: dict[Var, Memory] = {}
        self.lanes = lanes
        self._rows: dict[bool, np.ndarray] = {}

    def row_index(self, memory: Memory) -> np.ndarray:
        """Each lane's row of a per-lane or per-block memory, as an (L, 1) column."""
        found = self._rows.get(memory.per_block)
        if found is None:
            rows = self.lanes.block_row if memory.per_block else self.lanes.index
            found = rows[:, None]
            self._rows[memory.per_block] = found
        return found


def allocate_rows(count: int, nbytes: int, per_block: bool) -> RowMemory:
    """Zeroed memory: a row of bytes per block (per_block), else per lane (or garbage, where
    storage.garbage_in_fresh_memory asks for it everywhere)."""
    rows = fresh_bytes(np.zeros((count, max(nbytes, 0)), dtype=np.uint8), None)
    return RowMemory(rows, per_block)


def outer_memory(handle: object, scope: str, lanes: Lanes) -> Memory:
    """Memory allocated before the kernel: local memory is each thread's own copy."""
    storage = handle.storage if isinstance(handle, Pointer) else handle
    offset = handle.byte_offset if isinstance(handle, Pointer) else 0
    if not isinstance(storage, Storage):
        raise TypeError(f"not a memory handle: {handle!r}")
    if scope in ("global", "shared", "shared.dyn", "warp") or not scope:
        return FlatMemory(storage, offset)
    raw = storage.array.view(np.uint8)
    return RowMemory(np.repeat(raw[None, :], lanes.count, axis=0), False, byte_offset=offset)


# accesses of generated lane code

Located = tuple["Memory", "np.ndarray | int", "np.ndarray | None", int]


_UNSIGNED = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


def is_below(value: np.ndarray, limit: int) -> bool:
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


def check_bounds(
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

    def message(lane: int, column: int) -> str:
        return index_outside(pick(index, lane, column), pick(bounds, lane, column), dim)

    fault_first(bad, frame, active, site, message)


def _elements(mask: np.ndarray | None) -> np.ndarray | None:
    return mask[:, None] if mask is not None and mask.ndim == 1 else mask


def load_raw(
    frame: Frame, located: Located, kind: np.dtype, held: np.dtype, dtype: DataType
) -> np.ndarray:
    """The values a load reads (held: their value type), for the active lanes (zero in the
    others); active is an (L,) lane mask or an (rows, width) element mask."""
    memory, offsets, active, site = located
    active = _elements(active)
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


def store_raw(
    frame: Frame, located: Located, values: object, kind: np.dtype, dtype: DataType
) -> None:
    """Stores values (numpy lanes, or one every lane stores) for the active lanes."""
    memory, offsets, active, site = located
    active = _elements(active)
    if not isinstance(values, np.ndarray):
        values = np.full((1, 1), values, V.value_type(dtype))
    raw = values if values.dtype == kind else V.encode(values, dtype)
    try:
        if _store_in_rows(memory, offsets, active, raw, kind):
            return
        if isinstance(offsets, int):
            if active is None:
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
    if not isinstance(memory, RowMemory) or memory.per_block:
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

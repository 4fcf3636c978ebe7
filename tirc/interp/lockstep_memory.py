"""Memory and lanes of the lockstep GPU mode.

A chunk of blocks runs at once; its threads are lanes 0..L-1, block by block, each block's
threads in thread order (x fastest), as the thread model numbers them. Global memory (and
shared memory allocated before the kernel) is one flat array; local memory is one row per
lane; shared memory one row per block. Gathers read nothing for inactive lanes, scatters write
only active ones.
"""

from __future__ import annotations

import numpy as np

from tirc.interp.fault import Fault
from tirc.interp.memory import Pointer, Storage, access_type
from tirc.ir.dtype import DataType

WARP_SIZE = 32


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
        linear = first_block + self.block_row
        self.coordinates: dict[str, np.ndarray] = {
            "threadIdx.x": self.tid % dims[0],
            "threadIdx.y": self.tid // dims[0] % dims[1],
            "threadIdx.z": self.tid // (dims[0] * dims[1]),
            "blockIdx.x": linear % grid[0],
            "blockIdx.y": linear // grid[0] % grid[1],
            "blockIdx.z": linear // (grid[0] * grid[1]),
        }
        self.extents = {
            "threadIdx.x": dims[0],
            "threadIdx.y": dims[1],
            "threadIdx.z": dims[2],
            "blockIdx.x": grid[0],
            "blockIdx.y": grid[1],
            "blockIdx.z": grid[2],
        }

    def describe(self, lane: int) -> str:
        c = {tag: int(values[lane]) for tag, values in self.coordinates.items()}
        thread = (c["threadIdx.x"], c["threadIdx.y"], c["threadIdx.z"])
        block = (c["blockIdx.x"], c["blockIdx.y"], c["blockIdx.z"])
        return f"thread {thread} of block {block}"


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


def pick(values: np.ndarray, lane: int, column: int) -> object:
    """The element of a (rows, width) value at a lane and vector lane."""
    row = lane if values.shape[0] > 1 else 0
    return values[row, column if values.shape[1] > 1 else 0].item()


def fault_in_lane(site: int, message: str, lanes: Lanes, lane: int) -> Fault:
    return Fault(site, f"{message} (in {lanes.describe(lane)})")


class FlatMemory:
    """A storage every lane reaches alike (global memory, shared memory from outside)."""

    def __init__(self, storage: Storage, byte_offset: int = 0):
        self.storage = storage
        self.byte_offset = byte_offset
        self._views: dict[str, tuple[np.ndarray, int]] = {}

    def view(self, dtype: DataType) -> tuple[np.ndarray, int]:
        key = str(dtype.element)
        found = self._views.get(key)
        if found is None:
            kind = access_type(dtype)
            raw = self.storage.array.view(np.uint8)
            flat = raw[: raw.size - raw.size % kind.itemsize].view(kind)
            found = (flat, self.byte_offset // kind.itemsize)
            self._views[key] = found
        return found

    def load(self, dtype: DataType, offsets: np.ndarray, rows: np.ndarray | None) -> np.ndarray:
        flat, base = self.view(dtype)
        return flat[offsets + base]

    def store(
        self, dtype: DataType, offsets: np.ndarray, raw: np.ndarray, rows: np.ndarray | None
    ) -> None:
        flat, base = self.view(dtype)
        flat[offsets + base] = raw


class RowMemory:
    """One row of bytes per lane (local memory) or per block (shared memory)."""

    def __init__(self, data: np.ndarray, per_block: bool, byte_offset: int = 0):
        self.data = data  # (rows, bytes), uint8
        self.per_block = per_block
        self.byte_offset = byte_offset
        self._views: dict[str, tuple[np.ndarray, int]] = {}

    def view(self, dtype: DataType) -> tuple[np.ndarray, int]:
        key = str(dtype.element)
        found = self._views.get(key)
        if found is None:
            kind = access_type(dtype)
            usable = self.data.shape[1] - self.data.shape[1] % kind.itemsize
            found = (self.data[:, :usable].view(kind), self.byte_offset // kind.itemsize)
            self._views[key] = found
        return found

    def load(self, dtype: DataType, offsets: np.ndarray, rows: np.ndarray | None) -> np.ndarray:
        table, base = self.view(dtype)
        if offsets.shape[0] == 1 and not self.per_block:  # the same place in every row
            return table[:, offsets[0] + base]
        return table[rows, offsets + base]

    def store(
        self, dtype: DataType, offsets: np.ndarray, raw: np.ndarray, rows: np.ndarray | None
    ) -> None:
        table, base = self.view(dtype)
        table[rows, offsets + base] = raw

    def store_columns(self, dtype: DataType, columns: np.ndarray, raw: np.ndarray) -> None:
        """Every row (lane) stores raw (L, width) at the same columns."""
        table, base = self.view(dtype)
        table[:, columns + base] = raw


Memory = FlatMemory | RowMemory


def allocate_rows(count: int, nbytes: int, per_block: bool) -> RowMemory:
    return RowMemory(np.zeros((count, max(nbytes, 0)), dtype=np.uint8), per_block)


def outer_memory(handle: object, scope: str, lanes: Lanes) -> Memory:
    """Memory allocated before the kernel: local memory is each thread's own copy."""
    storage = handle.storage if isinstance(handle, Pointer) else handle
    offset = handle.byte_offset if isinstance(handle, Pointer) else 0
    if not isinstance(storage, Storage):
        raise TypeError(f"not a memory handle: {handle!r}")
    if scope in ("global", "shared", "shared.dyn", "warp") or not scope:
        return FlatMemory(storage, offset)
    raw = storage.array.view(np.uint8)
    rows = np.broadcast_to(raw, (lanes.count, raw.size)).copy()
    return RowMemory(rows, per_block=False, byte_offset=offset)

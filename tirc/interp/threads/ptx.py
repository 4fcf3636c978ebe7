"""The warp-level PTX intrinsics, lane by lane: mma.sync, ldmatrix, mma_store; and cp.async.

mma.sync, ldmatrix and mma_store are warp collectives: each lane of a warp arrives with its
own operands (its register arrays, its row address), and once all 32 are there the resolver
below moves the elements between lanes as PTX defines (see tirc.ir.ptx for the fragment
layouts). cp.async reads its source when issued and writes shared memory only when a wait
retires its group: `commit_group` closes the thread's open copies into a group, and
`wait_group(n)` completes all groups but the n most recent, as on a GPU at its latest; a
program that reads a copy it has not waited for sees the old values, and a write that lands
after another thread read the element, in one barrier interval, is a data race. The
destination also counts as written when the copy is issued (it may land at once).

    ldmatrix .x4: lane 8j + r names row r of matrix j; lane t receives word j =
                  (row t / 4, columns 2(t % 4), 2(t % 4) + 1) of matrix j (.trans: transposed)
    mma m16n8k16: D = A x B + C on the fragments of the 32 lanes, in float64, rounded once
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np

from tirc.interp.fault import Fault
from tirc.interp.memory.storage import access_type, storage_of, view_of
from tirc.interp.semantics.values import NARROW
from tirc.interp.semantics.warp import WARP_SIZE
from tirc.interp.threads.scheduler import BlockContext, shared_load, shared_store
from tirc.ir.dtype import DataType, parse_dtype
from tirc.ir.ptx import ELEMENT_DTYPES, MmaShape, a_element, b_element, c_element

_U16 = parse_dtype("uint16")


class Registers:
    """Elements of one dtype through a handle, starting `offset` elements in; shared memory
    goes through the race tracker as `thread`."""

    def __init__(self, handle: object, offset: int, dtype: DataType, thread: int, site: int):
        self.memory, base = view_of(handle, dtype)
        self.handle = handle
        self.base = base + offset
        self.size = access_type(dtype).itemsize
        self.narrow = NARROW.get(str(dtype))
        self.thread, self.site = thread, site
        self.watched = getattr(storage_of(handle), "race", None) is not None
        self.dtype = dtype

    def raw(self, index: int) -> Any:
        where = self.base + index
        self._check(where)
        if self.watched:
            return shared_load(self.memory, where, self.handle, self.size, self.thread, self.site)
        return self.memory[where]

    def set_raw(self, index: int, value: Any) -> None:
        where = self.base + index
        self._check(where)
        if self.watched:
            shared_store(self.memory, where, value, self.handle, self.size, self.thread, self.site)
        else:
            self.memory[where] = value

    def __getitem__(self, index: int) -> float | int:
        value = self.raw(index)
        return self.narrow.values[value] if self.narrow is not None else value

    def __setitem__(self, index: int, value: float | int) -> None:
        if self.narrow is not None:
            self.set_raw(index, self.narrow.encode(float(value)))
        elif self.dtype.is_float:
            self.set_raw(index, float(np.float32(value)) if self.dtype.bits == 32 else value)
        else:
            self.set_raw(index, int(value))

    def claim(self, index: int, value: Any) -> None:
        """Race-checks a write of `value` without storing it (a copy in flight)."""
        where = self.base + index
        self._check(where)
        tracker = getattr(storage_of(self.handle), "race", None)
        if tracker is not None:
            name = storage_of(self.handle).name
            tracker.write(
                where * self.size, self.thread, self.site, name, value, self.memory[where]
            )

    def _check(self, where: int) -> None:
        if not 0 <= where < len(self.memory):
            name = storage_of(self.handle).name
            raise Fault(
                self.site,
                f"out of bounds: element {where} of '{name}' ({len(self.memory)} {self.dtype})",
            )


def _lanes(requests: dict[int, tuple], site: int, what: str) -> dict[int, tuple]:
    """The requests by lane; a warp instruction needs every lane of the warp."""
    by_lane = {thread % WARP_SIZE: request for thread, request in requests.items()}
    if len(by_lane) != WARP_SIZE:
        raise Fault(
            site,
            f"{what} is executed by {len(by_lane)} lanes of a warp; it needs all {WARP_SIZE} "
            "(launch whole warps and reach it in every lane)",
        )
    return by_lane


def _thread_of(requests: dict[int, tuple]) -> dict[int, int]:
    return {thread % WARP_SIZE: thread for thread in requests}


def ldmatrix(requests: dict[int, tuple], site: int) -> dict[int, None]:
    """requests: thread -> (trans, num, local, local_off, shared, shared_off), the offsets
    in 16-bit elements."""
    by_lane = _lanes(requests, site, "ldmatrix")
    threads = _thread_of(requests)
    trans, num = by_lane[0][0], by_lane[0][1]
    # rows[j][r]: the 8 elements of row r of matrix j, from the address lane 8j + r gave
    rows = []
    for j in range(num):
        matrix = []
        for r in range(8):
            lane = 8 * j + r
            _, _, _, _, shared, shared_off = by_lane[lane]
            source = Registers(shared, shared_off, _U16, threads[lane], site)
            matrix.append([source.raw(i) for i in range(8)])
        rows.append(matrix)
    for lane, (_, _, local, local_off, _, _) in by_lane.items():
        target = Registers(local, local_off, _U16, threads[lane], site)
        g, c = divmod(lane, 4)
        for j in range(num):
            for i in range(2):
                value = rows[j][2 * c + i][g] if trans else rows[j][g][2 * c + i]
                target.set_raw(2 * j + i, value)
    return dict.fromkeys(requests)


def mma(requests: dict[int, tuple], site: int) -> dict[int, None]:
    """requests: thread -> (shape, a, a_off, b, b_off, c, c_off, saturate)."""
    by_lane = _lanes(requests, site, "mma.sync")
    threads = _thread_of(requests)
    shape: MmaShape = by_lane[0][0]
    a_type = parse_dtype(ELEMENT_DTYPES[shape.a_type])
    b_type = parse_dtype(ELEMENT_DTYPES[shape.b_type])
    c_type = parse_dtype(ELEMENT_DTYPES[shape.c_type])
    integer = c_type.is_integer
    kind = object if integer else np.float64
    left = np.zeros((shape.m, shape.k), dtype=kind)
    right = np.zeros((shape.k, shape.n), dtype=kind)
    accumulator = np.zeros((shape.m, shape.n), dtype=kind)
    a_count = shape.a_words * shape.per_word
    b_count = shape.b_words * shape.per_word
    outputs = {}
    for lane, (_, a, a_off, b, b_off, c, c_off, _) in by_lane.items():
        thread = threads[lane]
        a_regs = Registers(a, a_off, a_type, thread, site)
        b_regs = Registers(b, b_off, b_type, thread, site)
        c_regs = Registers(c, c_off, c_type, thread, site)
        for index in range(a_count):
            left[a_element(shape, lane, index)] = a_regs[index]
        for index in range(b_count):
            right[b_element(shape, lane, index)] = b_regs[index]
        for index in range(shape.c_elements):
            accumulator[c_element(lane, index)] = c_regs[index]
        outputs[lane] = c_regs
    result = left.dot(right) + accumulator
    saturate = bool(by_lane[0][7])
    for lane, c_regs in outputs.items():
        for index in range(shape.c_elements):
            value = result[c_element(lane, index)]
            c_regs[index] = _int32(int(value), saturate) if integer else value
    return dict.fromkeys(requests)


def _int32(value: int, saturate: bool) -> int:
    if saturate:
        return max(-(1 << 31), min((1 << 31) - 1, value))
    return ((value + (1 << 31)) & 0xFFFFFFFF) - (1 << 31)


def mma_store(requests: dict[int, tuple], site: int) -> dict[int, None]:
    """requests: thread -> (n, dst, local, offset, stride, dtype): each lane writes its
    elements of the n / 8 m16n8 tiles side by side to dst[row * stride + column]."""
    by_lane = _lanes(requests, site, "mma_store")
    threads = _thread_of(requests)
    for lane, (n, dst, local, offset, stride, dtype) in by_lane.items():
        source = Registers(local, offset, dtype, threads[lane], site)
        target = Registers(dst, 0, dtype, threads[lane], site)
        for index in range(4 * (n // 8)):
            row, column = c_element(lane, index % 4)
            column += 8 * (index // 4)
            target.set_raw(row * stride + column, source.raw(index))
    return dict.fromkeys(requests)


def mma_fill(size: int, local: object, offset: int, dtype: DataType, site: int) -> None:
    registers = Registers(local, offset, dtype, -1, site)
    for index in range(size):
        registers[index] = 0


class CopiesInFlight:
    """One thread's asynchronous writes not yet complete (cp.async copies; wgmma results in
    tirc.interp.threads.wgmma): those issued since its last commit, and its committed groups,
    oldest first. A write is the function that lands it."""

    def __init__(self) -> None:
        self.open: list[Callable[[], None]] = []
        self.groups: deque[list[Callable[[], None]]] = deque()

    def commit(self) -> None:
        self.groups.append(self.open)
        self.open = []

    def wait(self, count: int) -> None:
        while len(self.groups) > max(count, 0):
            for land in self.groups.popleft():
                land()


InFlight = TypeVar("InFlight", bound=CopiesInFlight)


def in_flight_of(block: BlockContext | None, thread: int, kind: type[InFlight]) -> InFlight | None:
    """The thread's asynchronous writes of one kind, kept with its block; None outside a
    kernel."""
    if block is None or thread < 0:
        return None
    key = (kind.__name__, thread)
    found = block.storages.get(key)
    if found is None:
        found = block.storages[key] = kind()
    assert isinstance(found, kind)  # what this key holds
    return found


def copies_in_flight(block: BlockContext | None, thread: int) -> CopiesInFlight | None:
    """The thread's cp.async copies in flight; None outside a kernel."""
    return in_flight_of(block, thread, CopiesInFlight)


def cp_async(
    shared: object,
    shared_off: int,
    source: object,
    source_off: int,
    size: int,
    predicate: bool,
    dtype: DataType,
    thread: int,
    block: BlockContext | None,
    site: int,
) -> None:
    """Copies `size` bytes (zeros where the predicate is false): the source is read now, the
    destination written when a wait retires the copy (at once outside a kernel)."""
    count = size // (dtype.bits // 8)
    into = Registers(shared, shared_off, dtype, thread, site)
    if predicate:
        start = Registers(source, source_off, dtype, thread, site)
        values = [start.raw(index) for index in range(count)]
    else:
        values = [0] * count

    def land() -> None:
        for index, value in enumerate(values):
            into.set_raw(index, value)

    copies = copies_in_flight(block, thread)
    if copies is None:
        land()
        return
    for index, value in enumerate(values):
        into.claim(index, value)
    copies.open.append(land)


def commit_group(kind: type[CopiesInFlight], thread: int, block: BlockContext | None) -> None:
    """Closes the thread's open copies (cp.async, or wgmma: kind) into one group."""
    found = in_flight_of(block, thread, kind)
    if found is not None:
        found.commit()


def wait_group(
    kind: type[CopiesInFlight], count: int, thread: int, block: BlockContext | None
) -> None:
    """Lands the thread's groups of copies (of kind) until at most count are in flight."""
    found = in_flight_of(block, thread, kind)
    if found is not None:
        found.wait(count)

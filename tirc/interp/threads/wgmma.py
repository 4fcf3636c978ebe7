"""The Hopper warpgroup MMA, thread by thread (the arguments as in tirc.ir.wgmma).

Each thread of the warpgroup computes its own N / 2 accumulator elements when it issues the
call: the rows and columns it holds (tirc.ir.wgmma.accumulator_position), from A and B read
through their descriptors' layouts in shared memory, in float64, rounded once to float32.
As on a GPU, the results land in the registers only when a `wgmma.wait_group` retires their
group (`commit_group` closes the thread's open wgmmas into one): a program that reads its
accumulators before waiting sees the old values. Successive wgmmas on the same accumulators
chain as the hardware chains them (each adds to the previous one's pending result). The
shared tiles must have been written (and a barrier passed) before the call, which the race
tracker checks like any other shared read; and, as the PTX ISA has it, the wgmma may read them
at any time until the wait that retires its group: the race tracker holds its reads pending
until then (RaceTracker.read_async), so a write to the tiles before the retirement (a store
by any thread, the issuer's too, a cp.async, a TMA load landing) is a data race, whatever
barriers or mbarriers stand between; retired, they are the thread's reads of that moment,
which a later release orders before a refill. Fences have nothing to do in this model.
"""

from __future__ import annotations

import numpy as np

from tirc.interp.fault import Fault
from tirc.interp.memory.storage import storage_of, view_of
from tirc.interp.threads.ptx import CopiesInFlight, Registers, in_flight_of
from tirc.interp.threads.scheduler import BlockContext, RaceTracker
from tirc.ir.dtype import parse_dtype
from tirc.ir.ptx import ELEMENT_DTYPES
from tirc.ir.wgmma import WARPGROUP_SIZE, WgmmaShape, accumulator_position, operand_element

_F32 = parse_dtype("float32")


class Operand:
    """A shared operand: element (mn, k) read through the descriptor's layout, each read
    pending in the race tracker until `retire`."""

    def __init__(self, parts: tuple, ptx_type: str, thread: int, site: int):
        """parts: (pointer, offset, lbo, sbo, swizzle, trans), as the call gives them."""
        handle, offset, lbo, sbo, width, trans = parts
        dtype = parse_dtype(ELEMENT_DTYPES[ptx_type])
        _, base = view_of(handle, dtype)
        self.start = (base + offset) * 2  # bytes from the storage's start
        storage = storage_of(handle)
        self.registers = Registers(storage, 0, dtype, thread, site)
        self.registers.watched = False  # the reads go to the tracker as pending instead
        self.tracker = storage.race if isinstance(storage.race, RaceTracker) else None
        self.name, self.thread, self.site = storage.name, thread, site
        self.read: list[int] = []  # the byte addresses pending in the tracker
        self.lbo, self.sbo, self.width, self.mn_major = lbo, sbo, width, bool(trans)

    def __call__(self, mn: int, k: int) -> float:
        index = operand_element(
            self.start, mn, k, lbo=self.lbo, sbo=self.sbo, width=self.width, mn_major=self.mn_major
        )
        value = float(self.registers[index])  # bounds-checked
        if self.tracker is not None:
            address = (self.registers.base + index) * self.registers.size
            self.tracker.read_async(address, self.thread, self.site, self.name)
            self.read.append(address)
        return value

    def retire(self) -> None:
        """The group retired: the reads are over."""
        if self.tracker is not None:
            for address in self.read:
                self.tracker.retire(address, self.thread, self.site)


class PendingWgmma(CopiesInFlight):
    """One thread's wgmma results not yet waited for: the latest pending value of each
    accumulator element (what the next wgmma adds to), and the writes that land them, in
    groups, oldest first."""

    def __init__(self) -> None:
        super().__init__()
        self.latest: dict[tuple[int, int], tuple[int, float]] = {}
        self.issued = 0

    def value(self, registers: Registers, index: int) -> float:
        found = self.latest.get((id(registers.memory), registers.base + index))
        return found[1] if found is not None else float(registers[index])

    def write(self, registers: Registers, index: int, value: float) -> None:
        self.issued += 1
        key, number = (id(registers.memory), registers.base + index), self.issued
        self.latest[key] = (number, value)

        def land() -> None:
            registers[index] = value
            if self.latest.get(key, (None,))[0] == number:
                del self.latest[key]

        self.open.append(land)


def wgmma(
    shape: WgmmaShape,
    a: tuple,
    b: tuple,
    c: object,
    c_offset: int,
    scale_d: int,
    thread: int,
    block: BlockContext | None,
    site: int,
) -> None:
    """a and b: (pointer, offset, lbo, sbo, swizzle, trans) of the shared operands."""
    pending = in_flight_of(block, thread, PendingWgmma)  # None outside a kernel
    if block is None or pending is None:
        raise Fault(site, "wgmma is a warpgroup instruction: it runs only inside a GPU kernel")
    threads = block.dims[0] * block.dims[1] * block.dims[2]
    if threads % WARPGROUP_SIZE:
        raise Fault(
            site,
            f"wgmma needs whole warpgroups of {WARPGROUP_SIZE} threads; the block has {threads}",
        )
    left = Operand(a, shape.a_type, thread, site)
    right = Operand(b, shape.b_type, thread, site)
    accumulator = Registers(c, c_offset, _F32, thread, site)
    positions = [accumulator_position(thread, register) for register in range(shape.registers)]
    # each element this thread needs read once (its 2 rows of A, its N / 4 columns of B), then
    # the products summed over k in order, as float64, for all its registers at once
    rows = {row: [left(row, k) for k in range(16)] for row in sorted({r for r, _ in positions})}
    columns = {col: [right(col, k) for k in range(16)] for col in sorted({c for _, c in positions})}
    a_values = np.array([rows[row] for row, _ in positions])
    b_values = np.array([columns[column] for _, column in positions])
    totals = np.zeros(len(positions))
    for k in range(16):
        totals = totals + a_values[:, k] * b_values[:, k]
    for register, total in enumerate(totals.tolist()):
        if scale_d:
            total += pending.value(accumulator, register)
        pending.write(accumulator, register, float(np.float32(total)))
    pending.open += [left.retire, right.retire]

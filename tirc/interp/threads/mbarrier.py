"""Hopper's mbarriers and TMA copies in the thread model (the PTX ISA's semantics, exactly).

An mbarrier counts a phase: `init(count)` sets its expected arrivals; each `arrive` takes one
pending arrival away, `arrive_expect_tx(bytes)` also adds bytes to the transaction count, and
every TMA copy completing on it takes its bytes away. The phase completes when both reach
zero: its number goes up by one and the pending arrivals are the expected count again.
`wait(parity)` returns once the phase of that parity has completed, that is while the current
phase's parity differs from it: waiting on parity 0 of a fresh barrier blocks until phase 0
completes.

A TMA load reads global memory when it is issued and lands in shared memory (in the swizzled
layout, tirc.ir.tma.swizzled_byte) only when no thread can go on and some thread waits on its
barrier, as late as the hardware may: a thread that reads the tile without waiting sees the old
values. The copies write through the async proxy, ordered by the barrier, so they are not
race-checked. When every thread of a block waits and no barrier can complete, the wait is an
error at its call, naming the barrier's state.

A TMA store (cp.async.bulk.tensor to global, in a bulk async-group) reads its shared box and
writes global memory asynchronously: it joins the issuing thread's open stores, `commit` closes
them into a group (tirc.interp.threads.ptx.CopiesInFlight, as cp.async's groups), and only
`wait_group(n)` of that thread completes the groups older than the n newest. The model reads
the source and writes the tensor then, as late as the hardware may: the wait returns once no
thread can go on. So a thread that reads the tensor before the wait sees the old values, a
store never waited for never lands (on a GPU the block may exit and free its source first),
and a write to the source before the wait is a data race: another thread's write in the
barrier interval of the issue through the race tracker (the store reads its box there), any
other write (the issuer's own, or one after a barrier) found at the wait, the source no longer
what was issued.

A barrier's state lives beside its 64-bit word (in the block's storages, keyed by the word).
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np

from tirc.interp.fault import Fault
from tirc.interp.memory.storage import storage_of, view_of
from tirc.interp.threads.ptx import CopiesInFlight, in_flight_of
from tirc.interp.threads.scheduler import POLL, BlockContext, RaceTracker, joined
from tirc.ir.dtype import DataType, parse_dtype
from tirc.ir.tma import swizzled_byte

_U8 = parse_dtype("uint8")
_U64 = parse_dtype("uint64")
MAX_COUNT = (1 << 20) - 1  # the most arrivals a phase may expect


@dataclass
class MBarrier:
    expected: int = 0
    pending: int = 0
    transactions: int = 0  # bytes still to arrive this phase
    phase: int = 0
    valid: bool = False
    copies: list[Any] = field(default_factory=list)  # TMA loads in flight: (bytes, land)
    # what the arrivals of the current phase released, and of the completed phases, which a
    # wait that passes acquires (a vector clock: BlockContext.acquire)
    arriving: dict[int, int] = field(default_factory=dict)
    released: dict[int, int] = field(default_factory=dict)

    def complete_if_done(self) -> None:
        if self.pending == 0 and self.transactions == 0:
            self.phase += 1
            self.pending = self.expected
            for thread, era in self.arriving.items():
                if era > self.released.get(thread, 0):
                    self.released[thread] = era
            self.arriving = {}

    def land(self) -> None:
        """Completes the copies in flight (the hardware may finish them at any time)."""
        copies, self.copies = self.copies, []
        for size, land in copies:
            land()
            self.transactions -= size
            self.complete_if_done()

    def describe(self) -> str:
        return (
            f"phase {self.phase} with {self.pending} of {self.expected} arrivals and "
            f"{self.transactions} transaction bytes pending"
        )


def _barrier(
    handle: object, index: int, block: BlockContext | None, site: int, what: str
) -> MBarrier:
    if block is None:
        raise Fault(site, f"{what} acts on a shared-memory mbarrier: it runs only in a GPU kernel")
    storage = storage_of(handle)
    if str(getattr(storage, "dtype", _U64)) != "uint64":
        raise Fault(site, f"{what}: an mbarrier is a uint64 element, not {storage.dtype}")
    _, base = view_of(handle, _U64)
    key = ("mbarrier", id(storage), base + index)
    found = block.storages.get(key)
    if found is None:
        found = block.storages[key] = MBarrier()
    if not isinstance(found, MBarrier):
        raise TypeError(key)
    return found


def _valid(barrier: MBarrier, site: int, what: str) -> MBarrier:
    if not barrier.valid:
        raise Fault(site, f"{what} on an mbarrier that is not initialized (T.ptx_mbarrier_init)")
    return barrier


def init(handle: object, index: int, count: int, block: BlockContext | None, site: int) -> None:
    barrier = _barrier(handle, index, block, site, "T.ptx_mbarrier_init")
    if not 1 <= count <= MAX_COUNT:
        raise Fault(
            site, f"T.ptx_mbarrier_init: the arrival count is 1 to {MAX_COUNT}, not {count}"
        )
    barrier.expected = barrier.pending = count
    barrier.transactions, barrier.phase, barrier.valid = 0, 0, True
    barrier.copies, barrier.arriving, barrier.released = [], {}, {}


def inval(handle: object, index: int, block: BlockContext | None, site: int) -> None:
    _barrier(handle, index, block, site, "T.ptx_mbarrier_inval").valid = False


def arrive(
    handle: object,
    index: int,
    transactions: int,
    thread: int,
    block: BlockContext | None,
    site: int,
) -> None:
    """An arrival, and a release: the shared memory the thread has read or written so far
    (and what it had acquired) is ordered before what a thread that waits for the phase does
    after (the race checks of TMA loads and of ordinary accesses)."""
    what = "T.ptx_mbarrier_arrive"
    barrier = _valid(_barrier(handle, index, block, site, what), site, what)
    _release(barrier, block, thread)
    barrier.transactions += transactions
    barrier.pending -= 1
    barrier.complete_if_done()


def _release(barrier: MBarrier, block: BlockContext | None, thread: int) -> None:
    """The thread's release into the barrier's current phase."""
    if block is not None:
        joined(barrier.arriving, [block.release(thread)])


def arrive_on_copies(
    handle: object, index: int, thread: int, block: BlockContext | None, site: int
) -> None:
    """cp.async.mbarrier.arrive.noinc: an arrival (one of the expected count) once every
    cp.async the thread has issued so far has landed. The model lands them with the barrier's
    TMA copies, as late as the hardware may (when a thread waits on it and none can go on);
    a wait_group of the thread lands them too, once. The arrival releases the copies and
    what the thread did until then (more than the accesses before the call: weak)."""
    what = "T.ptx_mbarrier_arrive_cp_async"
    barrier = _valid(_barrier(handle, index, block, site, what), site, what)
    copies = in_flight_of(block, thread, CopiesInFlight)
    if copies is None:
        raise Fault(site, f"{what} runs only in a GPU kernel")
    issued = [*copies.open, *(land for group in copies.groups for land in group)]
    once = {id(land): _once(land) for land in issued}
    copies.open = [once[id(land)] for land in copies.open]
    for group in copies.groups:
        group[:] = [once[id(land)] for land in group]

    def land() -> None:
        for landing in once.values():
            landing()
        _release(barrier, block, thread)
        barrier.pending -= 1

    barrier.copies.append((0, land))


def _once(land: Callable[[], None]) -> Callable[[], None]:
    done = False

    def run() -> None:
        nonlocal done
        if not done:
            done = True
            land()

    return run


def wait(
    handle: object, index: int, parity: int, thread: int, block: BlockContext | None, site: int
) -> Generator[tuple[Any, ...], None, None]:
    """Returns at once when the phase of `parity` has completed (judged now, as the
    instruction does), else yields a scheduler POLL, which the scheduler tries once no
    thread can go on and releases when that phase has completed. Passing acquires what the
    arrivals of the completed phases released."""
    what = "T.ptx_mbarrier_wait"
    barrier = _valid(_barrier(handle, index, block, site, what), site, what)
    if barrier.phase % 2 != parity % 2:
        _acquire(block, thread, barrier)
        return

    def poll() -> bool:
        barrier.land()
        if barrier.phase % 2 == parity % 2:
            return False
        _acquire(block, thread, barrier)
        return True

    yield (POLL, site, poll, lambda: f"the mbarrier's parity {parity % 2}: {barrier.describe()}")


class Copy(NamedTuple):
    """A TMA copy's operands, evaluated: the box at `coords` of the dense `tensor` of extents
    `shape`, and where it lies in shared memory (from element `offset`, swizzled)."""

    dtype: DataType
    tensor: object
    swizzle: int
    shape: tuple[int, ...]
    box: tuple[int, ...]
    shared: object
    offset: int
    coords: tuple[int, ...]


def tma_load(
    copy: Copy,
    barrier_handle: object,
    barrier_index: int,
    thread: int,
    block: BlockContext | None,
    site: int,
) -> None:
    """cp.async.bulk.tensor: the box of the global tensor (zeros outside it) into shared
    memory, landing when waited for and completing its bytes on the barrier."""
    what = "T.ptx_tma_load"
    barrier = _valid(_barrier(barrier_handle, barrier_index, block, site, what), site, what)
    values = _tensor(copy)
    tile = np.zeros(copy.box, dtype=values.dtype)
    in_tile, in_tensor = _overlap(copy)
    tile[in_tile] = values[in_tensor]
    raw = tile.tobytes()
    destination, start = _shared_box(copy, len(raw), site, what)
    # what releases the issuer had acquired ordered before the issue: other threads' eras
    known = dict(block.known.get(thread, {})) if block is not None else {}

    def land() -> None:
        _check_unread(copy, start, len(raw), thread, known, site)
        for chunk in range(0, len(raw), 16):
            at = start + swizzled_byte(chunk, copy.swizzle)
            destination[at : at + 16] = raw[chunk : chunk + 16]

    barrier.copies.append((len(raw), land))


class BulkStores(CopiesInFlight):
    """One thread's TMA stores not yet complete: its open ones and its bulk async-groups, and
    the site of each (a store still pending when the thread returns is an error there)."""

    def __init__(self) -> None:
        super().__init__()
        self.sites: dict[Callable[[], None], int] = {}

    def issue(self, land: Callable[[], None], site: int, block: BlockContext, thread: int) -> None:
        if not self.sites:
            block.at_exit(thread, self.check_done)
        self.sites[land] = site
        self.open.append(land)

    def check_done(self) -> None:
        """A store whose bulk group no wait completed may read shared memory after the block
        has freed it, and may land or not: PTX promises nothing without the wait."""
        pending = [*self.open, *(land for group in self.groups for land in group)]
        if pending:
            raise Fault(
                self.sites[pending[0]],
                f"{len(pending)} TMA store(s) still in flight when the thread returns: wait for "
                "their bulk group first (T.ptx_tma_store_commit(), T.ptx_tma_store_wait(0))",
            )


def tma_store(copy: Copy, thread: int, block: BlockContext | None, site: int) -> None:
    """cp.async.bulk.tensor to global memory: the box (as it lies in shared memory, swizzled)
    into the tensor, its elements outside the tensor dropped, when a wait completes its group
    (at once outside a kernel). The source must hold what it held at the issue until then."""
    what = "T.ptx_tma_store"
    values = _tensor(copy)
    nbytes = int(np.prod(copy.box)) * (copy.dtype.bits // 8)
    source, start = _shared_box(copy, nbytes, site, what)
    issued = _unswizzled(copy, source, start, nbytes)
    tracker = getattr(storage_of(copy.shared), "race", None)
    if isinstance(tracker, RaceTracker):
        name = storage_of(copy.shared).name
        for address in range(start, start + nbytes):
            tracker.read(address, thread, site, name)

    def land() -> None:
        now = _unswizzled(copy, source, start, nbytes)
        if now != issued:
            _overwritten(copy, start, issued, now, tracker, site)
        tile = np.frombuffer(issued, dtype=values.dtype).reshape(copy.box)
        in_tile, in_tensor = _overlap(copy)
        values[in_tensor] = tile[in_tile]

    stores = in_flight_of(block, thread, BulkStores)
    if stores is None or block is None:
        land()
        return
    stores.issue(land, site, block, thread)


def store_wait(
    count: int, thread: int, block: BlockContext | None, site: int
) -> Generator[tuple[Any, ...], None, None]:
    """cp.async.bulk.wait_group: completes the thread's bulk groups but the `count` newest,
    once no thread can go on (a scheduler POLL); at once when there is nothing to complete."""
    stores = in_flight_of(block, thread, BulkStores)
    if stores is None or len(stores.groups) <= max(count, 0):
        return

    def poll() -> bool:
        stores.wait(count)
        return True

    yield (POLL, site, poll, lambda: "the TMA stores' bulk groups")


def _unswizzled(copy: Copy, source: memoryview, start: int, nbytes: int) -> bytes:
    """The box's bytes in row-major order, read from shared memory where the swizzle put them."""
    raw = bytearray(nbytes)
    for chunk in range(0, nbytes, 16):
        at = start + swizzled_byte(chunk, copy.swizzle)
        raw[chunk : chunk + 16] = source[at : at + 16]
    return bytes(raw)


def _overwritten(
    copy: Copy, start: int, issued: bytes, now: bytes, tracker: object, site: int
) -> None:
    """The data race of a write to a store's source before the wait that completes it, with
    the write's place where the race tracker still knows it (a write since the last barrier)."""
    changed = next(i for i in range(len(now)) if now[i] != issued[i])
    changed -= changed % (copy.dtype.bits // 8)  # the element's first byte
    address = start + swizzled_byte(changed - changed % 16, copy.swizzle) + changed % 16
    notes: tuple[tuple[int, str], ...] = ()
    if isinstance(tracker, RaceTracker):
        # the tracker keys a write by its element's first byte
        for size in (1, 2, 4, 8, 16):
            writer = tracker.writers.get(address - address % size)
            if writer is not None:
                describe = tracker.block.describe_thread
                notes = ((writer[1], f"{describe(writer[0])} wrote it here"),)
                break
    raise Fault(
        site,
        f"data race on shared memory '{storage_of(copy.shared).name}' at byte {address}: it "
        "was written after this TMA store was issued and before T.ptx_tma_store_wait "
        "completed the store, which may read either value",
        notes,
    )


def _acquire(block: BlockContext | None, thread: int, barrier: MBarrier) -> None:
    if block is not None:
        block.acquire(thread, barrier.released)


def _check_unread(
    copy: Copy, start: int, nbytes: int, issuer: int, known: dict[int, int], site: int
) -> None:
    """A data race when another thread read the bytes a landing copy writes since the last
    barrier, unless a release of that thread's after the read was acquired by the issuer
    before it issued (`known`, the issuer's BlockContext.known then: an arrival on an
    mbarrier it waited for, a named barrier): else the copy may have landed before the read
    (a read before the wait for the copy), or the read may not be over when it lands (a
    refill that nothing orders after the read). The issuer's own reads are program-ordered.
    A wgmma still reading the bytes (its group not retired, the issuer's own too) races with
    the copy whatever the order: only its retirement ends the read, and the copy cannot have
    been ordered after a retirement that has not happened."""
    tracker = getattr(storage_of(copy.shared), "race", None)
    if not isinstance(tracker, RaceTracker):
        return
    name = storage_of(copy.shared).name
    describe = tracker.block.describe_thread
    if tracker.pending:
        lands = f"this TMA load (issued by {describe(issuer)}) lands on"
        for address in range(start, start + nbytes):
            tracker.check_pending(address, site, lands, name)
    for address, readers in tracker.readers.items():
        if not start <= address < start + nbytes:
            continue
        for reader, read_site in readers.items():
            ordered = tracker.read_era(address, reader) < known.get(reader, 0)
            if reader != issuer and not ordered:
                raise Fault(
                    site,
                    f"data race on shared memory '{name}' at byte {address}: this TMA load "
                    f"(issued by {describe(issuer)}) lands there after {describe(reader)} "
                    "read it, and no release of that thread's after the read (an mbarrier "
                    "arrival, a named barrier) was acquired by the issuer before it issued "
                    "the load",
                    ((read_site, f"{describe(reader)} read it here"),),
                )


def _tensor(copy: Copy) -> np.ndarray:
    """The dense global tensor, as an array over its memory."""
    memory, base = view_of(copy.tensor, copy.dtype)
    return np.asarray(memory)[base : base + int(np.prod(copy.shape))].reshape(copy.shape)


def _overlap(copy: Copy) -> tuple[tuple[slice, ...], tuple[slice, ...]]:
    """Where the box and the tensor overlap: slices of the box, of the tensor."""
    in_tile, in_tensor = [], []
    for corner, extent, size in zip(copy.coords, copy.box, copy.shape, strict=True):
        low, high = max(corner, 0), max(min(corner + extent, size), max(corner, 0))
        in_tile.append(slice(low - corner, high - corner))
        in_tensor.append(slice(low, high))
    return tuple(in_tile), tuple(in_tensor)


def _shared_box(copy: Copy, nbytes: int, site: int, what: str) -> tuple[memoryview, int]:
    """Shared memory as bytes, and where the box starts, checked as the hardware needs."""
    memory, base = view_of(copy.shared, _U8)
    start = base + copy.offset * (copy.dtype.bits // 8)
    if start % 128:
        raise Fault(site, f"{what}: the shared box is at byte {start}, not 128-byte aligned")
    if copy.swizzle and start % 1024:
        raise Fault(
            site, f"{what}: a swizzled shared box must be 1024-byte aligned, not at byte {start}"
        )
    if start + nbytes > len(memory):
        raise Fault(site, f"{what}: the box ({nbytes} bytes) passes the end of the shared buffer")
    return memory, start

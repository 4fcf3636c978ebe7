"""The GPU model: a kernel runs as a grid of blocks, each a set of threads run as coroutines.

A thread runs until it reaches a collective (a `yield` in generated code): a barrier
(`tvm_storage_sync`), a warp shuffle or a warp's active mask. When no thread can go on, warp
collectives are resolved among the threads of a warp waiting at the same place; when every
live thread waits at the same barrier, a new epoch begins. Shared memory is watched between
barriers: two threads touching one element, at least one writing, is a data race and an error,
unless a release and acquire ordered the one access before the other: a named barrier
(tirc.interp.threads.named_barrier: part of the block, a POLL), an mbarrier phase
(tirc.interp.threads.mbarrier) or `__syncwarp`, through vector clocks (BlockContext). A
wgmma's shared operands are read until the `wgmma.wait_group` that retires it (RaceTracker's
pending reads), so a write in between races with it whatever orders it.
Exited threads no longer take part in barriers (as on GPUs since Volta). `launch` runs the blocks
one at a time; a kernel with thread-block clusters runs the blocks of each cluster together
(tirc.interp.threads.cluster). Either way `run_blocks` schedules them, the cluster adding only
its barrier's phases.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from typing import Any, NamedTuple

from tirc.interp.fault import Fault, fault_in, thread_name
from tirc.interp.memory.storage import Storage, allocate, storage_of, view_of
from tirc.interp.semantics.values import NARROW
from tirc.interp.semantics.warp import WARP_SIZE, shuffle_source, split_linear
from tirc.ir.dtype import DataType

BARRIER, SHUFFLE, ACTIVE_MASK, ALLREDUCE = 0, 1, 2, 3
# a warp instruction (tirc.interp.threads.ptx): (WARP_OP, site, resolve, operands); once the warp is
# there, resolve({thread: operands}, site) returns each thread's reply
WARP_OP = 4
# a wait on a condition other threads or copies make true (tirc.interp.threads.mbarrier):
# (POLL, site, poll, describe); tried when no thread can go on, released once poll() is true
POLL = 5

Thread = Generator[Any, Any, None]
Kernel = Callable[..., Thread]


class RaceTracker:
    """Who touched each byte address of one shared storage since the last barrier. An access
    that a release and acquire order before another thread's (BlockContext.orders: the
    access's era against what the other thread knows) does not race with it. The reads of
    wgmmas in flight are pending until their group retires: every write to those bytes, by
    any thread, the issuer too, races with them (nothing can order a write before a wgmma's
    read ends but its retirement); retired, they are the issuer's reads of that moment."""

    __slots__ = ("writers", "readers", "read_eras", "pending", "block")

    def __init__(self, block: BlockContext):
        # address -> (thread, site, value, the other threads that wrote that same value, the
        # thread's era at the write)
        self.writers: dict[int, tuple[int, int, Any, frozenset[int], int]] = {}
        self.readers: dict[int, dict[int, int]] = {}  # address -> {thread: site}
        # address -> {thread: its era at its last read}, where that era is not 0
        self.read_eras: dict[int, dict[int, int]] = {}
        # address -> {thread: the sites of its wgmmas in flight that read it}; a barrier
        # does not retire them, so reset keeps them
        self.pending: dict[int, dict[int, list[int]]] = {}
        self.block = block

    def reset(self) -> None:
        self.writers.clear()
        self.readers.clear()
        self.read_eras.clear()

    def ordered(self, earlier: int, later: int, era: int) -> bool:
        """Whether `earlier`'s access made in its era `era` is ordered before what `later`
        does now (a release of `earlier`'s after it that `later` acquired)."""
        return self.block.orders(earlier, era, later)

    def read_era(self, address: int, reader: int) -> int:
        eras = self.read_eras.get(address)
        return 0 if eras is None else eras.get(reader, 0)

    def read(self, address: int, thread: int, site: int, name: str) -> None:
        self.check_written(address, thread, site, name)
        self.record_read(address, thread, site)

    def check_written(self, address: int, thread: int, site: int, name: str) -> None:
        """A read races with another thread's write that nothing ordered before it."""
        writer = self.writers.get(address)
        if (
            writer is not None
            and writer[0] != thread
            and thread not in writer[3]
            and not self.ordered(writer[0], thread, writer[4])
        ):
            self.race(site, thread, "reads", (writer[0], writer[1]), "wrote", name, address)

    def record_read(self, address: int, thread: int, site: int) -> None:
        era = self.block.eras.get(thread, 0) if self.block.eras else 0
        if era:  # its latest read is the one that later accesses must be ordered after
            self.read_eras.setdefault(address, {})[thread] = era
        readers = self.readers.get(address)
        if readers is None:
            self.readers[address] = {thread: site}
        elif thread not in readers:
            readers[thread] = site

    def read_async(self, address: int, thread: int, site: int, name: str) -> None:
        """A wgmma's read of an operand byte at its issue: checked against the writes before,
        then pending until `retire`."""
        self.check_written(address, thread, site, name)
        self.pending.setdefault(address, {}).setdefault(thread, []).append(site)

    def retire(self, address: int, thread: int, site: int) -> None:
        """The wgmma's read is over (its group retired): the thread's read from now on."""
        by_thread = self.pending[address]
        sites = by_thread[thread]
        sites.remove(site)
        if not sites:
            del by_thread[thread]
            if not by_thread:
                del self.pending[address]
        self.record_read(address, thread, site)

    def check_pending(self, address: int, site: int, verb: str, name: str) -> None:
        """A write (at `site`: `verb` says whose, or what it is) races with a wgmma that may
        still read the byte."""
        pending = self.pending.get(address)
        if pending:
            reader, sites = next(iter(pending.items()))
            describe = self.block.describe_thread
            raise Fault(
                site,
                f"data race on shared memory '{name}' at byte {address}: {verb} it while a "
                f"wgmma {describe(reader)} issued may still read it (a wgmma reads its shared "
                "operands until the wgmma.wait_group that retires its group)",
                ((sites[0], f"{describe(reader)} issued the wgmma here"),),
            )

    def write(self, address: int, thread: int, site: int, name: str, value: Any, old: Any) -> None:
        """Two kinds of writes race harmlessly, as the result does not depend on their order
        (TVM emits both): threads writing one value (a copy not bound to threads), and a
        thread writing back the value it read (`red_result[0] = red_result[0]`)."""
        writer = self.writers.get(address)
        readers = self.readers.get(address, {})
        if writer is None and thread in readers and _same(value, old):
            return  # nothing changed: as far as other threads can tell, a read
        if self.pending:
            writes = f"{self.block.describe_thread(thread)} writes"
            self.check_pending(address, site, writes, name)
        if (
            writer is not None
            and writer[0] != thread
            and not writer[3]
            and self.ordered(writer[0], thread, writer[4])
        ):
            writer = None  # the other thread's write is ordered before this one
        if writer is not None and (writer[0] != thread or writer[3]):
            if not _same(writer[2], value):
                other = writer[0] if writer[0] != thread else min(writer[3] - {thread})
                self.race(site, thread, "writes", (other, writer[1]), "wrote", name, address)
            others = writer[3] | {thread} if thread != writer[0] else writer[3]
            self.writers[address] = (writer[0], writer[1], value, others, writer[4])
        else:
            era = self.block.eras.get(thread, 0) if self.block.eras else 0
            self.writers[address] = (thread, site, value, frozenset(), era)
        for reader, reader_site in readers.items():
            if reader != thread and not self.ordered(
                reader, thread, self.read_era(address, reader)
            ):
                self.race(site, thread, "writes", (reader, reader_site), "read", name, address)

    def race(
        self,
        site: int,
        thread: int,
        verb: str,
        other: tuple[int, int],
        other_verb: str,
        name: str,
        address: int,
    ) -> None:
        describe = self.block.describe_thread
        raise Fault(
            site,
            f"data race on shared memory '{name}' at byte {address}: {describe(thread)} {verb} "
            f"it after {describe(other[0])} {other_verb} it, with no barrier in between",
            ((other[1], f"{describe(other[0])} {other_verb} it here"),),
        )


class BlockContext:
    """What the threads of one block share: its shared memory and the race trackers, and
    what named barriers ordered between its threads.

    Releases and acquires order accesses like vector clocks: a thread's era is the number of
    its releases (arrivals at named barriers and mbarriers, `__syncwarp`s), each access is
    stamped with its thread's era, and `known` says, for a thread t and another p, the era
    before which p's accesses are ordered before what t does now. An acquire (passing a
    completed named barrier, a completed mbarrier phase, `__syncwarp`) gives the thread what
    each release it synchronizes with carried: the releasing thread's accesses before it, and
    what that thread knew then (so chains order transitively)."""

    def __init__(self, block_index: tuple[int, int, int], dims: tuple[int, int, int]):
        self.block_index = block_index
        self.dims = dims
        self.storages: dict[object, object] = {}
        self.trackers: list[RaceTracker] = []
        self.exit_checks: dict[int, list[Callable[[], None]]] = {}  # thread -> checks
        self.eras: dict[int, int] = {}  # thread -> its releases so far (absent: 0)
        self.known: dict[int, dict[int, int]] = {}  # thread t -> {p: p's era bound for t}

    def shared(self, site: int, name: str, count: int, dtype: DataType, scope: str) -> Storage:
        """The block's storage for one shared allocation, made by the first thread there."""
        found = self.storages.get(site)
        if found is None:
            found = allocate(name, count, dtype, scope)
            found.race = self.watch()
            self.storages[site] = found
        assert isinstance(found, Storage)  # the storages of allocation sites are these
        return found

    def outer_shared(self, key: int, handle: object) -> object:
        """Shared memory allocated outside the kernel: the same memory in every block (so
        what a kernel writes there stays), watched for races within this block."""
        if ("outer", key) not in self.storages:
            storage_of(handle).race = self.watch()
            self.storages[("outer", key)] = handle
        return handle

    def at_exit(self, thread: int, check: Callable[[], None]) -> None:
        """Runs check (which raises a Fault for what the thread left undone) when the thread
        returns."""
        self.exit_checks.setdefault(thread, []).append(check)

    def thread_exited(self, thread: int) -> None:
        for check in self.exit_checks.pop(thread, ()):
            try:
                check()
            except Fault as fault:
                raise in_thread(fault, self, thread) from None

    def finished(self) -> None:
        """Called once every thread of the block has returned."""

    def watch(self) -> RaceTracker:
        tracker = RaceTracker(self)
        self.trackers.append(tracker)
        return tracker

    def new_epoch(self) -> None:
        for tracker in self.trackers:
            tracker.reset()

    def release(self, thread: int) -> Arrival:
        """A release by the thread (an arrival at a barrier): its accesses so far, and what
        it knows, will be ordered before what a thread that acquires it does after."""
        era = self.eras.get(thread, 0) + 1
        self.eras[thread] = era
        return Arrival(thread, era, dict(self.known.get(thread, {})))

    def acquire(self, thread: int, clock: dict[int, int]) -> None:
        """The thread learns a clock that releases carried (see joined)."""
        known = self.known.setdefault(thread, {})
        for other, era in clock.items():
            if era > known.get(other, 0):
                known[other] = era

    def complete_named(self, arrivals: list[Arrival], waiters: list[int] | frozenset[int]) -> None:
        """A named barrier completed: each waiter learns what the arrivals released."""
        released = joined({}, arrivals)
        for thread in waiters:
            self.acquire(thread, released)

    def orders(self, earlier: int, era: int, later: int) -> bool:
        """Whether an access `earlier` made in its era `era` is ordered before what `later`
        does now by named barriers."""
        known = self.known.get(later)
        return known is not None and era < known.get(earlier, 0)

    def describe_thread(self, thread: int) -> str:
        return thread_name(split_linear(thread, self.dims), self.block_index)


class Arrival(NamedTuple):
    """A thread's release: its era bound (its accesses before are those of smaller eras) and
    the bounds it knew of other threads then."""

    thread: int
    era: int
    known: dict[int, int]


def joined(clock: dict[int, int], arrivals: list[Arrival]) -> dict[int, int]:
    """`clock` with what the arrivals released added (each thread's greatest bound), in place."""
    for arrival in arrivals:
        for other, era in (*arrival.known.items(), (arrival.thread, arrival.era)):
            if era > clock.get(other, 0):
                clock[other] = era
    return clock


def _same(a: Any, b: Any) -> bool:
    return bool(a == b) or (a != a and b != b)


def _tracker(handle: object) -> RaceTracker | None:
    tracker = storage_of(handle).race
    return tracker if isinstance(tracker, RaceTracker) else None


def shared_load(
    memory: memoryview, offset: int, handle: object, size: int, thread: int, site: int
) -> Any:
    tracker = _tracker(handle)
    if tracker is not None:
        tracker.read(offset * size, thread, site, storage_of(handle).name)
    return memory[offset]


def shared_store(
    memory: memoryview, offset: int, value: Any, handle: object, size: int, thread: int, site: int
) -> None:
    tracker = _tracker(handle)
    if tracker is not None:
        tracker.write(offset * size, thread, site, storage_of(handle).name, value, memory[offset])
    memory[offset] = value


def shared_vector_load(
    memory: memoryview,
    offsets: tuple,
    table: Any,
    handle: object,
    size: int,
    thread: int,
    site: int,
) -> tuple:
    values = [
        0 if offset is None else shared_load(memory, offset, handle, size, thread, site)
        for offset in offsets
    ]
    return tuple(table[v] for v in values) if table is not None else tuple(values)


def shared_vector_store(
    memory: memoryview,
    offsets: tuple,
    values: tuple,
    encode: Any,
    handle: object,
    size: int,
    thread: int,
    site: int,
) -> None:
    for offset, value in zip(offsets, values, strict=True):
        if offset is not None:
            stored = value if encode is None else encode(value)
            shared_store(memory, offset, stored, handle, size, thread, site)


def launch(
    kernel: Kernel, grid: tuple[int, int, int], dims: tuple[int, int, int], site: int
) -> None:
    """Runs kernel(bx, by, bz, tx, ty, tz, thread, block) for every block, then every thread."""
    check_extents(grid, dims, site)
    for bz in range(grid[2]):
        for by in range(grid[1]):
            for bx in range(grid[0]):
                block = BlockContext((bx, by, bz), dims)
                run_blocks([BlockRun(block, threads_of(kernel, block))])


def check_extents(grid: tuple[int, int, int], dims: tuple[int, int, int], site: int) -> None:
    if min(grid) < 0 or min(dims) < 0:
        raise Fault(site, f"kernel launched with a negative extent: grid {grid}, block {dims}")


def threads_of(kernel: Kernel, block: BlockContext) -> list[Thread]:
    """The block's threads, in the order of their linear index."""
    bx, by, bz = block.block_index
    x_dim, y_dim, z_dim = block.dims
    return [
        kernel(bx, by, bz, tx, ty, tz, tx + x_dim * (ty + y_dim * tz), block)
        for tz in range(z_dim)
        for ty in range(y_dim)
        for tx in range(x_dim)
    ]


class BlockRun:
    """One block's threads as the scheduler sees them: what each waits for (the request it
    yielded), the reply it gets when it goes on, those still live and those to run next."""

    __slots__ = ("block", "threads", "replies", "waiting", "live", "runnable")

    def __init__(self, block: BlockContext, threads: list[Thread]):
        self.block = block
        self.threads = threads
        self.replies: list[Any] = [None] * len(threads)
        self.waiting: dict[int, tuple] = {}
        self.live = set(range(len(threads)))
        self.runnable = list(range(len(threads)))

    def advance(self) -> None:
        """Runs each runnable thread to its next request, or to its end."""
        block, waiting, threads, replies = self.block, self.waiting, self.threads, self.replies
        for thread in self.runnable:
            try:
                waiting[thread] = threads[thread].send(replies[thread])
            except StopIteration:
                self.live.discard(thread)
                block.thread_exited(thread)
                if not self.live:
                    block.finished()
            except Fault as fault:
                raise in_thread(fault, block, thread) from None
        self.runnable = []

    def release(self, threads: list[int]) -> bool:
        for thread in threads:
            self.waiting.pop(thread, None)
        self.runnable = sorted({*self.runnable, *threads})
        return bool(threads)

    def resolve(self) -> bool:
        """Releases the threads a collective of the block lets go on: a warp's, an
        all-reduce, or `__syncthreads` once every live thread is there."""
        if not self.waiting:
            return False
        released = resolve_warps(self.waiting, self.replies)
        if not released:
            released = resolve_allreduce(self.waiting, self.replies, self.block)
        if not released:
            released = release_barrier(self.waiting, self.block)
        return self.release(released)

    def resolve_polls(self) -> bool:
        """Releases the threads whose polled condition now holds (replies stay None)."""
        return self.release(
            [t for t, request in self.waiting.items() if request[0] == POLL and request[2]()]
        )


def run_blocks(runs: list[BlockRun], resolve_group: Callable[[], bool] | None = None) -> None:
    """Runs the threads of blocks that run together (one, or a cluster's) until all have
    returned. When no thread can go on, in this order: each block's collectives (see
    BlockRun.resolve), the polled waits (mbarriers, the cluster barrier), then what the group
    resolves (the cluster barrier's phases); when nothing can, the blocks are stuck: an error
    (see stuck)."""
    while True:
        for run in runs:
            run.advance()
        if not any(run.waiting for run in runs):
            return
        progressed = False
        for run in runs:
            progressed = run.resolve() or progressed
        if progressed:
            continue
        for run in runs:
            progressed = run.resolve_polls() or progressed
        if progressed or (resolve_group is not None and resolve_group()):
            continue
        stuck(runs, "block" if resolve_group is None else "cluster")


def in_thread(fault: Fault, block: BlockContext, thread: int) -> Fault:
    where = block.describe_thread(thread)
    return fault if where in fault.message else fault_in(fault, where)


def resolve_warps(waiting: dict[int, tuple], replies: list[Any]) -> list[int]:
    """Resolves every warp collective whose participants have all arrived; returns them."""
    groups: dict[tuple[int, int], list[int]] = {}
    for thread, request in waiting.items():
        if request[0] in (SHUFFLE, ACTIVE_MASK, WARP_OP):
            groups.setdefault((thread // WARP_SIZE, request[1]), []).append(thread)
    released: list[int] = []
    for (_, _), members in groups.items():
        requests = {thread: waiting[thread] for thread in members}
        kind = requests[members[0]][0]
        if kind == ACTIVE_MASK:
            mask = sum(1 << (thread % WARP_SIZE) for thread in members)
            for thread in members:
                replies[thread] = mask
        elif kind == WARP_OP:
            _, site, resolve, _ = requests[members[0]]
            operands = {thread: requests[thread][3] for thread in members}
            for thread, reply in resolve(operands, site).items():
                replies[thread] = reply
        else:
            _shuffle(requests, replies)
        for thread in members:
            del waiting[thread]
        released.extend(members)
    return sorted(released)


def sync_warp(operands: dict[int, BlockContext], site: int) -> dict[int, None]:
    """__syncwarp, resolved once the warp's threads are there (a WARP_OP): a barrier among
    them, each lane's accesses before it ordered before what every lane does after (as a
    named barrier orders its threads; other warps' accesses still race)."""
    block = next(iter(operands.values()))
    lanes = sorted(operands)
    block.complete_named([block.release(lane) for lane in lanes], lanes)
    return dict.fromkeys(lanes)


def _shuffle(requests: dict[int, tuple], replies: list[Any]) -> None:
    """CUDA __shfl*_sync (see warp.shuffle_source)."""
    values = {thread % WARP_SIZE: request[3] for thread, request in requests.items()}
    for thread, (_, _, kind, value, amount, width) in requests.items():
        source = shuffle_source(kind, thread % WARP_SIZE, amount, width)
        replies[thread] = values.get(source, value)


def resolve_allreduce(
    waiting: dict[int, tuple], replies: list[Any], block: BlockContext
) -> list[int]:
    """When every live thread waits at one all-reduce, combine within each group of threads
    that share their non-reduced coordinates, in thread order."""
    requests = list(waiting.items())
    if not requests or any(request[0] != ALLREDUCE for _, request in requests):
        return []
    if len({request[1] for _, request in requests}) != 1:
        return []
    x_dim, y_dim, _ = block.dims
    groups: dict[tuple[int, int, int], list[int]] = {}
    for thread, request in requests:
        x, y, z = thread % x_dim, thread // x_dim % y_dim, thread // (x_dim * y_dim)
        reduced = request[4]
        key = (
            0 if "threadIdx.x" in reduced else x,
            0 if "threadIdx.y" in reduced else y,
            0 if "threadIdx.z" in reduced else z,
        )
        groups.setdefault(key, []).append(thread)
    for members in groups.values():
        _, _, _, _, _, combine, identity = waiting[members[0]]
        result = tuple(identity)
        for thread in sorted(members):
            values, condition = waiting[thread][2], waiting[thread][3]
            if condition:
                result = combine(*result, *values)
        for thread in members:
            replies[thread] = result
    released = sorted(waiting)
    waiting.clear()
    return released


def write_results(results: tuple, outputs: tuple[tuple[object, DataType], ...]) -> None:
    """Stores each all-reduce result in element 0 of its output buffer."""
    for value, (handle, dtype) in zip(results, outputs, strict=True):
        memory, base = view_of(handle, dtype)
        narrow = NARROW.get(str(dtype))
        memory[base] = narrow.encode(value) if narrow is not None else value


def release_barrier(waiting: dict[int, tuple], block: BlockContext) -> list[int]:
    """When every waiting thread of the block is at one `__syncthreads`: a new epoch, and
    all of them go on."""
    sites = {(request[0], request[1]) for request in waiting.values()}
    if len(sites) != 1 or next(iter(sites))[0] != BARRIER:
        return []
    block.new_epoch()
    released = sorted(waiting)
    waiting.clear()
    return released


def stuck(runs: list[BlockRun], scope: str = "block") -> None:
    """The error when no thread of the blocks can go on. Where some poll (an mbarrier, the
    cluster barrier), they are deadlocked: the error is at the first poll, naming what it
    waits for, with a note at each other place threads wait (the other waits, at a barrier
    or a collective, need the polling threads too). Else the threads of a block wait at
    different barriers or collectives."""
    waits = [(run, t, request) for run in runs for t, request in sorted(run.waiting.items())]
    polls = [wait for wait in waits if wait[2][0] == POLL]
    if not polls:
        run = next(run for run in runs if run.waiting)
        first = min(run.waiting)
        places = {(request[0], request[1]) for request in run.waiting.values()}
        raise Fault(
            run.waiting[first][1],
            "threads of a block wait at different barriers or collectives "
            f"({len(run.waiting)} threads waiting at {len(places)} places); "
            "barriers must be reached by every thread",
        )
    run, thread, request = polls[0]
    where: dict[int, list[tuple[BlockRun, int, tuple]]] = {}
    for wait in waits:
        where.setdefault(wait[2][1], []).append(wait)
    notes = []
    for site, here in where.items():
        if site == request[1]:
            continue
        blocks = sorted({wait[0].block.block_index for wait in here})
        in_blocks = f" (in block{'s' if len(blocks) > 1 else ''} {', '.join(map(str, blocks))})"
        other = here[0][2]
        what = f"for {other[3]()}" if other[0] == POLL else "at a barrier"
        if other[0] not in (POLL, BARRIER):
            what = "at a warp collective"
        notes.append(
            (site, f"{_threads(len(here))} here{in_blocks if len(runs) > 1 else ''}, {what}")
        )
    raise Fault(
        request[1],
        f"every thread of the {scope} waits and none can go on: this wait (in "
        f"{run.block.describe_thread(thread)}) is for {request[3]()} ({len(waits)} threads "
        "waiting)",
        tuple(notes),
    )


def _threads(count: int) -> str:
    return "1 thread waits" if count == 1 else f"{count} threads wait"

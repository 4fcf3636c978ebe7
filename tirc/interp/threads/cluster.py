"""Thread-block clusters in the thread model (tirc.ir.cluster): the blocks of one cluster run
together, every thread of all of them in one scheduler round, so that the cluster barrier and
distributed shared memory mean what they do on sm_90.

The cluster barrier (`barrier.cluster.arrive` then `.wait`) completes a phase when every thread
of the cluster that has not exited has arrived; a wait returns once the phase its thread arrived
in has completed. An arriving thread goes no further until the whole cluster has arrived (as
late as the hardware may let it go on), so the phase's completion orders every access made
before an arrive before every access made after a wait, and the race trackers of all the
cluster's blocks start afresh; only when holding the arrivers would stall the cluster do they
go on early, and then the trackers keep what they saw (a race may then be reported that the
barrier would have ordered). Each shared array is watched twice: thread by thread within
its block (what `__syncthreads` resets), and block by block (its own threads' accesses and
its peers' through `mapa`), which only the cluster barrier resets: a block's barrier does not
order its peers. Reaching the shared memory of a block whose threads have all returned is an
error. A multicast TMA load lands in each block of its mask as a load issued there would.
When no thread of the cluster can go on, the error is at a wait, naming what it waits for and
which blocks have threads that have not arrived. Shared memory a kernel function
allocates before its launches is each block's own here (the blocks run at once).
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import numpy as np

from tirc.interp.fault import Fault
from tirc.interp.memory.storage import Pointer, Storage, storage_of
from tirc.interp.threads import mbarrier
from tirc.interp.threads.scheduler import (
    POLL,
    BlockContext,
    BlockRun,
    RaceTracker,
    Thread,
    check_extents,
    run_blocks,
    threads_of,
)
from tirc.ir.cluster import Dims, grid_remainder

# an arriving thread held until the cluster has arrived: (ARRIVE, site)
ARRIVE = 6


@dataclass(eq=False)
class ClusterContext:
    """What the blocks of one cluster share: the barrier's phase and who has arrived in it."""

    dims: Dims
    blocks: list[ClusterBlock] = field(default_factory=list)  # by rank
    phase: int = 0
    arrived: dict[tuple[int, int], int] = field(default_factory=dict)  # (rank, thread) -> site
    waiting_phase: dict[tuple[int, int], int] = field(default_factory=dict)  # arrived, not waited
    overlapped: bool = False  # an arriver went on before the phase completed
    exited: set[tuple[int, int]] = field(default_factory=set)

    def describe(self) -> str:
        missing = [
            (block.rank, thread)
            for block in self.blocks
            for thread in sorted(block.members)
            if (block.rank, thread) not in self.arrived and (block.rank, thread) not in self.exited
        ]
        ranks = sorted({rank for rank, _ in missing})
        where = ", ".join(str(self.blocks[rank].block_index) for rank in ranks[:4])
        more = f" and {len(ranks) - 4} more" if len(ranks) > 4 else ""
        return (
            f"the cluster barrier's phase {self.phase}: {len(self.arrived)} threads arrived, "
            f"{len(missing)} have not (in blocks {where}{more})"
        )


class ClusterBlock(BlockContext):
    """A block that runs in a cluster: its rank there, the cluster it shares, and, beside each
    shared array's tracker of its own threads, one of the blocks that reach the array (its own
    and peers through `mapa`), which only the cluster barrier resets."""

    def __init__(self, block_index: Dims, dims: Dims, cluster: ClusterContext, rank: int):
        super().__init__(block_index, dims)
        self.cluster = cluster
        self.rank = rank
        self.members = frozenset(range(dims[0] * dims[1] * dims[2]))
        self.finished_all = False  # every thread has returned: its shared memory is gone
        # the last access a peer made to its shared memory: (the barrier's phase then, site,
        # the peer's rank); one in the current phase is not ordered before the block returns
        self.peer_access: tuple[int, int, int] | None = None
        self.peers = _Blocks(self)
        self.cross: list[RaceTracker] = []

    def watch(self) -> RaceTracker:
        cross = RaceTracker(self.peers)
        self.cross.append(cross)
        tracker = ClusterTracker(self, cross)
        self.trackers.append(tracker)
        return tracker

    def outer_shared(self, key: int, handle: object) -> object:
        """Shared memory allocated outside the kernel (at a kernel function's top, before its
        launches): this block's own, as on the GPU, since the cluster's blocks run at once
        (zeros at the start; what the kernel writes there does not stay)."""
        found = self.storages.get(("outer", key))
        if not isinstance(found, Storage):
            found = _fresh_shared(self, storage_of(handle), ("outer", key))
        if isinstance(handle, Pointer):
            return Pointer(found, handle.byte_offset, handle.dtype)
        return found

    def cluster_epoch(self) -> None:
        for tracker in (*self.trackers, *self.cross):
            tracker.reset()

    def thread_exited(self, thread: int) -> None:
        super().thread_exited(thread)
        self.cluster.exited.add((self.rank, thread))

    def finished(self) -> None:
        """Every thread has returned: a peer's access to the block's shared memory since the
        last cluster barrier is not ordered before its shared memory goes."""
        self.finished_all = True
        access = self.peer_access
        if access is not None and access[0] == self.cluster.phase:
            _, site, rank = access
            peer = self.cluster.blocks[rank].block_index
            raise Fault(
                site,
                f"block {peer} reaches the shared memory of block {self.block_index}, whose "
                "threads may all return before it does: no cluster barrier orders this access "
                "before they return",
            )


class _Blocks(BlockContext):
    """How a cross-block tracker names who touched an element: a block, by its rank."""

    def __init__(self, owner: ClusterBlock):
        super().__init__(owner.block_index, owner.dims)
        self.owner = owner

    def describe_thread(self, thread: int) -> str:
        return f"a thread of block {self.owner.cluster.blocks[thread].block_index}"


class ClusterTracker(RaceTracker):
    """A shared array's tracker of its block's own threads that also counts each access as
    its block's in the array's cross-block tracker."""

    __slots__ = ("cross", "rank")

    def __init__(self, block: ClusterBlock, cross: RaceTracker):
        super().__init__(block)
        self.cross = cross
        self.rank = block.rank

    def read(self, address: int, thread: int, site: int, name: str) -> None:
        super().read(address, thread, site, name)
        self.cross.read(address, self.rank, site, name)

    def write(self, address: int, thread: int, site: int, name: str, value: Any, old: Any) -> None:
        super().write(address, thread, site, name, value, old)
        self.cross.write(address, self.rank, site, name, value, old)

    def read_async(self, address: int, thread: int, site: int, name: str) -> None:
        """A wgmma's read: pending here until it retires, and a read of the block's in the
        cross-block tracker (which only a cluster barrier resets) at its issue and again at its
        retirement."""
        super().read_async(address, thread, site, name)
        self.cross.read(address, self.rank, site, name)

    def retire(self, address: int, thread: int, site: int) -> None:
        """The read is over: the block's read of that moment across blocks too."""
        super().retire(address, thread, site)
        self.cross.record_read(address, self.rank, site)


class PeerTracker(RaceTracker):
    """A peer block's shared array as another block's threads reach it through `mapa`: only
    its cross-block tracker sees them, as their block's accesses."""

    __slots__ = ("target", "rank", "owner")

    def __init__(self, target: ClusterTracker, rank: int):
        super().__init__(target.block)
        self.target = target
        self.rank = rank
        self.owner = target.block

    def _check(self, site: int, name: str) -> None:
        if not isinstance(self.owner, ClusterBlock):
            return
        self.owner.peer_access = (self.owner.cluster.phase, site, self.rank)
        if self.owner.finished_all:
            raise Fault(
                site,
                f"'{name}' is gone: every thread of block {self.owner.block_index} has "
                "returned (a cluster barrier before they return keeps it)",
            )

    def read(self, address: int, thread: int, site: int, name: str) -> None:
        self._check(site, name)
        self.target.cross.read(address, self.rank, site, name)

    def write(self, address: int, thread: int, site: int, name: str, value: Any, old: Any) -> None:
        self._check(site, name)
        if self.target.pending:  # a wgmma of the block may still read it
            writes = f"{self.target.cross.block.describe_thread(self.rank)} writes"
            self.target.check_pending(address, site, writes, name)
        self.target.cross.write(address, self.rank, site, name, value, old)


def launch_cluster(
    kernel: Callable[..., Thread],
    grid: Dims,
    dims: Dims,
    site: int,
    cluster: Dims,
) -> None:
    """Runs the kernel cluster by cluster, the threads of each cluster's blocks together
    (tirc.interp.threads.scheduler.run_blocks), the cluster barrier's phases resolved when
    no thread can go on otherwise (see resolve_phase)."""
    check_extents(grid, dims, site)
    reason = grid_remainder(grid, cluster)
    if reason is not None:
        shape = " x ".join(map(str, cluster))
        raise Fault(site, f"the kernel runs in clusters of {shape} blocks, but {reason}")
    cx, cy, cz = cluster
    for bz0 in range(0, grid[2], cz):
        for by0 in range(0, grid[1], cy):
            for bx0 in range(0, grid[0], cx):
                context = ClusterContext(cluster)
                runs = []
                for rank in range(cx * cy * cz):
                    index = (bx0 + rank % cx, by0 + rank // cx % cy, bz0 + rank // (cx * cy))
                    block = ClusterBlock(index, dims, context, rank)
                    context.blocks.append(block)
                    runs.append(BlockRun(block, threads_of(kernel, block)))
                run_blocks(runs, partial(resolve_phase, runs, context))


def resolve_phase(runs: list[BlockRun], cluster: ClusterContext) -> bool:
    """Completes the barrier's phase once every live thread has arrived; else lets the held
    arrivers go on (the phase stays open: the race trackers keep what they saw)."""
    live = [(rank, thread) for rank, run in enumerate(runs) for thread in run.live]
    if cluster.arrived and all(key in cluster.arrived for key in live):
        cluster.phase += 1
        cluster.arrived.clear()
        if not cluster.overlapped:
            for block in cluster.blocks:
                block.cluster_epoch()
        cluster.overlapped = False
        for run in runs:
            run.release([t for t, request in run.waiting.items() if request[0] == ARRIVE])
        return True
    held = False
    for run in runs:
        held = (
            run.release([t for t, request in run.waiting.items() if request[0] == ARRIVE]) or held
        )
    cluster.overlapped = cluster.overlapped or held
    return held


def _cluster(block: BlockContext | None, site: int, what: str) -> ClusterBlock:
    if not isinstance(block, ClusterBlock):
        raise Fault(site, f"{what} runs only in a GPU kernel")
    return block


def arrive(block: BlockContext | None, thread: int, site: int) -> Generator[tuple, None, None]:
    """barrier.cluster.arrive: counts the thread in the current phase, then holds it (see the
    module's docstring)."""
    own = _cluster(block, site, "T.ptx_barrier_cluster_arrive")
    cluster, key = own.cluster, (own.rank, thread)
    if key in cluster.waiting_phase:
        raise Fault(
            site,
            "T.ptx_barrier_cluster_arrive: this thread arrives again before it waited for "
            "the phase it arrived in",
        )
    cluster.arrived[key] = site
    cluster.waiting_phase[key] = cluster.phase
    yield (ARRIVE, site)


def wait(block: BlockContext | None, thread: int, site: int) -> Generator[tuple, None, None]:
    """barrier.cluster.wait: until the phase the thread arrived in has completed."""
    own = _cluster(block, site, "T.ptx_barrier_cluster_wait")
    cluster, key = own.cluster, (own.rank, thread)
    phase = cluster.waiting_phase.pop(key, None)
    if phase is None:
        raise Fault(
            site,
            "T.ptx_barrier_cluster_wait: this thread waits without having arrived "
            "(T.ptx_barrier_cluster_arrive first)",
        )
    if cluster.phase > phase:
        return
    yield (POLL, site, lambda: cluster.phase > phase, cluster.describe)


def map_shared(handle: object, rank: int, block: BlockContext | None, site: int) -> object:
    """mapa: the peer block `rank`'s copy of the shared array `handle` points into, at the same
    offset; what this block's threads do through it is race-checked there."""
    what = "T.ptx_map_shared_cluster"
    own = _cluster(block, site, what)
    peer = _peer(own, rank, site, what)
    if peer is own:
        return handle
    found = _peer_storage(own, peer, storage_of(handle), site, what)
    tracker = found.race
    assert isinstance(tracker, ClusterTracker)  # a cluster block's shared arrays have one
    mapped = Storage(
        f"{found.name} of block {peer.block_index}", found.array, found.scope, found.dtype
    )
    mapped.race = PeerTracker(tracker, own.rank)
    return _at(handle, mapped)


def tma_load_multicast(
    copy: mbarrier.Copy,
    barrier_handle: object,
    barrier_index: int,
    mask: int,
    thread: int,
    block: BlockContext | None,
    site: int,
) -> None:
    """cp.async.bulk.tensor's .multicast::cluster: the box lands in the shared memory of each
    block of the mask at the same offset, completing its bytes on that block's barrier of the
    same address (each as tirc.interp.threads.mbarrier.tma_load does it for its block)."""
    what = "T.ptx_tma_load_multicast"
    own = _cluster(block, site, what)
    size = len(own.cluster.blocks)
    if not 0 < mask < 1 << size:
        raise Fault(
            site,
            f"{what}: the mask {mask:#x} must name some of the cluster's {size} blocks "
            f"(bits 0 to {size - 1})",
        )
    for rank in range(size):
        if not mask >> rank & 1:
            continue
        peer = _peer(own, rank, site, what)
        if peer is own:
            mbarrier.tma_load(copy, barrier_handle, barrier_index, thread, own, site)
            continue
        shared = _peer_storage(own, peer, storage_of(copy.shared), site, what)
        barrier = _peer_storage(own, peer, storage_of(barrier_handle), site, what)
        # no thread of the peer issued it: none of its reads of the box are exempt
        landing = copy._replace(shared=_at(copy.shared, shared))
        mbarrier.tma_load(landing, _at(barrier_handle, barrier), barrier_index, -1, peer, site)


def _peer(own: ClusterBlock, rank: int, site: int, what: str) -> ClusterBlock:
    blocks = own.cluster.blocks
    if not 0 <= rank < len(blocks):
        raise Fault(
            site, f"{what}: rank {rank} is not a block of the cluster (0 to {len(blocks) - 1})"
        )
    return blocks[rank]


def _peer_storage(
    own: ClusterBlock, peer: ClusterBlock, storage: Storage, site: int, what: str
) -> Storage:
    """The peer's storage of the shared array this block holds as `storage`."""
    key = next((k for k, v in own.storages.items() if v is storage), None)
    if key is None or storage.scope not in ("shared", "shared.dyn"):
        raise Fault(site, f"{what} reaches a shared array of the block, and this is not one")
    found = peer.storages.get(key)
    if not isinstance(found, Storage):  # the peer's threads have not reached it yet
        found = _fresh_shared(peer, storage, key)
    return found


def _at(handle: object, storage: Storage) -> object:
    """`storage` at the offset `handle` has into its own."""
    if isinstance(handle, Pointer):
        return Pointer(storage, handle.byte_offset, handle.dtype)
    return storage


def _fresh_shared(block: BlockContext, like: Storage, key: object) -> Storage:
    """The block's storage for the shared array `key`, shaped as `like`, zeros, watched."""
    found = Storage(like.name, np.zeros_like(like.array), like.scope, like.dtype)
    found.race = block.watch()
    block.storages[key] = found
    return found

"""Named barriers in the thread model (bar.sync / bar.arrive; tirc.ir.named_barrier), exactly
as the PTX ISA has them.

`bar` is executed by whole warps (its `.aligned` form): a warp's lanes reach it together (a
warp collective, so the model never splits a warp between two instances), and the warp
counts as the warp size, 32, whatever lanes it has left. Barrier `id` of a block counts those
arrivals: an instance completes when they reach its count; `sync` then waits for that (a
scheduler POLL), `arrive` does not. Every arrival at one instance must give the same count,
and the lanes of a warp the same id and count (errors at the arrival). When an instance
completes, the shared memory accesses each arriving thread made before its arrival are
ordered before what each thread that waited there does next (BlockContext.complete_named):
those threads no longer race, while the accesses of threads that did not take part, or that
only arrived, still race as before. A barrier that can never complete leaves its waiters
stuck: the scheduler reports the deadlock at the wait.

    T.ptx_bar_sync(1, 128)    ->  (yield from sync(1, 128, _tid, _block, site))
    T.ptx_bar_arrive(1, 128)  ->  (yield from arrive(1, 128, _tid, _block, site))
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass, field
from typing import Any

from tirc.interp.fault import Fault
from tirc.interp.semantics.warp import WARP_SIZE
from tirc.interp.threads.scheduler import POLL, WARP_OP, Arrival, BlockContext, in_thread
from tirc.ir.named_barrier import id_problem


@dataclass
class NamedBarrier:
    """One barrier of a block: the instance in progress (its count, the threads arrived so
    far, the warp-size arrivals they count as, the threads waiting) and how many instances
    have completed."""

    number: int
    count: int = 0
    site: int = -1  # where the instance's first arrival was
    arrived: int = 0
    arrivals: list[Arrival] = field(default_factory=list)
    waiters: list[int] = field(default_factory=list)
    completed: int = 0

    def describe(self) -> str:
        return f"named barrier {self.number}: {self.arrived} of {self.count} threads have arrived"


def _barrier(number: int, block: BlockContext, site: int, what: str) -> NamedBarrier:
    problem = id_problem(int(number))
    if problem is not None:
        raise Fault(site, f"{what}: {problem}")
    key = ("named barrier", int(number))
    found = block.storages.get(key)
    if found is None:
        found = block.storages[key] = NamedBarrier(int(number))
    assert isinstance(found, NamedBarrier)  # the key is this module's
    return found


def _arrive_warp(operands: dict[int, tuple[Any, ...]], site: int) -> dict[int, int]:
    """The arrival of a warp's lanes (a WARP_OP resolved once they are all there); each lane's
    reply is the instance it joined. A fault names the warp's first lane."""
    lanes = sorted(operands)
    block = operands[lanes[0]][3]
    try:
        return _arrive_lanes(operands, lanes, block, site)
    except Fault as fault:
        raise in_thread(fault, block, lanes[0]) from None


def _arrive_lanes(
    operands: dict[int, tuple[Any, ...]], lanes: list[int], block: BlockContext, site: int
) -> dict[int, int]:
    number, count, waits, _ = operands[lanes[0]]
    what = "T.ptx_bar_sync" if waits else "T.ptx_bar_arrive"
    if any(operands[lane][:2] != (number, count) for lane in lanes):
        raise Fault(
            site,
            f"{what}: the lanes of a warp give different barrier ids or counts: a warp "
            "executes the barrier as one (every lane the same id and count)",
        )
    barrier = _barrier(number, block, site, what)
    if barrier.arrivals and count != barrier.count:
        raise Fault(
            site,
            f"{what}: named barrier {barrier.number} is counting {barrier.count} threads "
            f"({barrier.arrived} have arrived), not {count}: every arrival at one barrier "
            "must give the same thread count",
            ((barrier.site, f"an arrival counting {barrier.count} threads"),),
        )
    if not barrier.arrivals:
        barrier.count, barrier.site = count, site
    instance = barrier.completed
    barrier.arrivals += [block.release(lane) for lane in lanes]
    if waits:
        barrier.waiters += lanes
    barrier.arrived += WARP_SIZE  # the warp size, whatever lanes the warp has left
    if barrier.arrived >= barrier.count:
        block.complete_named(barrier.arrivals, barrier.waiters)
        barrier.arrived, barrier.arrivals, barrier.waiters = 0, [], []
        barrier.completed += 1
    return dict.fromkeys(lanes, instance)


def arrive(
    number: int, count: int, thread: int, block: BlockContext, site: int
) -> Generator[tuple[Any, ...], Any, None]:
    """bar.arrive: the warp's arrival, without a wait."""
    yield (WARP_OP, site, _arrive_warp, (number, count, False, block))


def sync(
    number: int, count: int, thread: int, block: BlockContext, site: int
) -> Generator[tuple[Any, ...], Any, None]:
    """bar.sync: the warp's arrival, then a wait until its instance completes (at once when
    the warp's arrival completed it)."""
    instance = yield (WARP_OP, site, _arrive_warp, (number, count, True, block))
    barrier = _barrier(number, block, site, "T.ptx_bar_sync")
    if barrier.completed <= instance:
        yield (POLL, site, lambda: barrier.completed > instance, barrier.describe)

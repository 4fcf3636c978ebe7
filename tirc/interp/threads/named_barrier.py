"""Named barriers in the thread model (bar.sync / bar.arrive; tirc.ir.named_barrier), exactly
as the PTX ISA has them.

Barrier `id` of a block counts arrivals: `arrive` adds one and goes on, `sync` adds one and
waits (a scheduler POLL) until the instance completes, when `count` arrivals have been made;
the barrier then starts a new instance. Every arrival at one instance must give the same
count (a mismatch is an error at the arrival). When it completes, the shared memory accesses
each arriving thread made before its arrival are ordered before what each thread that waited
there does next (BlockContext.complete_named): those threads no longer race, while the accesses
of threads that did not take part, or that only arrived, still race as before. A barrier that
can never complete leaves its waiters stuck: the scheduler reports the deadlock at the wait.

    T.ptx_bar_sync(1, 128)    ->  (yield from sync(1, 128, _tid, _block, site))
    T.ptx_bar_arrive(1, 128)  ->  arrive(1, 128, _tid, _block, site)
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass, field
from typing import Any

from tirc.interp.fault import Fault
from tirc.interp.threads.scheduler import POLL, Arrival, BlockContext
from tirc.ir.named_barrier import id_problem


@dataclass
class NamedBarrier:
    """One barrier of a block: the instance in progress (its count, the arrivals made, the
    threads waiting) and how many instances have completed."""

    number: int
    count: int = 0
    site: int = -1  # where the instance's first arrival was
    arrivals: list[Arrival] = field(default_factory=list)
    waiters: list[int] = field(default_factory=list)
    completed: int = 0

    def describe(self) -> str:
        return (
            f"named barrier {self.number}: {len(self.arrivals)} of {self.count} threads have "
            f"arrived ({len(self.waiters)} waiting)"
        )


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


def _arrive(
    barrier: NamedBarrier, count: int, thread: int, block: BlockContext, site: int, waits: bool
) -> None:
    what = "T.ptx_bar_sync" if waits else "T.ptx_bar_arrive"
    if barrier.arrivals and count != barrier.count:
        raise Fault(
            site,
            f"{what}: named barrier {barrier.number} is counting {barrier.count} threads "
            f"({len(barrier.arrivals)} have arrived), not {count}: every arrival at one "
            "barrier must give the same thread count",
            ((barrier.site, f"an arrival counting {barrier.count} threads"),),
        )
    if not barrier.arrivals:
        barrier.count, barrier.site = count, site
    barrier.arrivals.append(block.arrive_named(thread))
    if waits:
        barrier.waiters.append(thread)
    if len(barrier.arrivals) == barrier.count:
        block.complete_named(barrier.arrivals, barrier.waiters)
        barrier.arrivals, barrier.waiters = [], []
        barrier.completed += 1


def arrive(number: int, count: int, thread: int, block: BlockContext, site: int) -> None:
    """bar.arrive: an arrival that does not wait."""
    barrier = _barrier(number, block, site, "T.ptx_bar_arrive")
    _arrive(barrier, count, thread, block, site, waits=False)


def sync(
    number: int, count: int, thread: int, block: BlockContext, site: int
) -> Generator[tuple[Any, ...], None, None]:
    """bar.sync: an arrival, then a wait until the instance completes (at once when this
    arrival completes it)."""
    barrier = _barrier(number, block, site, "T.ptx_bar_sync")
    instance = barrier.completed
    _arrive(barrier, count, thread, block, site, waits=True)
    if barrier.completed == instance:
        yield (POLL, site, lambda: barrier.completed > instance, barrier.describe)

"""compute_at at a mark instead of a loop: the root mark leaves the block where it is, the
inline mark inlines it (through the registered inlining primitive), as TVM does."""

from __future__ import annotations

from tirc.schedule import primitives
from tirc.schedule.errors import ScheduleError
from tirc.schedule.location import LocationMark
from tirc.schedule.schedule import Schedule
from tirc.schedule.sref import SRef


def apply_mark(sch: Schedule, block: SRef, mark: LocationMark, inline_op: str) -> None:
    if mark is LocationMark.ROOT:
        return  # already computed at the root of its scope
    entry = primitives.by_op(inline_op)
    if entry is None:
        raise ScheduleError(f"the inline mark needs {inline_op}, which is not available", block)
    entry.apply(sch, block=block)

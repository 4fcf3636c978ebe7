"""The buffers a block reads or writes, picked by their position in `T.reads`/`T.writes`,
as plans name them (`buffer_index` with `buffer_index_type` 0 for reads, 1 for writes).
"""

from __future__ import annotations

import enum

from tirc.ir.buffer import Buffer, BufferRegion
from tirc.schedule.errors import ScheduleError
from tirc.schedule.schedule import describe
from tirc.schedule.sref import SRef


class AccessKind(enum.Enum):
    READ = 0
    WRITE = 1

    @property
    def word(self) -> str:
        return "read" if self is AccessKind.READ else "write"


def access_kind(value: object, block: SRef) -> AccessKind:
    """A plan's buffer_index_type: 0 / "read" or 1 / "write"."""
    table: dict[object, AccessKind] = {0: AccessKind.READ, 1: AccessKind.WRITE}
    table.update({"read": AccessKind.READ, "write": AccessKind.WRITE})
    kind = table.get(value) if isinstance(value, (int, str)) else None
    if kind is None:
        raise ScheduleError(f"buffer_index_type is 0 (read) or 1 (write), not {value!r}", block)
    return kind


def nth_buffer(block: SRef, index: object, kind: AccessKind) -> Buffer:
    """The buffer of the block's `index`-th read or write region."""
    regions = block.block.reads if kind is AccessKind.READ else block.block.writes
    count = len(regions)
    if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < count:
        raise ScheduleError(
            f"{describe(block)} has {count} {kind.word} region(s), so the buffer index must "
            f"be in [0, {count}), but it is {index!r}",
            block,
        )
    return regions[index].buffer


def region_of(regions: tuple[BufferRegion, ...], buffer: Buffer) -> BufferRegion | None:
    """The region of `buffer` among `regions` (a block lists each buffer at most once)."""
    for region in regions:
        if region.buffer is buffer:
            return region
    return None

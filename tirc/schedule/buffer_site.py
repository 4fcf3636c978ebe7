"""Where a buffer is defined: the block that allocates it (or views it by match_buffer), found
by climbing from a block that uses it. Function parameters have no defining block.
"""

from __future__ import annotations

from tirc.ir.buffer import Buffer
from tirc.schedule.errors import ScheduleError
from tirc.schedule.sref import SRef


def defining_site(block: SRef, buffer: Buffer) -> tuple[SRef | None, bool]:
    """(the defining block, whether it allocates the buffer); (None, False) for a parameter."""
    node: SRef | None = block
    while node is not None:
        if node.is_block:
            if any(item is buffer for item in node.block.alloc_buffers):
                return node, True
            if any(match.buffer is buffer for match in node.block.match_buffers):
                return node, False
        node = node.parent
    return None, False


def allocation_site(block: SRef, buffer: Buffer) -> SRef:
    """The block allocating `buffer`; refuses parameters and match_buffer views."""
    site, allocated = defining_site(block, buffer)
    if site is None or not allocated:
        raise ScheduleError(
            f"the buffer {buffer.name} is not allocated by a block: it is a function "
            "parameter or a match_buffer view, whose storage the schedule cannot change",
            block,
        )
    return site

"""unsafe_hide_buffer_access: drop some of a block's declared read or write regions, so that
dependence analysis no longer sees them (unsafe: the accesses still happen).

    T.reads(A[vi], B[vi])    →    T.reads(B[vi])      (buf_type "read", indices [0])
"""

from __future__ import annotations

import dataclasses

from tirc.schedule.errors import ScheduleError
from tirc.schedule.primitives import primitive
from tirc.schedule.schedule import Schedule, describe
from tirc.schedule.signature import Kind, Param, Signature
from tirc.schedule.sref import SRef


@primitive(
    Signature(
        "unsafe_hide_buffer_access",
        "UnsafeHideBufferAccess",
        inputs=(
            Param("block", Kind.BLOCK),
            Param("buf_type", Kind.STR),
            Param("buf_index_array", Kind.INTS),
        ),
        doc="Remove read or write regions (by index) from a block's declared accesses.",
    )
)
def unsafe_hide_buffer_access(
    sch: Schedule, block: SRef, buf_type: str, buf_index_array: list[int]
) -> None:
    state = sch.state_owning(block)
    node = block.block
    regions = {"read": node.reads, "write": node.writes}.get(buf_type)
    if regions is None:
        raise ScheduleError(f"buf_type is 'read' or 'write', not {buf_type!r}", block)
    hidden = set()
    for index in buf_index_array:
        if not (isinstance(index, int) and 0 <= index < len(regions)):
            raise ScheduleError(
                f"{describe(block)} has {len(regions)} {buf_type} region(s), so the indices "
                f"to hide must be in [0, {len(regions)}), but one is {index!r}",
                block,
            )
        hidden.add(index)
    kept = tuple(region for position, region in enumerate(regions) if position not in hidden)
    if buf_type == "read":
        new = dataclasses.replace(node, reads=kept)
    else:
        new = dataclasses.replace(node, writes=kept)
    state.replace(block, new, {node: new})

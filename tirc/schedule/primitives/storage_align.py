"""storage_align: ask that a dimension of a buffer a block writes be padded so its stride is
`factor * k + offset` (to avoid bank conflicts); recorded as the block annotation
`buffer_dim_align`, a list of (buffer_index, axis, factor, offset), for lowering to apply.

    with T.sblock("B"):    →    with T.sblock("B"):
                                    T.sblock_attr({"buffer_dim_align": [[0, 0, 128, 1]]})
"""

from __future__ import annotations

import dataclasses
from typing import TypeGuard

from tirc.schedule.buffer_access import AccessKind, nth_buffer
from tirc.schedule.buffer_site import allocation_site
from tirc.schedule.errors import ScheduleError
from tirc.schedule.primitives import primitive
from tirc.schedule.schedule import Schedule, describe
from tirc.schedule.signature import Kind, Param, Signature
from tirc.schedule.sref import SRef

KEY = "buffer_dim_align"


@primitive(
    Signature(
        "storage_align",
        "StorageAlign",
        inputs=(Param("block", Kind.BLOCK),),
        attrs=(
            Param("buffer_index", Kind.INT),
            Param("axis", Kind.INT),
            Param("factor", Kind.INT),
            Param("offset", Kind.INT),
        ),
        doc="Pad a dimension of the buffer the block writes to stride factor * k + offset.",
    )
)
def storage_align(
    sch: Schedule, block: SRef, buffer_index: int, axis: int, factor: int, offset: int
) -> None:
    state = sch.state_owning(block)
    buffer = nth_buffer(block, buffer_index, AccessKind.WRITE)
    if factor <= 0:
        raise ScheduleError(
            f"the factor of storage_align must be positive, but it is {factor}", block
        )
    ndim = buffer.ndim
    if not -ndim <= axis < ndim:
        raise ScheduleError(
            f"the buffer {buffer.name} has {ndim} dimension(s), so the axis must be in "
            f"[{-ndim}, {ndim}), but it is {axis}",
            block,
        )
    axis = axis + ndim if axis < 0 else axis
    allocation_site(block, buffer)
    entries = _existing(block)
    entry = (buffer_index, axis, factor, offset)
    for position, item in enumerate(entries):
        if item[0] == buffer_index and item[1] == axis:
            entries[position] = entry
            break
    else:
        entries.append(entry)
    node = block.block
    new = dataclasses.replace(node, annotations=node.annotations.set(KEY, tuple(entries)))
    state.replace(block, new, {node: new})


def _existing(block: SRef) -> list[tuple[int, ...]]:
    """The block's current alignment entries; refuses an annotation of another shape."""
    annotations = block.block.annotations
    if KEY not in annotations:
        return []
    value = annotations.get(KEY)
    if isinstance(value, tuple):
        entries = [item for item in value if _is_entry(item)]
        if len(entries) == len(value):
            return entries
    raise ScheduleError(
        f"the annotation {KEY} of {describe(block)} must be a list of "
        f"[buffer_index, axis, factor, offset] integer lists, but it is {value!r}",
        block,
    )


def _is_entry(item: object) -> TypeGuard[tuple[int, ...]]:
    """`(buffer_index, axis, factor, offset)`, four integers."""
    return (
        isinstance(item, tuple)
        and len(item) == 4
        and all(isinstance(x, int) and not isinstance(x, bool) for x in item)
    )

"""read_at: copy the part of a buffer the blocks under a loop read in one iteration of it
(the union of their regions, as intervals) into a cache in another storage scope, before the
first child of the loop's body that reads it; that child and every later one read the cache.
A write of the buffer at or before that child is refused, as are a region that depends on
anything but loops up to the given one, and a scope that is not a stage pipeline. A region
past the buffer's bounds (a padding block's guarded `X[vw - 1]`) is cut to them, where TVM
0.27 copies from outside the buffer.

    for k0:                                 for k0:
        for k1: C[..] += A[vi, vk] ...  →       A_shared[v0*32 : v0*32+32, v1*16 : ...] = A[...]
                                                for k1: C[..] += A_shared[vi, vk] ...
"""

from __future__ import annotations

from tirc.schedule.copy_at import Direction, copy_at
from tirc.schedule.primitives import primitive
from tirc.schedule.schedule import Schedule
from tirc.schedule.signature import Kind, Param, Signature
from tirc.schedule.sref import SRef


@primitive(
    Signature(
        "read_at",
        "ReadAt",
        inputs=(Param("loop", Kind.LOOP), Param("block", Kind.BLOCK)),
        attrs=(Param("read_buffer_index", Kind.INT), Param("storage_scope", Kind.STR)),
        outputs="one",
        doc="Copy what the block reads in one iteration of the loop into a cache it reads.",
    )
)
def read_at(
    sch: Schedule, loop: SRef, block: SRef, read_buffer_index: int, storage_scope: str
) -> SRef:
    return copy_at(sch, loop, block, int(read_buffer_index), storage_scope, Direction.READ)

"""write_at: have a block write a cache in another storage scope, copied back into the buffer
in a loop's body, after the last child that writes it: the part every block there writes in
one iteration of the loop, as intervals. Every child up to that one accesses the cache
instead; a read of the buffer after the last write is refused, as are a region that depends
on anything but loops up to the given one, and a scope that is not a stage pipeline. A region
past the buffer's bounds is cut to them, where TVM 0.27 copies outside the buffer.

    for j0:                                 for j0:
        for k: C[vi, vj] += ...         →       for k: C_local[vi, vj] += ...
                                                C[v0*32 : v0*32+32, ...] = C_local[...]
"""

from __future__ import annotations

from tirc.schedule.copy_at import Direction, copy_at
from tirc.schedule.primitives import primitive
from tirc.schedule.schedule import Schedule
from tirc.schedule.signature import Kind, Param, Signature
from tirc.schedule.sref import SRef


@primitive(
    Signature(
        "write_at",
        "WriteAt",
        inputs=(Param("loop", Kind.LOOP), Param("block", Kind.BLOCK)),
        attrs=(Param("write_buffer_index", Kind.INT), Param("storage_scope", Kind.STR)),
        outputs="one",
        doc="Have the block write a cache copied out after each iteration of the loop.",
    )
)
def write_at(
    sch: Schedule, loop: SRef, block: SRef, write_buffer_index: int, storage_scope: str
) -> SRef:
    return copy_at(sch, loop, block, int(write_buffer_index), storage_scope, Direction.WRITE)

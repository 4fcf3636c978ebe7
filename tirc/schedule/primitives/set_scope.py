"""set_scope: move a buffer a block writes to another storage scope, where it is allocated
(renamed `<name>_<scope>`, as a cache in that scope would be).

    B = T.sblock_alloc_buffer((128,))
        →  B_shared = T.sblock_alloc_buffer((128,), scope="shared")
"""

from __future__ import annotations

from tirc.schedule.buffer_access import AccessKind, nth_buffer
from tirc.schedule.buffer_replace import BufferReplacer
from tirc.schedule.buffer_site import allocation_site
from tirc.schedule.primitives import primitive
from tirc.schedule.schedule import Schedule
from tirc.schedule.signature import Kind, Param, Signature
from tirc.schedule.sref import SRef
from tirc.schedule.storage_scope import check_storage_scope, with_scope


@primitive(
    Signature(
        "set_scope",
        "SetScope",
        inputs=(Param("block", Kind.BLOCK),),
        attrs=(Param("buffer_index", Kind.INT), Param("storage_scope", Kind.STR)),
        doc="Allocate the buffer the block writes (by index) in another storage scope.",
    )
)
def set_scope(sch: Schedule, block: SRef, buffer_index: int, storage_scope: str) -> None:
    state = sch.state_owning(block)
    buffer = nth_buffer(block, buffer_index, AccessKind.WRITE)
    if buffer.scope == storage_scope:
        return
    check_storage_scope(storage_scope, block)
    site = allocation_site(block, buffer)
    new = with_scope(buffer, storage_scope)
    replacer = BufferReplacer(buffer, new, lambda view, source: with_scope(view, source.scope))
    new_site = replacer.visit(site.block)
    state.replace(site, new_site, replacer.reuse)

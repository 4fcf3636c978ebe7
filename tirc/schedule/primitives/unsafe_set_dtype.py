"""unsafe_set_dtype: change the element type of a buffer a block writes, converting what is
stored to it and what is loaded from it (unsafe: values may lose precision).

    B[i] = A[i] * 2        →    B[i] = T.Cast("float16", A[i] * 2)
    C[i] = B[i] + 1        →    C[i] = T.Cast("float32", B[i]) + 1
"""

from __future__ import annotations

import dataclasses

from tirc.ir import dtype as dt
from tirc.ir.expr import BufferLoad, Cast, PrimExpr
from tirc.ir.stmt import BufferStore
from tirc.schedule.buffer_access import AccessKind, nth_buffer
from tirc.schedule.buffer_replace import BufferReplacer
from tirc.schedule.buffer_site import allocation_site
from tirc.schedule.errors import ScheduleError
from tirc.schedule.primitives import primitive
from tirc.schedule.schedule import Schedule
from tirc.schedule.signature import Kind, Param, Signature
from tirc.schedule.sref import SRef
from tirc.schedule.storage_scope import with_dtype


@primitive(
    Signature(
        "unsafe_set_dtype",
        "UnsafeSetDType",
        inputs=(Param("block", Kind.BLOCK),),
        attrs=(Param("buffer_index", Kind.INT), Param("dtype", Kind.STR)),
        doc="Change the dtype of the buffer the block writes (by index), with conversions.",
    )
)
def unsafe_set_dtype(sch: Schedule, block: SRef, buffer_index: int, dtype: str) -> None:
    state = sch.state_owning(block)
    buffer = nth_buffer(block, buffer_index, AccessKind.WRITE)
    try:
        target = dt.parse_dtype(dtype)
    except ValueError:
        raise ScheduleError(f"'{dtype}' is not a dtype", block) from None
    if buffer.dtype == target:
        return
    site = allocation_site(block, buffer)
    source = buffer.dtype

    def on_load(load: BufferLoad, _: object) -> PrimExpr:
        return Cast(source, load)

    def on_store(store: BufferStore) -> BufferStore:
        return dataclasses.replace(store, value=Cast(target, store.value))

    replacer = BufferReplacer(
        buffer,
        with_dtype(buffer, target),
        lambda view, new: with_dtype(view, new.dtype),
        on_load,
        on_store,
    )
    new_site = replacer.visit(site.block)
    state.replace(site, new_site, replacer.reuse)

"""cache_inplace: for a block that reads and writes the same buffer, copy the region it
touches into a cache before it and back after it; the block works on the cache.

    A[vi] = A[vi] + 1    →    A_local[v0] = A[v0]        (block "A_local")
                              A_local[vi] = A_local[vi] + 1
                              A[v0] = A_local[v0]        (block "A_local")
"""

from __future__ import annotations

from tirc.schedule.buffer_access import AccessKind, nth_buffer, region_of
from tirc.schedule.cache_common import scope_of
from tirc.schedule.cache_rewrite import CacheReadRewriter, CacheWriteRewriter
from tirc.schedule.cache_stage import CacheStage, detect_inplace_location, make_cache_stage
from tirc.schedule.errors import ScheduleError
from tirc.schedule.primitives import primitive
from tirc.schedule.schedule import Schedule, describe
from tirc.schedule.signature import Kind, Param, Signature
from tirc.schedule.sref import SRef
from tirc.schedule.storage_scope import check_storage_scope, with_scope


@primitive(
    Signature(
        "cache_inplace",
        "CacheInplace",
        inputs=(Param("block", Kind.BLOCK),),
        attrs=(Param("read_buffer_index", Kind.INT), Param("storage_scope", Kind.STR)),
        outputs="many",
        doc="Cache a buffer a block reads and writes: copy in before it and out after it.",
    )
)
def cache_inplace(
    sch: Schedule, block: SRef, read_buffer_index: int, storage_scope: str
) -> list[SRef]:
    state = sch.state_owning(block)
    check_storage_scope(storage_scope, block)
    buffer = nth_buffer(block, read_buffer_index, AccessKind.READ)
    scope = scope_of(block)
    read = region_of(block.block.reads, buffer)
    written = region_of(block.block.writes, buffer)
    if read is None or written is None:
        raise ScheduleError(
            f"{describe(block)} must both read and write the buffer {buffer.name} to cache "
            "it in place",
            block,
        )
    cache = with_scope(buffer, storage_scope)
    location, position = detect_inplace_location(scope, block)
    stage = CacheStage(buffer, cache, cache, location, position, read, {id(block.stmt)})
    copy_in = make_cache_stage(stage, storage_scope, True)
    rewriter = CacheReadRewriter(scope.block, stage, True)
    state.replace(scope, rewriter.visit(scope.block), rewriter.reuse)
    location, position = detect_inplace_location(scope, block)
    stage = CacheStage(cache, buffer, None, location, position + 1, written)
    copy_out = make_cache_stage(stage, storage_scope, True)
    writer = CacheWriteRewriter(scope.block, block.block, stage, True)
    state.replace(scope, writer.visit(scope.block), writer.reuse)
    return [state.get_sref(copy_in), state.get_sref(copy_out)]

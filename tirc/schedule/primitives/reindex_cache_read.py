"""reindex_cache_read: cache_read into a buffer laid out by an index map of the block's
iterators; the block reads the cache at the mapped indices.

    B[vi, vj] = A[vj, vi]   (map lambda i, j: (j, i))
        →   A_shared[vj, vi] = A[vj, vi]   (block "A_shared", over copies of vi, vj)
            B[vi, vj] = A_shared[vj, vi]
"""

from __future__ import annotations

from tirc.schedule.buffer_access import AccessKind, nth_buffer, region_of
from tirc.schedule.cache_common import only_writer
from tirc.schedule.cache_rewrite import CacheReadRewriter
from tirc.schedule.cache_stage import CacheStage, detect_location
from tirc.schedule.primitives import primitive
from tirc.schedule.reindex_cache import (
    check_single_point,
    make_reindex_stage,
    reindex_cache_buffer,
    reindex_layout,
)
from tirc.schedule.schedule import Schedule
from tirc.schedule.signature import Kind, Param, Signature
from tirc.schedule.sref import SRef
from tirc.schedule.stage_pipeline import stage_pipeline_root
from tirc.schedule.storage_scope import check_storage_scope


@primitive(
    Signature(
        "reindex_cache_read",
        "ReindexCacheRead",
        inputs=(Param("block", Kind.BLOCK), Param("index_map", Kind.INDEX_MAP)),
        attrs=(Param("read_buffer_index", Kind.INT), Param("storage_scope", Kind.STR)),
        outputs="one",
        doc="cache_read into a cache whose layout an index map of the block's iterators gives.",
    )
)
def reindex_cache_read(
    sch: Schedule, block: SRef, index_map: str, read_buffer_index: int, storage_scope: str
) -> SRef:
    state = sch.state_owning(block)
    check_storage_scope(storage_scope, block)
    buffer = nth_buffer(block, read_buffer_index, AccessKind.READ)
    scope = stage_pipeline_root(state, block)
    region = region_of(block.block.reads, buffer)
    assert region is not None
    # A block that reads a region may also be the buffer's writer: refuse it before the stage
    # is placed between a writer and its readers.
    check_single_point(block, region, "reindex_cache_read")
    reindex_layout(block, scope, index_map, region, "reindex_cache_read")  # its preconditions
    writer = only_writer(state, scope, buffer)
    if writer is not None:
        location, position = detect_location(scope, writer, [block])
    else:
        location, position = scope.block, 0
    layout = reindex_layout(
        block, state.get_sref(location), index_map, region, "reindex_cache_read"
    )
    cache = reindex_cache_buffer(buffer, layout, storage_scope)
    stage = CacheStage(buffer, cache, cache, location, position, region, {id(block.stmt)})
    new_block, stage.stmt = make_reindex_stage(layout, region, buffer, cache, True, storage_scope)
    rewriter = CacheReadRewriter(scope.block, stage, True, layout.indices)
    new_scope = rewriter.visit(scope.block)
    state.replace(scope, new_scope, rewriter.reuse)
    return state.get_sref(new_block)

"""reindex_cache_write: cache_write into a buffer laid out by an index map of the block's
iterators; the block writes the cache at the mapped indices, a stage copies it back.

    C[vi, vj] = ...   (map lambda i, j: (j, i))
        →   C_local[vj, vi] = ...
            C[vi, vj] = C_local[vj, vi]   (block "C_local", over copies of vi, vj)
"""

from __future__ import annotations

from tirc.schedule.buffer_access import AccessKind, nth_buffer, region_of
from tirc.schedule.cache_common import only_writer
from tirc.schedule.cache_rewrite import CacheWriteRewriter
from tirc.schedule.cache_stage import CacheStage, detect_location
from tirc.schedule.primitives import primitive
from tirc.schedule.reindex_cache import (
    check_single_point,
    make_reindex_stage,
    reindex_cache_buffer,
    reindex_layout,
)
from tirc.schedule.schedule import Schedule
from tirc.schedule.scope import DepKind
from tirc.schedule.signature import Kind, Param, Signature
from tirc.schedule.sref import SRef
from tirc.schedule.stage_pipeline import stage_pipeline_root
from tirc.schedule.storage_scope import check_storage_scope


@primitive(
    Signature(
        "reindex_cache_write",
        "ReindexCacheWrite",
        inputs=(Param("block", Kind.BLOCK), Param("index_map", Kind.INDEX_MAP)),
        attrs=(Param("write_buffer_index", Kind.INT), Param("storage_scope", Kind.STR)),
        outputs="one",
        doc="cache_write into a cache whose layout an index map of the block's iterators gives.",
    )
)
def reindex_cache_write(
    sch: Schedule, block: SRef, index_map: str, write_buffer_index: int, storage_scope: str
) -> SRef:
    state = sch.state_owning(block)
    check_storage_scope(storage_scope, block)
    buffer = nth_buffer(block, write_buffer_index, AccessKind.WRITE)
    scope = stage_pipeline_root(state, block)
    only_writer(state, scope, buffer)
    region = region_of(block.block.writes, buffer)
    assert region is not None
    check_single_point(block, region, "reindex_cache_write")
    reindex_layout(block, scope, index_map, region, "reindex_cache_write")  # its preconditions
    related = [d.dst for d in state.scope(scope).deps_from(block) if d.kind is DepKind.RAW]
    location, position = detect_location(scope, block, related)
    layout = reindex_layout(
        block, state.get_sref(location), index_map, region, "reindex_cache_write"
    )
    cache = reindex_cache_buffer(buffer, layout, storage_scope)
    stage = CacheStage(cache, buffer, cache, location, position, region)
    new_block, stage.stmt = make_reindex_stage(layout, region, cache, buffer, False, storage_scope)
    rewriter = CacheWriteRewriter(scope.block, block.block, stage, True, layout.indices)
    new_scope = rewriter.visit(scope.block)
    state.replace(scope, new_scope, rewriter.reuse)
    return state.get_sref(new_block)

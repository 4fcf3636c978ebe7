"""cache_write: a block writes a new buffer in another storage scope instead, and a copy
stage writes it back to the original buffer, before the first consumer that reads the
original (consumers named in `consumer_blocks` read the cache instead).

    for i, j: B[i, j] = A[i, j] * 2      for i, j: B_local[i, j] = A[i, j] * 2
                                    →    for ax0, ax1: B[ax0, ax1] = B_local[ax0, ax1]
"""

from __future__ import annotations

import dataclasses

from tirc.ir.stmt import SBlock
from tirc.schedule.block_region import relax_block_region
from tirc.schedule.buffer_access import AccessKind, nth_buffer, region_of
from tirc.schedule.cache_common import (
    all_readers_under,
    nested_predicate,
    only_writer,
    scope_of,
    with_children,
)
from tirc.schedule.cache_rewrite import CacheWriteRewriter
from tirc.schedule.cache_stage import CacheStage, detect_location, make_cache_stage
from tirc.schedule.primitives import primitive
from tirc.schedule.schedule import Schedule
from tirc.schedule.scope import DepKind
from tirc.schedule.signature import Kind, Param, Signature, optional
from tirc.schedule.sref import SRef
from tirc.schedule.storage_scope import check_storage_scope, with_scope


@primitive(
    Signature(
        "cache_write",
        "CacheWrite",
        inputs=(Param("block", Kind.BLOCK), optional("consumer_blocks", Kind.BLOCKS, [])),
        attrs=(Param("write_buffer_index", Kind.INT), Param("storage_scope", Kind.STR)),
        outputs="one",
        doc="The block writes a cache in storage_scope, copied back to the buffer after it.",
    )
)
def cache_write(
    sch: Schedule,
    block: SRef,
    write_buffer_index: int,
    storage_scope: str,
    consumer_blocks: list[SRef] | None = None,
) -> SRef:
    state = sch.state_owning(block)
    check_storage_scope(storage_scope, block)
    buffer = nth_buffer(block, write_buffer_index, AccessKind.WRITE)
    scope = scope_of(block)
    consumers = with_children(state, list(consumer_blocks or []))
    writer = only_writer(state, scope, buffer)
    assert writer is block, "a block writing a buffer is among the scope's writers of it"
    related = [
        dep.dst
        for dep in state.scope(scope).deps_from(block)
        if dep.kind is DepKind.RAW and id(dep.dst.stmt) not in consumers
    ]
    location, position = detect_location(scope, block, related)
    written = region_of(block.block.writes, buffer)
    assert written is not None
    predicate = nested_predicate(block.block.body, buffer, AccessKind.WRITE)
    region = relax_block_region(written, block, state.get_sref(location), predicate)
    full_region = not isinstance(location, SBlock) or not all_readers_under(
        state, buffer, scope, state.get_sref(location)
    )
    cache = with_scope(buffer, storage_scope)
    if not full_region:
        cache = dataclasses.replace(cache, shape=tuple(axis.extent for axis in region.region))
    stage = CacheStage(cache, buffer, cache, location, position, region, consumers)
    new_block = make_cache_stage(stage, storage_scope, full_region)
    rewriter = CacheWriteRewriter(scope.block, block.block, stage, full_region)
    new_scope = rewriter.visit(scope.block)
    state.replace(scope, new_scope, rewriter.reuse)
    return state.get_sref(new_block)

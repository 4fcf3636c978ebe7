"""cache_read: copy a buffer a block reads into a new buffer in another storage scope, and
have its consumers (all, or those named) read the copy.

The copy goes after the buffer's producer and before the first consumer, at their lowest
common loop, and covers what the consumers read there (the whole buffer for an input).
A copy of the whole buffer placed under a loop whose iterations can take its region out of
the buffer (a padding block's `A[h - 1]` under `h`) is guarded by a T.where that keeps it
inside, where TVM 0.27 leaves it unguarded and reads out of bounds.

    for i, j: B[i, j] = A[i, j] * 2      for ax0, ax1: A_shared[ax0, ax1] = A[ax0, ax1]
                                    →    for i, j: B[i, j] = A_shared[i, j] * 2
"""

from __future__ import annotations

import dataclasses

from tirc.ir.buffer import Buffer, BufferRegion
from tirc.ir.expr import is_true
from tirc.ir.stmt import SBlock
from tirc.schedule.block_region import loop_domains, relax_block_region
from tirc.schedule.buffer_access import AccessKind, nth_buffer, region_of
from tirc.schedule.cache_common import (
    all_readers_under,
    nested_predicate,
    only_writer,
    scope_of,
    with_children,
)
from tirc.schedule.cache_rewrite import CacheReadRewriter
from tirc.schedule.cache_stage import CacheStage, detect_location, make_cache_stage
from tirc.schedule.primitives import primitive
from tirc.schedule.schedule import Schedule
from tirc.schedule.scope import DepKind
from tirc.schedule.signature import Kind, Param, Signature, optional
from tirc.schedule.sref import SRef
from tirc.schedule.storage_scope import check_storage_scope, with_scope


@primitive(
    Signature(
        "cache_read",
        "CacheRead",
        inputs=(Param("block", Kind.BLOCK), optional("consumer_blocks", Kind.BLOCKS, [])),
        attrs=(Param("read_buffer_index", Kind.INT), Param("storage_scope", Kind.STR)),
        outputs="one",
        doc="Copy a buffer the block reads into a cache in storage_scope; readers use it.",
    )
)
def cache_read(
    sch: Schedule,
    block: SRef,
    read_buffer_index: int,
    storage_scope: str,
    consumer_blocks: list[SRef] | None = None,
) -> SRef:
    state = sch.state_owning(block)
    check_storage_scope(storage_scope, block)
    buffer = nth_buffer(block, read_buffer_index, AccessKind.READ)
    scope = scope_of(block)
    consumers = with_children(state, list(consumer_blocks or []))
    writer = only_writer(state, scope, buffer)
    if writer is not None:
        related = list(consumer_blocks or []) or [
            dep.dst for dep in state.scope(scope).deps_from(writer) if dep.kind is DepKind.RAW
        ]
        location, position = detect_location(scope, writer, related)
        written = region_of(writer.block.writes, buffer)
        assert written is not None
        region = relax_block_region(written, writer, state.get_sref(location))
    else:
        location, position = scope.block, 0
        region = _input_region(block, scope, buffer)
    # A cache at the scope's top level that serves every reader holds just the region;
    # inside a loop it keeps the buffer's shape (what lowering compacts later).
    full_region = not isinstance(location, SBlock) or not all_readers_under(
        state, buffer, scope, state.get_sref(location)
    )
    cache = with_scope(buffer, storage_scope)
    if not full_region:
        cache = dataclasses.replace(cache, shape=tuple(axis.extent for axis in region.region))
    stage = CacheStage(buffer, cache, cache, location, position, region, consumers)
    outer = loop_domains(state.get_sref(location), None, "global") if writer is not None else None
    new_block = make_cache_stage(stage, storage_scope, full_region, outer)
    rewriter = CacheReadRewriter(scope.block, stage, full_region)
    new_scope = rewriter.visit(scope.block)
    state.replace(scope, new_scope, rewriter.reuse)
    return state.get_sref(new_block)


def _input_region(block: SRef, scope: SRef, buffer: Buffer) -> BufferRegion:
    """What to copy of a buffer nothing in the scope writes: what nested blocks read under
    their predicates, if they have any, else what the scope reads, else all of it."""
    read = region_of(block.block.reads, buffer)
    if read is not None and block.parent is not None:
        predicate = nested_predicate(block.block.body, buffer, AccessKind.READ)
        if not is_true(predicate):
            return relax_block_region(read, block, scope, predicate)
    scope_read = region_of(scope.block.reads, buffer)
    if scope_read is not None:
        return scope_read
    return BufferRegion.full(buffer)

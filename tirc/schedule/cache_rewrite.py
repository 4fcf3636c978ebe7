"""Rewriting a scope for a cache stage: users switched to the cache, the stage inserted,
the cache allocated in the scope block.

For a read cache, the consumers' loads (and read regions) move from the original buffer to
the cache; for a write cache, the writer's stores, loads and regions do, and the stage
copies the cache back. Without `full_region` the cache is only as big as the copied region
and accesses are shifted by its start. Every rebuilt block is recorded for `state.replace`.
"""

from __future__ import annotations

import dataclasses

from tirc.analysis.arith import Analyzer
from tirc.ir.arith import arithmetic
from tirc.ir.buffer import Buffer, BufferRegion, MatchBufferRegion, Range
from tirc.ir.expr import BufferLoad, IntImm, PrimExpr, Var
from tirc.ir.functor import Mutator
from tirc.ir.stmt import BufferStore, For, SBlock
from tirc.schedule.buffer_access import region_of
from tirc.schedule.cache_stage import CacheStage, with_stage_inserted


class _StageRewriter(Mutator):
    """What both directions share: inserting the stage, allocating, shifting accesses."""

    def __init__(
        self,
        scope: SBlock,
        stage: CacheStage,
        full_region: bool,
        fixed_indices: tuple[PrimExpr, ...] | None = None,
    ):
        self.scope, self.stage, self.full_region = scope, stage, full_region
        # reindex caches: every access to the cache is at these indices
        self.fixed_indices = fixed_indices
        self.reuse: dict[SBlock, SBlock] = {}
        self.analyzer = Analyzer()

    def visit_For(self, node: For) -> For:
        new: For = self.generic_visit(node)
        if node is self.stage.location:
            assert self.stage.stmt is not None
            new = with_stage_inserted(new, self.stage.position, self.stage.stmt)
        return new

    def finish_block(self, node: SBlock, new: SBlock) -> SBlock:
        """Insert the stage and the allocation where they belong."""
        if node is self.stage.location:
            assert self.stage.stmt is not None
            new = with_stage_inserted(new, self.stage.position, self.stage.stmt)
        if node is self.scope and self.stage.alloc is not None:
            new = dataclasses.replace(new, alloc_buffers=new.alloc_buffers + (self.stage.alloc,))
        return new

    def shifted(self, indices: tuple[PrimExpr, ...]) -> tuple[PrimExpr, ...]:
        if self.fixed_indices is not None:
            return self.fixed_indices
        if self.full_region:
            return indices
        starts = [axis.min for axis in self.stage.region.region]
        return tuple(
            self.analyzer.simplify(_minus(index, start))
            for index, start in zip(indices, starts, strict=True)
        )

    def moved_regions(
        self, regions: tuple[BufferRegion, ...], old: Buffer, new: Buffer
    ) -> tuple[BufferRegion, ...]:
        if region_of(regions, old) is None:
            return regions
        return tuple(
            BufferRegion(new, self._shift_ranges(item.region)) if item.buffer is old else item
            for item in regions
        )

    def moved_matches(
        self, matches: tuple[MatchBufferRegion, ...], old: Buffer, new: Buffer
    ) -> tuple[MatchBufferRegion, ...]:
        if not any(match.source.buffer is old for match in matches):
            return matches
        return tuple(
            MatchBufferRegion(
                match.buffer, BufferRegion(new, self._shift_ranges(match.source.region))
            )
            if match.source.buffer is old
            else match
            for match in matches
        )

    def _shift_ranges(self, ranges: tuple[Range, ...]) -> tuple[Range, ...]:
        if self.fixed_indices is not None:
            return tuple(Range(index, IntImm(1, index.dtype)) for index in self.fixed_indices)
        if self.full_region:
            return ranges
        starts = self.shifted(tuple(item.min for item in ranges))
        return tuple(Range(start, item.extent) for start, item in zip(starts, ranges, strict=True))


def _minus(a: PrimExpr, b: PrimExpr) -> PrimExpr:
    if isinstance(b, IntImm) and b.dtype != a.dtype:
        b = IntImm(b.value, a.dtype)  # a constant takes the index's type
    return arithmetic("-", a, b)


class CacheReadRewriter(_StageRewriter):
    """Consumers of `stage.read_buffer` read `stage.write_buffer` instead."""

    def __init__(
        self,
        scope: SBlock,
        stage: CacheStage,
        full_region: bool,
        fixed_indices: tuple[PrimExpr, ...] | None = None,
    ):
        super().__init__(scope, stage, full_region, fixed_indices)
        self.consumes = False

    def visit_SBlock(self, node: SBlock) -> SBlock:
        stage = self.stage
        is_consumer = not stage.consumers or id(node) in stage.consumers
        self.consumes = is_consumer
        if node is not self.scope and region_of(node.writes, stage.read_buffer) is not None:
            return node  # the producer of the cached buffer keeps writing it
        new: SBlock = self.generic_visit(node)
        new = self.finish_block(node, new)
        if node is not self.scope and is_consumer:
            reads = self.moved_regions(new.reads, stage.read_buffer, stage.write_buffer)
            matches = self.moved_matches(new.match_buffers, stage.read_buffer, stage.write_buffer)
            if reads is not new.reads or matches is not new.match_buffers:
                new = dataclasses.replace(new, reads=reads, match_buffers=matches)
        if new is not node:
            self.reuse[node] = new
        return new

    def visit_BufferLoad(self, node: BufferLoad) -> PrimExpr:
        if node.buffer is self.stage.read_buffer and self.consumes:
            indices = self.shifted(node.indices)
            return BufferLoad(self.stage.write_buffer, indices, node.predicate, span=node.span)
        return self.generic_visit(node)

    def visit_Var(self, node: Var) -> Var:
        return self.stage.write_buffer.data if node is self.stage.read_buffer.data else node


class CacheWriteRewriter(_StageRewriter):
    """The writer of `stage.write_buffer` (and the blocks told to) use `stage.read_buffer`,
    the cache, instead."""

    def __init__(
        self,
        scope: SBlock,
        writer: SBlock,
        stage: CacheStage,
        full_region: bool,
        fixed_indices: tuple[PrimExpr, ...] | None = None,
    ):
        super().__init__(scope, stage, full_region, fixed_indices)
        self.writer = writer
        self.under_writer = False

    def visit_SBlock(self, node: SBlock) -> SBlock:
        stage = self.stage
        cache, original = stage.read_buffer, stage.write_buffer
        if id(node) in stage.consumers:
            visited: SBlock = self.generic_visit(node)
            writes = self.moved_regions(node.writes, original, cache)
            reads = self.moved_regions(node.reads, original, cache)
            matches = self.moved_matches(node.match_buffers, original, cache)
            if writes is node.writes and reads is node.reads and matches is node.match_buffers:
                return node
            renewed = dataclasses.replace(
                visited, writes=writes, reads=reads, match_buffers=matches
            )
            self.reuse[node] = renewed
            return renewed
        if node is not self.writer and node is not self.scope and not self.under_writer:
            return node
        outer = self.under_writer
        self.under_writer = outer or node is self.writer
        new: SBlock = self.generic_visit(node)
        self.under_writer = outer
        new = self.finish_block(node, new)
        if node is not self.scope:
            writes = self.moved_regions(node.writes, original, cache)
            reads = self.moved_regions(node.reads, original, cache)
            matches = self.moved_matches(node.match_buffers, original, cache)
            if (
                writes is not node.writes
                or reads is not node.reads
                or matches is not node.match_buffers
            ):
                new = dataclasses.replace(new, writes=writes, reads=reads, match_buffers=matches)
        if new is not node:
            self.reuse[node] = new
        return new

    def visit_BufferStore(self, node: BufferStore) -> BufferStore:
        new: BufferStore = self.generic_visit(node)
        if new.buffer is self.stage.write_buffer:
            indices = self.shifted(new.indices)
            new = dataclasses.replace(new, buffer=self.stage.read_buffer, indices=indices)
        return new

    def visit_BufferLoad(self, node: BufferLoad) -> PrimExpr:
        if node.buffer is self.stage.write_buffer:
            indices = self.shifted(node.indices)
            return BufferLoad(self.stage.read_buffer, indices, node.predicate, span=node.span)
        return self.generic_visit(node)

    def visit_Var(self, node: Var) -> Var:
        return self.stage.read_buffer.data if node is self.stage.write_buffer.data else node

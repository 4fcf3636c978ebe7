"""Replacing one buffer by another throughout the subtree of the block that allocates it:
allocations, regions, match_buffer sources, loads, stores and uses of its data pointer.

Views made by match_buffer of the replaced buffer are remade by `remake_view` and replaced
in turn. Loads and stores pass through `on_load`/`on_store`, which may add conversions.
Every block that changes is recorded in `reuse` for `state.replace`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from tirc.ir.buffer import Buffer, BufferRegion, MatchBufferRegion
from tirc.ir.expr import BufferLoad, PrimExpr, Var
from tirc.ir.functor import Mutator
from tirc.ir.stmt import BufferStore, SBlock


class BufferReplacer(Mutator):
    def __init__(
        self,
        old: Buffer,
        new: Buffer,
        remake_view: Callable[[Buffer, Buffer], Buffer],
        on_load: Callable[[BufferLoad, Buffer], PrimExpr] | None = None,
        on_store: Callable[[BufferStore], BufferStore] | None = None,
    ):
        self.by_data: dict[Var, Buffer] = {old.data: new}
        self.remake_view = remake_view
        self.on_load = on_load
        self.on_store = on_store
        self.reuse: dict[SBlock, SBlock] = {}

    def _new(self, buffer: Buffer) -> Buffer | None:
        return self.by_data.get(buffer.data)

    def visit_Var(self, node: Var) -> Var:
        found = self.by_data.get(node)
        return found.data if found is not None else node

    def visit_BufferLoad(self, node: BufferLoad) -> PrimExpr:
        new: BufferLoad = self.generic_visit(node)
        replacement = self._new(new.buffer)
        if replacement is None:
            return new
        load = dataclasses.replace(new, buffer=replacement)
        return self.on_load(load, node.buffer) if self.on_load else load

    def visit_BufferStore(self, node: BufferStore) -> BufferStore:
        new: BufferStore = self.generic_visit(node)
        replacement = self._new(new.buffer)
        if replacement is None:
            return new
        store = dataclasses.replace(new, buffer=replacement)
        return self.on_store(store) if self.on_store else store

    def _match(self, match: MatchBufferRegion) -> MatchBufferRegion:
        source = self._new(match.source.buffer)
        if source is None:
            return match
        view = self.remake_view(match.buffer, source)
        self.by_data[match.buffer.data] = view
        return MatchBufferRegion(view, BufferRegion(source, match.source.region))

    def _region(self, region: BufferRegion) -> BufferRegion:
        new = self._new(region.buffer)
        return region if new is None else BufferRegion(new, region.region)

    def visit_SBlock(self, node: SBlock) -> SBlock:
        matches = tuple(self._match(match) for match in node.match_buffers)
        reads = tuple(self._region(region) for region in node.reads)
        writes = tuple(self._region(region) for region in node.writes)
        allocs = tuple(self._new(buffer) or buffer for buffer in node.alloc_buffers)
        new: SBlock = self.generic_visit(node)
        changed = [
            (a, b)
            for a, b in ((matches, node.match_buffers), (reads, node.reads), (writes, node.writes))
            if any(x is not y for x, y in zip(a, b, strict=True))
        ]
        allocs_changed = any(x is not y for x, y in zip(allocs, node.alloc_buffers, strict=True))
        if new is node and not changed and not allocs_changed:
            return node
        new = dataclasses.replace(
            new, match_buffers=matches, reads=reads, writes=writes, alloc_buffers=allocs
        )
        self.reuse[node] = new
        return new

"""What compute_inline and reverse_compute_inline share: a scope rewriter that puts the leaf
removal in place (`block_removal`) and keeps block signatures right once a buffer stops
existing.
"""

from __future__ import annotations

import dataclasses

from tirc.analysis.regions import infer_access_regions
from tirc.ir.buffer import Buffer
from tirc.ir.expr import Var
from tirc.ir.function import PrimFunc
from tirc.ir.functor import Mutator
from tirc.ir.stmt import For, SBlock
from tirc.schedule.sref import SRef


def data_buffers(func: PrimFunc, scope_root: SRef) -> dict[Var, Buffer]:
    """Buffers by data handle visible in the scope: the parameters', and those allocated by
    the blocks from the function root down to `scope_root` (for opaque `A.data` uses)."""
    found = {buffer.data: buffer for _, buffer in func.buffer_map}
    node: SRef | None = scope_root
    while node is not None:
        if node.is_block:
            for buffer in node.block.alloc_buffers:
                found[buffer.data] = buffer
            for match in node.block.match_buffers:
                found[match.buffer.data] = match.buffer
        node = node.parent
    return found


class ScopeInliner(Mutator):
    """Rewrites a scope root after a block was inlined away.

    Swaps `source` for `target` (the leaf removal), drops `buffer` from the scope root's
    allocations, re-infers the regions of every other block whose signature mentions it,
    records each rebuilt block in `reuse`, and notes opaque uses of the buffer (its data, or a
    subregion bound by T.match_buffer).
    Subclasses rewrite the accesses (`visit_BufferLoad`, `visit_BufferStore`).
    """

    def __init__(
        self,
        buffer: Buffer,
        scope_root: SBlock,
        source: For | SBlock,
        target: For | SBlock,
        buffers: dict[Var, Buffer],
    ):
        self.buffer = buffer
        self.scope_root = scope_root
        self.source, self.target = source, target
        self.buffers = buffers
        self.reuse: dict[SBlock, SBlock] = {}
        self.has_opaque_access = False

    def visit_Var(self, node: Var) -> Var:
        if node is self.buffer.data:
            self.has_opaque_access = True
        return node

    def visit_For(self, node: For) -> For:
        current = self.target if node is self.source else node
        assert isinstance(current, For)  # a removal's target is of its source's kind
        return self.generic_visit(current)

    def visit_SBlock(self, node: SBlock) -> SBlock:
        current = self.target if node is self.source else node
        assert isinstance(current, SBlock)
        if any(match.source.buffer is self.buffer for match in current.match_buffers):
            self.has_opaque_access = True  # a matched subregion is read through another name
        new: SBlock = self.generic_visit(current)
        new = self.update_signature(new, is_root=node is self.scope_root)
        if new is not node:
            self.reuse[node] = new
        return new

    def update_signature(self, block: SBlock, is_root: bool) -> SBlock:
        if is_root:
            allocs = tuple(b for b in block.alloc_buffers if b is not self.buffer)
            if len(allocs) != len(block.alloc_buffers):
                block = dataclasses.replace(block, alloc_buffers=allocs)
            return block
        regions = block.reads + block.writes
        if any(region.buffer is self.buffer for region in regions):
            reads, writes = infer_access_regions(block, self.buffers)
            block = dataclasses.replace(block, reads=reads, writes=writes)
        return block

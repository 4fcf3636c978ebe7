"""What compute_inline and reverse_compute_inline share: removing a leaf block from its scope,
and a scope rewriter that keeps block signatures right once a buffer stops existing.

The removal climbs from the block through loops that hold nothing else and drops the
highest such statement from the sequence it sits in (TVM's rule: never beyond the scope).
"""

from __future__ import annotations

import dataclasses

from tirc.analysis.regions import infer_access_regions
from tirc.ir.buffer import Buffer
from tirc.ir.expr import Var
from tirc.ir.function import PrimFunc
from tirc.ir.functor import Mutator
from tirc.ir.stmt import For, SBlock, SBlockRealize, SeqStmt, Stmt
from tirc.schedule.errors import ScheduleError
from tirc.schedule.schedule import describe
from tirc.schedule.sref import SRef


def leaf_removal(block: SRef) -> tuple[For | SBlock, For | SBlock]:
    """(source, target): the loop or block to change and what it becomes once `block` is gone.

    Raises ScheduleError when the block is the only statement of its scope."""
    last: For | SBlock = block.block
    node = block.parent
    while node is not None and node.is_loop:
        body = node.loop.body
        if isinstance(body, SeqStmt) and len(body.stmts) > 1:
            break
        last = node.loop
        node = node.parent
    assert node is not None
    holder = node.stmt
    assert holder is not None
    if isinstance(holder.body, SeqStmt):
        return holder, dataclasses.replace(holder, body=_without(holder.body, last))
    raise ScheduleError(
        f"cannot remove {describe(block)}: it is the only leaf of its scope "
        f"{describe(node)}, which would become empty",
        block,
    )


def _without(seq: SeqStmt, target: For | SBlock) -> Stmt:
    kept = tuple(
        stmt
        for stmt in seq.stmts
        if stmt is not target and not (isinstance(stmt, SBlockRealize) and stmt.block is target)
    )
    return kept[0] if len(kept) == 1 else SeqStmt(kept)


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
        assert isinstance(current, For)  # leaf_removal's target is of its source's kind
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

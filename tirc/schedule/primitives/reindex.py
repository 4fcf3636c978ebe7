"""reindex: give a block's access to a buffer its own buffer indexed by the block's
iterators, with a copy stage between it and the original (before the block for a read,
after it for a write); layouts can then be transformed on the block's own terms. The stage
goes just before (after) the outermost loop above the block in its scope; the loops down to
the block's own must each be the only child of the one above (the block itself may have
siblings under its loop). The scope must be a stage pipeline, and the indices may use only
the block's iterators and outer variables: an index over a loop inside the block (a read_at
copy's `v0 + ax0`) is refused, where TVM 0.27 moves the loop variable out of its loop.

    B[vi, vj] = A[vj, vi] * 2    →    A_reindex[v0, v1] = A[v1, v0]      (block "A_reindex_reindex")
                                      B[vi, vj] = A_reindex[vi, vj] * 2
"""

from __future__ import annotations

import dataclasses

from tirc.analysis.arith import Analyzer
from tirc.ir.arith import arithmetic
from tirc.ir.buffer import Buffer, BufferRegion, Range
from tirc.ir.dtype import BOOL
from tirc.ir.expr import BufferLoad, IntImm, PointerType, PrimExpr, Var
from tirc.ir.functor import Mutator, Visitor, walk
from tirc.ir.stmt import (
    BufferStore,
    For,
    ForKind,
    IterType,
    IterVar,
    SBlock,
    SBlockRealize,
    SeqStmt,
    Stmt,
    domain_of,
)
from tirc.ir.structural import structural_equal
from tirc.ir.substitute import substitute
from tirc.schedule.buffer_access import AccessKind, access_kind, nth_buffer
from tirc.schedule.cache_stage import insert_stage, point_region
from tirc.schedule.errors import ScheduleError
from tirc.schedule.primitives import primitive
from tirc.schedule.schedule import Schedule, describe
from tirc.schedule.signature import Kind, Param, Signature
from tirc.schedule.sref import SRef
from tirc.schedule.stage_pipeline import stage_pipeline_root


@primitive(
    Signature(
        "reindex",
        "ReIndex",
        inputs=(Param("block", Kind.BLOCK),),
        attrs=(Param("buffer_index", Kind.INT), Param("buffer_index_type", Kind.VALUE)),
        outputs="one",
        doc="Access a buffer through a new buffer indexed by the block's iterators.",
    )
)
def reindex(sch: Schedule, block: SRef, buffer_index: int, buffer_index_type: object) -> SRef:
    state = sch.state_owning(block)
    kind = access_kind(buffer_index_type, block)
    buffer = nth_buffer(block, buffer_index, kind)
    scope = stage_pipeline_root(state, block)
    node = block.block
    indices = _access_indices(block, buffer)
    analyzer = Analyzer()
    for iter_var in node.iter_vars:
        analyzer.bind(iter_var.var, domain_of(iter_var))
    indices = [
        index if isinstance(index, (Var, IntImm)) else analyzer.simplify(index) for index in indices
    ]
    used: set[Var] = set()
    for index in indices:
        walk(index, lambda item: used.add(item) if isinstance(item, Var) else None)
    covered = [iv for iv in node.iter_vars if iv.var in used]
    new_buffer = _reindex_buffer(buffer, covered)
    position = _outer_position(block, scope) + (1 if kind is AccessKind.WRITE else 0)
    stage_block, stage = _make_stage(node, buffer, new_buffer, covered, indices, kind)
    new_indices = tuple(iv.var for iv in covered)
    rewriter = _Rewriter(node, buffer, new_buffer, new_indices)
    new_block = rewriter.visit(node)
    scope_node = scope.block
    new_scope = _ReplaceBlock(node, new_block).visit(scope_node)
    new_scope = dataclasses.replace(
        new_scope,
        body=insert_stage(new_scope.body, position, stage),
        alloc_buffers=new_scope.alloc_buffers + (new_buffer,),
    )
    state.replace(scope, new_scope, {node: new_block, scope_node: new_scope})
    return state.get_sref(stage_block)


class _IndexCollector(Visitor):
    """The one index tuple `buffer` is accessed with in a leaf block's body."""

    def __init__(self, block: SRef, buffer: Buffer):
        self.block, self.buffer = block, buffer
        self.indices: tuple[PrimExpr, ...] | None = None
        self.loop_vars: set[Var] = set()

    def _seen(self, indices: tuple[PrimExpr, ...]) -> None:
        if self.indices is None:
            self.indices = indices
        elif not _same_exprs(self.indices, indices):
            raise ScheduleError(
                f"the buffer {self.buffer.name} is accessed with different indices in "
                f"{describe(self.block)}; reindex needs one access pattern",
                self.block,
            )

    def visit_BufferLoad(self, node: BufferLoad) -> None:
        self.generic_visit(node)
        if node.buffer is self.buffer:
            self._seen(node.indices)

    def visit_BufferStore(self, node: BufferStore) -> None:
        self.generic_visit(node)
        if node.buffer is self.buffer:
            self._seen(node.indices)

    def visit_For(self, node: For) -> None:
        self.loop_vars.add(node.loop_var)
        self.generic_visit(node)

    def visit_SBlock(self, node: SBlock) -> None:
        raise ScheduleError(
            f"{describe(self.block)} is not a leaf block: it holds other blocks", self.block
        )

    def visit_Var(self, node: Var) -> None:
        if node is self.buffer.data:
            raise ScheduleError(
                f"the buffer {self.buffer.name} is accessed opaquely (through its data "
                f"pointer) in {describe(self.block)}; reindex needs loads and stores",
                self.block,
            )


def _same_exprs(a: tuple[PrimExpr, ...], b: tuple[PrimExpr, ...]) -> bool:
    """Equal as written, free variables compared by identity (not up to renaming)."""
    free: list[Var] = []
    walk((a, b), lambda item: free.append(item) if isinstance(item, Var) else None)
    anchor = tuple(dict.fromkeys(free))  # binding each variable to itself first
    return structural_equal((anchor, a), (anchor, b))


def _access_indices(block: SRef, buffer: Buffer) -> list[PrimExpr]:
    collector = _IndexCollector(block, buffer)
    collector.visit(block.block.body)
    if collector.indices is None:
        raise ScheduleError(
            f"{describe(block)} does not load or store the buffer {buffer.name}", block
        )
    inner: list[Var] = []
    walk(
        collector.indices, lambda item: inner.append(item) if item in collector.loop_vars else None
    )
    if inner:
        # TVM 0.27 moves such an index into the new stage, outside the loop that binds it
        raise ScheduleError(
            f"the buffer {buffer.name} is indexed by the loop variable {inner[0].name} inside "
            f"{describe(block)}; reindex needs indices over the block's iterators",
            block,
        )
    return list(collector.indices)


def _reindex_buffer(buffer: Buffer, covered: list[IterVar]) -> Buffer:
    shape = tuple(arithmetic("+", domain_of(iv).min, domain_of(iv).extent) for iv in covered)
    data = Var(
        f"{buffer.data.name}_reindex", buffer.data.dtype, PointerType(buffer.dtype, buffer.scope)
    )
    return dataclasses.replace(
        buffer, name=f"{buffer.name}_reindex", data=data, shape=shape, strides=()
    )


def _outer_position(block: SRef, scope: SRef) -> int:
    """The index in the scope's body of the outermost loop above `block`: the stage goes just
    before it (after it, for a write). The loops from there down to the block's own must
    form a chain, each the only child of the one above; the block may have siblings."""
    node = block.parent
    if node is scope or node is None or not node.is_loop:
        raise ScheduleError(f"{describe(block)} must be under a loop for reindex", block)
    while node.parent is not scope:
        outer = node.parent
        assert outer is not None
        if not (outer.is_loop and node.is_loop and outer.loop.body is node.stmt):
            raise ScheduleError(
                f"the loops above {describe(block)} must form a chain, each the only child "
                "of the one above, for reindex",
                block,
            )
        node = outer
    body = scope.block.body
    if isinstance(body, SeqStmt):
        for position, stmt in enumerate(body.stmts):
            if stmt is node.stmt:
                return position
    return 0


def _make_stage(
    block: SBlock,
    buffer: Buffer,
    new_buffer: Buffer,
    covered: list[IterVar],
    indices: list[PrimExpr],
    kind: AccessKind,
) -> tuple[SBlock, Stmt]:
    iter_vars: list[IterVar] = []
    mapping: dict[Var, PrimExpr] = {}
    for iter_var in block.iter_vars:
        var = Var(f"v{len(iter_vars)}", iter_var.var.dtype)
        if any(iter_var is iv for iv in covered):
            iter_vars.append(IterVar(var, iter_var.dom, IterType.SPATIAL))
        mapping[iter_var.var] = var
    own: list[PrimExpr] = [iv.var for iv in iter_vars]
    target = [substitute(index, mapping) for index in indices]
    if kind is AccessKind.WRITE:
        source, dest, source_indices, dest_indices = new_buffer, buffer, own, target
    else:
        source, dest, source_indices, dest_indices = buffer, new_buffer, target, own
    stage_block = SBlock(
        name=f"{dest.name}_reindex",
        iter_vars=tuple(iter_vars),
        reads=(point_region(source, source_indices),),
        writes=(point_region(dest, dest_indices),),
        body=BufferStore(dest, BufferLoad(source, tuple(source_indices)), tuple(dest_indices)),
    )
    loop_vars = [Var(f"ax{i}", iv.var.dtype) for i, iv in enumerate(iter_vars)]
    stmt: Stmt = SBlockRealize(tuple(loop_vars), IntImm(1, BOOL), stage_block)
    for var, iv in reversed(list(zip(loop_vars, iter_vars, strict=True))):
        dom = domain_of(iv)
        stmt = For(var, dom.min, dom.extent, ForKind.SERIAL, stmt)
    return stage_block, stmt


class _Rewriter(Mutator):
    """The block's accesses to `old` go to `new` at the block's own iterators."""

    def __init__(self, block: SBlock, old: Buffer, new: Buffer, indices: tuple[PrimExpr, ...]):
        self.block, self.old, self.new, self.indices = block, old, new, indices
        self.region = BufferRegion(new, tuple(Range(i, IntImm(1, i.dtype)) for i in indices))

    def visit_BufferLoad(self, node: BufferLoad) -> PrimExpr:
        new: BufferLoad = self.generic_visit(node)
        if new.buffer is self.old:
            return dataclasses.replace(new, buffer=self.new, indices=self.indices)
        return new

    def visit_BufferStore(self, node: BufferStore) -> BufferStore:
        new: BufferStore = self.generic_visit(node)
        if new.buffer is self.old:
            return dataclasses.replace(new, buffer=self.new, indices=self.indices)
        return new

    def visit_SBlock(self, node: SBlock) -> SBlock:
        new: SBlock = self.generic_visit(node)
        if node is not self.block:
            return new

        def moved(regions: tuple[BufferRegion, ...]) -> tuple[BufferRegion, ...]:
            return tuple(self.region if r.buffer is self.old else r for r in regions)

        matches = tuple(
            dataclasses.replace(m, source=self.region) if m.source.buffer is self.old else m
            for m in node.match_buffers
        )
        return dataclasses.replace(
            new, reads=moved(node.reads), writes=moved(node.writes), match_buffers=matches
        )


class _ReplaceBlock(Mutator):
    def __init__(self, old: SBlock, new: SBlock):
        self.old, self.new = old, new

    def visit_SBlock(self, node: SBlock) -> SBlock:
        if node is self.old:
            return self.new
        return self.generic_visit(node)

    def visit_For(self, node: For) -> For:
        return self.generic_visit(node)

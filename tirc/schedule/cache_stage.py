"""Cache stages: the copy block a cache primitive adds, and where in the scope it goes.

A stage is a loop nest `ax0, ax1, ...` over a region with one block that copies one buffer
into another, named `<buffer>_<scope>`. It goes into the body of the lowest loop (or the
scope block) that holds both the block producing the data and one of the blocks using it,
between them (TVM's placement, so that plans that name later loops still find them).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TypeVar

from tirc.analysis.arith import Analyzer
from tirc.ir import expr as E
from tirc.ir.arith import arithmetic
from tirc.ir.buffer import Buffer, BufferRegion, Range
from tirc.ir.dtype import BOOL
from tirc.ir.expr import BufferLoad, IntImm, PrimExpr, Var
from tirc.ir.functor import Visitor
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
)
from tirc.schedule.errors import ScheduleError
from tirc.schedule.schedule import describe
from tirc.schedule.sref import SRef

LoopOrBlock = TypeVar("LoopOrBlock", For, SBlock)


@dataclass
class CacheStage:
    """What a cache primitive decided: the copy's source and target, the new allocation,
    where the stage goes (`location` is a loop or block node, `position` its body's index),
    and the region it copies."""

    read_buffer: Buffer
    write_buffer: Buffer
    alloc: Buffer | None
    location: For | SBlock
    position: int
    region: BufferRegion
    consumers: set[int] = field(default_factory=set)  # ids of blocks told to use the cache
    stmt: Stmt | None = None  # the loop nest, once made


def make_cache_stage(
    stage: CacheStage,
    scope_name: str,
    full_region: bool,
    outer: Mapping[Var, Range] | None = None,
) -> SBlock:
    """Build the copy loop nest into `stage.stmt`; returns its block.

    With `full_region` the cache has the original buffer's shape and the copy indexes both
    alike; else the cache has the region's shape and the original buffer is offset by the
    region's start. Given the ranges of the loops `outer` to the stage, a full-region copy
    whose bindings cannot be shown to stay in the buffer gets the predicate that keeps them
    there (see in_bounds_guard).
    """
    region = stage.region
    loop_vars: list[Var] = []
    bindings: list[PrimExpr] = []
    for axis in region.region:
        var = Var(f"ax{len(loop_vars)}", axis.extent.dtype)
        loop_vars.append(var)
        bindings.append(arithmetic("+", axis.min, var) if full_region else var)
    iter_vars: list[IterVar] = []
    read_indices: list[PrimExpr] = []
    write_indices: list[PrimExpr] = []
    reads_cache = region.buffer is not stage.read_buffer  # a cache_write's copy-out
    for dim, axis in enumerate(region.region):
        dtype = axis.extent.dtype
        var = Var(f"v{dim}", dtype)
        if full_region:
            extent = region.buffer.shape[dim]
            dom = Range(IntImm(0, extent.dtype), extent)
            read_indices.append(var)
            write_indices.append(var)
        else:
            dom = Range(IntImm(0, dtype), axis.extent)
            offset = arithmetic("+", axis.min, var)
            read_indices.append(var if reads_cache else offset)
            write_indices.append(offset if reads_cache else var)
        iter_vars.append(IterVar(var, dom, IterType.SPATIAL))
    block = SBlock(
        name=f"{region.buffer.name}_{scope_name}",
        iter_vars=tuple(iter_vars),
        reads=(point_region(stage.read_buffer, read_indices),),
        writes=(point_region(stage.write_buffer, write_indices),),
        body=BufferStore(
            stage.write_buffer,
            BufferLoad(stage.read_buffer, tuple(read_indices)),
            tuple(write_indices),
        ),
    )
    guard: PrimExpr = IntImm(1, BOOL)
    if full_region and outer is not None:
        guard = in_bounds_guard(bindings, region, loop_vars, outer)
    body: Stmt = SBlockRealize(tuple(bindings), guard, block)
    for var, axis in reversed(list(zip(loop_vars, region.region, strict=True))):
        body = For(var, IntImm(0, var.dtype), axis.extent, ForKind.SERIAL, body)
    stage.stmt = body
    return block


def in_bounds_guard(
    bindings: list[PrimExpr],
    region: BufferRegion,
    loop_vars: list[Var],
    outer: Mapping[Var, Range],
) -> PrimExpr:
    """`0 <= b and b < extent` for each binding `b` of a full-region copy that the loops'
    ranges do not keep inside the buffer, else True.

    A region relaxed only over the stage's own loops can start outside the buffer at some
    iterations of the loops around it: a writer guarded by `1 <= h < 15` writes `A[h - 1]`,
    and a copy of it placed under `h` would read `A[-1]` at h = 0. The copy's iterators
    range over the buffer's shape, so the copy runs only where they do (TVM 0.27 leaves the
    copy unguarded, which reads out of bounds).
    """
    analyzer = Analyzer.over(outer)
    for var, axis in zip(loop_vars, region.region, strict=True):
        analyzer.bind(var, Range(IntImm(0, var.dtype), axis.extent))
    guard: PrimExpr = IntImm(1, BOOL)
    for binding, extent in zip(bindings, region.buffer.shape, strict=True):
        zero = IntImm(0, binding.dtype)
        for condition in (E.LE(zero, binding), E.LT(binding, extent)):
            if not analyzer.can_prove(condition, symbolic=True):
                guard = condition if isinstance(guard, IntImm) else E.And(guard, condition)
    return guard


def point_region(buffer: Buffer, indices: list[PrimExpr]) -> BufferRegion:
    """`buffer[i, j, ...]` as a region of single points."""
    return BufferRegion(
        buffer,
        tuple(Range(index, IntImm(1, index.dtype)) for index in indices),
    )


def insert_stage(body: Stmt, position: int, stage: Stmt) -> Stmt:
    """`body` with `stage` inserted at `position` among its statements."""
    items = list(body.stmts) if isinstance(body, SeqStmt) else [body]
    assert 0 <= position <= len(items), "a cache stage goes between statements"
    items.insert(position, stage)
    return SeqStmt(tuple(items))


def with_stage_inserted(node: LoopOrBlock, position: int, stage: Stmt) -> LoopOrBlock:
    return dataclasses.replace(node, body=insert_stage(node.body, position, stage))


class _LocationDetector(Visitor):
    """Finds the lowest statement holding `writer` and one of `related`, and the position
    in its body just after the child holding the writer (TVM's CacheLocDetector)."""

    def __init__(self, scope: SBlock, writer: SBlock | None, related: set[int]):
        self.scope, self.writer, self.related = scope, writer, related
        self.visited_block = False
        self.visited_related = False
        self.location: For | SBlock | None = None
        self.position = -1

    def visit_SeqStmt(self, node: SeqStmt) -> None:
        previous = self.visited_block
        self.visited_block = False
        for index, stmt in enumerate(node.stmts):
            if self.position != -1:
                break
            self.visit(stmt)
            if self.visited_block and self.visited_related and self.position == -1:
                self.position = index
                break
            if self.visited_related:
                break  # the first user is here: the stage must come before it
        self.visited_block = self.visited_block or previous

    def visit_SBlock(self, node: SBlock) -> None:
        if node is self.scope:
            self.visit(node.body)  # not its init: a blockized reduction's init loops are no place
            if self.visited_related and self.location is None:
                self.location = node
                if not self.visited_block and self.position == -1:
                    self.position = 0
            return
        if node is self.writer:
            self.visited_block = True
        elif id(node) in self.related:
            self.visited_related = True
        # other blocks are not looked into: the scope's children decide

    def visit_For(self, node: For) -> None:
        self.generic_visit(node)
        if (
            self.visited_block
            and self.visited_related
            and self.location is None
            and self.position != -1
        ):
            self.location = node


def detect_location(scope: SRef, writer: SRef, related: list[SRef]) -> tuple[For | SBlock, int]:
    """Where a stage between `writer` and its users `related` goes: (node, position)."""
    scope_block = scope.block
    if not related:
        body = scope_block.body
        return scope_block, len(body.stmts) if isinstance(body, SeqStmt) else 1
    detector = _LocationDetector(scope_block, writer.block, {id(r.stmt) for r in related})
    detector.visit(scope_block)
    if detector.location is None:  # the writer is itself one of the users
        raise ScheduleError(
            f"a cache stage has no place in {describe(scope)}: {describe(writer)} both "
            "writes the buffer and reads it, so no point lies after its writer and before "
            "its readers",
            writer,
        )
    return detector.location, detector.position


class _InplaceLocationDetector(Visitor):
    """The statement right around `block` and the block's position in it."""

    def __init__(self, scope: SBlock, block: SBlock):
        self.scope, self.block = scope, block
        self.visited_block = False
        self.location: For | SBlock | None = None
        self.position = -1

    def visit_SeqStmt(self, node: SeqStmt) -> None:
        for index, stmt in enumerate(node.stmts):
            if self.position != -1:
                break
            self.visit(stmt)
            if self.visited_block and self.position == -1:
                self.position = index
                return

    def visit_SBlock(self, node: SBlock) -> None:
        if node is self.scope:
            self.visit(node.body)  # not its init, whose statements no sref tracks
            if self.visited_block and self.location is None:
                self.location = node
                if self.position == -1:
                    self.position = 0
        elif node is self.block:
            self.visited_block = True

    def visit_For(self, node: For) -> None:
        self.generic_visit(node)
        if self.visited_block and self.location is None:
            self.location = node
            if self.position == -1:
                self.position = 0


def detect_inplace_location(scope: SRef, block: SRef) -> tuple[For | SBlock, int]:
    detector = _InplaceLocationDetector(scope.block, block.block)
    detector.visit(scope.block)
    assert detector.location is not None, "the scope holds the block"
    return detector.location, detector.position

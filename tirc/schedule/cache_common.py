"""Questions every cache primitive asks of a scope: its root, the only writer of a buffer,
the blocks under a statement, the predicates under which nested blocks touch a buffer.
"""

from __future__ import annotations

from tirc.ir import expr as E
from tirc.ir.buffer import Buffer
from tirc.ir.dtype import BOOL
from tirc.ir.expr import IntImm, PrimExpr
from tirc.ir.functor import Visitor
from tirc.ir.stmt import SBlockRealize, Stmt
from tirc.ir.substitute import substitute
from tirc.schedule.buffer_access import AccessKind, region_of
from tirc.schedule.errors import ScheduleError
from tirc.schedule.schedule import describe
from tirc.schedule.scope import child_blocks
from tirc.schedule.sref import SRef
from tirc.schedule.state import ScheduleState, children


def scope_of(block: SRef) -> SRef:
    root = block.enclosing_block()
    if root is None:
        raise ScheduleError(
            f"{describe(block)} is the root block: it has no scope to work in", block
        )
    return root


def only_writer(state: ScheduleState, scope: SRef, buffer: Buffer) -> SRef | None:
    """The one block of the scope that writes `buffer`, or None if none does."""
    writers = state.scope(scope).writers.get(id(buffer), [])
    if len(writers) > 1:
        raise ScheduleError(
            f"the buffer {buffer.name} must be written by a single block, but "
            f"{len(writers)} blocks write it",
            *writers,
        )
    return writers[0] if writers else None


def blocks_under(state: ScheduleState, sref: SRef) -> list[SRef]:
    """The blocks whose nearest enclosing block is `sref` (or is above the loop `sref`)."""
    return child_blocks(sref, children, state.get_sref)


def all_readers_under(state: ScheduleState, buffer: Buffer, scope: SRef, stmt: SRef) -> bool:
    """Whether every child block of `scope` that reads `buffer` is a child block of `stmt`."""
    inside = {id(sref) for sref in blocks_under(state, stmt)}
    for sref in blocks_under(state, scope):
        if region_of(sref.block.reads, buffer) is not None and id(sref) not in inside:
            return False
    return True


def with_children(state: ScheduleState, blocks: list[SRef]) -> set[int]:
    """ids of the given blocks and of their child blocks."""
    result: set[int] = set()
    for sref in blocks:
        result.add(id(sref.stmt))
        result.update(id(child.stmt) for child in blocks_under(state, sref))
    return result


class _NestedPredicates(Visitor):
    def __init__(self, buffer: Buffer, kind: AccessKind):
        self.buffer, self.kind = buffer, kind
        self.found: list[PrimExpr] = []

    def visit_SBlockRealize(self, node: SBlockRealize) -> None:
        block = node.block
        regions = block.reads if self.kind is AccessKind.READ else block.writes
        if region_of(regions, self.buffer) is not None:
            binding = dict(zip((iv.var for iv in block.iter_vars), node.iter_values, strict=True))
            self.found.append(substitute(node.predicate, binding))
        self.generic_visit(node)


def nested_predicate(body: Stmt, buffer: Buffer, kind: AccessKind) -> PrimExpr:
    """The predicates of the nested blocks that access `buffer`, or-ed (any of them may),
    in the outer block's terms; true when no nested block does."""
    collector = _NestedPredicates(buffer, kind)
    collector.visit(body)
    if not collector.found:
        return IntImm(1, BOOL)
    result = collector.found[0]
    for item in collector.found[1:]:
        result = E.Or(result, item)
    return result

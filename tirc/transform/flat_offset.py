"""Moving the accesses of flat buffers into other flat buffers at an element offset: what
inject-virtual-thread (one copy per virtual thread) and merge-shared-memory-allocations (one
pool for a kernel's buffers) both do to loads and stores."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from tirc.ir import expr as E
from tirc.ir import stmt as S
from tirc.ir.buffer import Buffer
from tirc.ir.functor import Mutator


class FlatOffsetRewriter(Mutator):
    """Loads and stores of the buffers in `moves` (keyed by their data variable) go to the
    buffer given there, their one index shifted by the offset (an element count, or an
    expression cast to the index type): a ramp's base moves, another vector index adds the
    offset broadcast over its lanes. `offset_first` says on which side of the sum the offset
    stands."""

    offset_first = False

    def __init__(self, moves: Mapping[E.Var, tuple[Buffer, E.PrimExpr | int]]) -> None:
        self.moves = moves

    def moved(
        self, buffer: Buffer, indices: tuple[E.PrimExpr, ...]
    ) -> tuple[Buffer, tuple[E.PrimExpr, ...]]:
        new, offset = self.moves[buffer.data]
        (index,) = indices
        lanes = index.dtype.lanes
        element = index.dtype.element
        if isinstance(offset, int):
            if offset == 0:
                return new, indices
            offset = E.IntImm(offset, element)
        elif offset.dtype != element:
            offset = E.Cast(element, offset)
        if isinstance(index, E.Ramp):  # a contiguous run stays one: its base moves
            base = E.Add(offset, index.base) if self.offset_first else E.Add(index.base, offset)
            return new, (dataclasses.replace(index, base=base),)
        if lanes > 1:
            offset = E.Broadcast(offset, lanes)
        return new, (E.Add(offset, index) if self.offset_first else E.Add(index, offset),)

    def visit_BufferLoad(self, node: E.BufferLoad) -> E.PrimExpr:
        node = self.generic_visit(node)
        if node.buffer.data not in self.moves:
            return node
        buffer, indices = self.moved(node.buffer, node.indices)
        return dataclasses.replace(node, buffer=buffer, indices=indices)

    def visit_BufferStore(self, node: S.BufferStore) -> S.Stmt:
        node = self.generic_visit(node)
        if node.buffer.data not in self.moves:
            return node
        buffer, indices = self.moved(node.buffer, node.indices)
        return dataclasses.replace(node, buffer=buffer, indices=indices)

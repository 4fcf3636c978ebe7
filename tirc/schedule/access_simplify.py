"""Simplifying what a rewritten block accesses: the indices of its loads and stores and the
bounds of its read/write regions (nested blocks too), after a primitive substituted new
iterators into them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from tirc.analysis.arith import Analyzer
from tirc.ir.buffer import BufferRegion, Range
from tirc.ir.expr import BufferLoad, IntImm, PrimExpr, Var
from tirc.ir.functor import Mutator
from tirc.ir.stmt import BufferStore, For, SBlock
from tirc.ir.substitute import Substituter

NodeT = TypeVar("NodeT")


class _AccessSimplifier(Mutator):
    def __init__(
        self,
        analyzer: Analyzer,
        bind_iterators: bool,
        bind_unit_iterators: bool,
        arrange: Callable[[PrimExpr, PrimExpr], PrimExpr] | None = None,
    ):
        self.analyzer = analyzer
        self.bind_iterators = bind_iterators
        self.bind_unit_iterators = bind_unit_iterators
        self.arrange = arrange

    def simplify(self, index: PrimExpr) -> PrimExpr:
        simple = self.analyzer.simplify(index)
        return simple if self.arrange is None else self.arrange(simple, index)

    def indices(self, indices: tuple[PrimExpr, ...]) -> tuple[PrimExpr, ...]:
        new = tuple(self.simplify(self.visit(index)) for index in indices)
        return indices if all(a is b for a, b in zip(new, indices, strict=True)) else new

    def region(self, region: BufferRegion) -> BufferRegion:
        ranges = tuple(
            Range(
                self.simplify(item.min),
                _like(self.analyzer.simplify(item.extent), item.min),
            )
            for item in region.region
        )
        return BufferRegion(region.buffer, ranges)

    def visit_BufferLoad(self, node: BufferLoad) -> BufferLoad:
        indices = self.indices(node.indices)
        return node if indices is node.indices else dataclasses.replace(node, indices=indices)

    def visit_BufferStore(self, node: BufferStore) -> BufferStore:
        value = self.visit(node.value)
        indices = self.indices(node.indices)
        if value is node.value and indices is node.indices:
            return node
        return dataclasses.replace(node, value=value, indices=indices)

    def visit_For(self, node: For) -> For:
        self.analyzer.bind(node.loop_var, Range(node.min, node.extent))
        return self.generic_visit(node)

    def visit_SBlock(self, node: SBlock) -> SBlock:
        # Iterators are known to lie in their domains (what turns `v % 4096 // 128` into
        # `v // 128` when v < 4096), as in TVM's simplifier of block accesses.
        for iter_var in node.iter_vars if self.bind_iterators else ():
            if iter_var.dom is not None and (
                self.bind_unit_iterators or not _is_unit(iter_var.dom)
            ):
                self.analyzer.bind(iter_var.var, iter_var.dom)
        new: SBlock = self.generic_visit(node)
        reads = tuple(self.region(region) for region in new.reads)
        writes = tuple(self.region(region) for region in new.writes)
        return dataclasses.replace(new, reads=reads, writes=writes)


def simplify_accesses(
    block: SBlock,
    analyzer: Analyzer | None = None,
    bind_iterators: bool = True,
    bind_unit_iterators: bool = True,
    arrange: Callable[[PrimExpr, PrimExpr], PrimExpr] | None = None,
) -> SBlock:
    """`block` with its access indices and regions simplified; iterators are known to lie in
    their domains unless `bind_iterators` is false (without `bind_unit_iterators`, an
    iterator of extent 1 stays a variable rather than becoming its one value). `arrange`,
    when given, rewrites each simplified index and region start further, given it and the
    index as it was before simplification."""
    simplifier = _AccessSimplifier(
        analyzer or Analyzer(), bind_iterators, bind_unit_iterators, arrange
    )
    return simplifier.visit(block)


def _like(extent: PrimExpr, start: PrimExpr) -> PrimExpr:
    """A constant extent in the dtype of its range's start (a point of an index that became
    int64 is `[v:v + 1]` in int64, as the printed region reads back)."""
    if isinstance(extent, IntImm) and extent.dtype != start.dtype and start.dtype.is_integer:
        return IntImm(extent.value, start.dtype)
    return extent


def _is_unit(dom: Range) -> bool:
    return isinstance(dom.extent, IntImm) and dom.extent.value == 1


class _SimplifyingSubstituter(Substituter):
    def __init__(self, mapping: Mapping[Var, PrimExpr], analyzer: Analyzer):
        super().__init__(mapping)
        self.analyzer = analyzer

    def visit(self, node: Any) -> Any:
        result = super().visit(node)
        if result is not node and isinstance(result, PrimExpr):
            return self.analyzer.simplify(result)
        return result


def substitute_simplified(
    node: NodeT, mapping: Mapping[Var, PrimExpr], analyzer: Analyzer
) -> NodeT:
    """`node` with the variables of `mapping` replaced, and every expression that changed
    simplified by `analyzer` (TVM's blockize substitutes this way, so `(v_o * 8 + v_i) % 8`
    over v_i in [0, 8) reads `v_i` wherever it occurs, values included)."""
    if not mapping:
        return node
    result: NodeT = _SimplifyingSubstituter(mapping, analyzer).visit(node)
    return result


class _StatementSimplifier(Mutator):
    """Every expression of a statement simplified, loops and block iterators known to lie in
    their ranges where they are in scope."""

    def __init__(self, analyzer: Analyzer):
        self.analyzer = analyzer

    def visit(self, node: Any) -> Any:
        if isinstance(node, PrimExpr):
            return self.analyzer.simplify(node)
        return super().visit(node)

    def visit_For(self, node: For) -> For:
        self.analyzer.bind(node.loop_var, Range(node.min, node.extent))
        return self.generic_visit(node)

    def visit_SBlock(self, node: SBlock) -> SBlock:
        for iter_var in node.iter_vars:
            if iter_var.dom is not None:
                self.analyzer.bind(iter_var.var, iter_var.dom)
        return self.generic_visit(node)


def simplify_statement(node: NodeT, analyzer: Analyzer | None = None) -> NodeT:
    """`node` with every expression simplified (TVM's statement simplifier, which tensorize
    runs over an intrinsic's description: `Compressed[vi // 8]` over vi in [0, 8) reads
    `Compressed[0]`)."""
    result: NodeT = _StatementSimplifier(analyzer or Analyzer()).visit(node)
    return result

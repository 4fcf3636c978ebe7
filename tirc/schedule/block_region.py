"""The region a block touches under one of its ancestors, read off the sref tree: the loops
between them, the thread loops further up, and the block's realize, handed to
`tirc.analysis.region_bound`.
"""

from __future__ import annotations

from tirc.analysis.region_bound import loop_domains as domains_of_loops
from tirc.analysis.region_bound import relax_realized_region
from tirc.ir.buffer import BufferRegion, Range
from tirc.ir.expr import PrimExpr, Var, is_const_int
from tirc.ir.stmt import For
from tirc.schedule.properties import realize_of
from tirc.schedule.rebind import conjoin
from tirc.schedule.sref import SRef


def loop_domains(low: SRef | None, high: SRef | None, scope: str) -> dict[Var, Range]:
    """Ranges of the loops from `low` up to `high` (exclusive), stopping at a block; then of
    the thread loops above that a buffer in `scope` is shared across."""
    inner: list[For] = []
    node = low
    while node is not None and node is not high and node.is_loop:
        inner.append(node.loop)
        node = node.parent
    outer = [ancestor.loop for ancestor in _self_and_ancestors(node) if ancestor.is_loop]
    return domains_of_loops(inner, outer, scope)


def _self_and_ancestors(node: SRef | None) -> list[SRef]:
    return [] if node is None else [node, *node.ancestors()]


def relax_block_region(
    region: BufferRegion,
    block: SRef,
    high: SRef | None,
    extra_predicate: PrimExpr | None = None,
    scope: str | None = None,
) -> BufferRegion:
    """The part of `region` (of `block`, over its iterators) that runs under `high`: the
    bindings substituted, the loops from the block's parent up to `high` relaxed, and the
    thread loops above that share memory of `scope` (the buffer's own by default)."""
    realize = realize_of(block)
    predicate = realize.predicate
    if extra_predicate is not None and not is_const_int(extra_predicate, 1):
        predicate = conjoin(predicate, extra_predicate)
    domains = loop_domains(block.parent, high, region.buffer.scope if scope is None else scope)
    return relax_realized_region(region, realize, domains, predicate)

"""What primitives ask about a block in its scope: is it complete, is it a reduction.

Each check returns None when the property holds, else the condition that fails in words,
so that a primitive can say why it refuses (TVM's definitions, stated in §4 of DESIGN.md).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from tirc.analysis.arith.iter_map import IterSum, detect_iter_map
from tirc.ir import expr as E
from tirc.ir.buffer import Range
from tirc.ir.expr import IntImm, PrimExpr, Var
from tirc.ir.functor import child_fields, uses_var, walk
from tirc.ir.node import Node
from tirc.ir.stmt import BufferStore, For, IterType, SBlock, SBlockRealize, Stmt
from tirc.ir.substitute import substitute
from tirc.schedule.sref import SRef

Writers = Mapping[int, list[SRef]]  # id(buffer) -> the blocks that write it


def not_dominant(writers: Writers, block: SRef) -> str | None:
    """The block must be the only writer of every buffer it writes, among `writers`."""
    for region in block.block.writes:
        writers_of = writers.get(id(region.buffer), [])
        if len(writers_of) > 1:
            return f"it is not the only block that writes {region.buffer.name}"
    return None


def not_complete(writers: Writers, block: SRef) -> str | None:
    """A complete block: data-parallel iterators only, the only writer of its outputs, and
    no buffer both read and written."""
    node = block.block
    for iter_var in node.iter_vars:
        if iter_var.iter_type is not IterType.SPATIAL:
            return f"its iterator {iter_var.var.name} is not data-parallel"
    reason = not_dominant(writers, block)
    if reason is not None:
        return reason
    written = {id(region.buffer) for region in node.writes}
    for region in node.reads:
        if id(region.buffer) in written:
            return f"it both reads and writes {region.buffer.name}"
    return None


def not_reduction(writers: Writers, block: SRef, realize: SBlockRealize) -> str | None:
    """A reduction block: an init, an affine binding, spatial and reduction iterators only,
    the only writer of its outputs, and reduction iterators not indexing what it stores."""
    node = block.block
    if node.init is None:
        return "it has no T.init()"
    if not is_affine_binding(realize, block):
        return "its binding is not an affine function of the loops around it"
    for iter_var in node.iter_vars:
        if iter_var.iter_type not in (IterType.SPATIAL, IterType.REDUCE):
            return f"its iterator {iter_var.var.name} is neither data-parallel nor a reduction"
    reason = not_dominant(writers, block)
    if reason is not None:
        return reason
    reductions = {iv.var for iv in node.iter_vars if iv.iter_type is IterType.REDUCE}
    for store in _stores(node.body):
        if any(uses_var(index, reductions) for index in store.indices):
            return f"a reduction iterator indexes the buffer {store.buffer.name} it writes"
    return None


def _stores(stmt: object) -> list[BufferStore]:
    found: list[BufferStore] = []
    walk(stmt, lambda node: found.append(node) if isinstance(node, BufferStore) else None)
    return found


def is_affine_binding(realize: SBlockRealize, block: SRef) -> bool:
    """Whether the block's bindings are an affine map of the loops up to its scope root.

    Loops with symbolic extents are beyond the iterator-map detection; a binding over them
    counts as affine, as a parsed or scheduled program's bindings nearly always are.
    """
    domains: dict[Var, Range] = {}
    node = block.parent
    while node is not None and node.is_loop:
        loop = node.loop
        if not (isinstance(loop.min, IntImm) and isinstance(loop.extent, IntImm)):
            return True
        domains[loop.loop_var] = Range(loop.min, loop.extent)
        node = node.parent
    if is_affine_map(realize.iter_values, domains, realize.predicate):
        return True
    # The predicate only narrows the domain; where the detection cannot relate it to the
    # indices (a split's guard over a unit loop), the binding itself decides.
    return is_affine_map(realize.iter_values, domains)


def is_affine_map(
    values: Sequence[PrimExpr], domains: Mapping[Var, Range], predicate: PrimExpr | None = None
) -> bool:
    """Whether `values` are an affine map of the loops of constant range in `domains`; a loop
    from m (a partition's) reads as m plus a loop from 0, as in TVM."""
    zero_based: dict[Var, Range] = {}
    shifts: dict[Var, PrimExpr] = {}
    for var, domain in domains.items():
        if isinstance(domain.min, IntImm) and domain.min.value:
            shifted = Var(var.name, var.dtype)
            shifts[var] = E.Add(shifted, domain.min)
            zero_based[shifted] = Range(IntImm(0, domain.min.dtype), domain.extent)
        else:
            zero_based[var] = domain
    values = [substitute(value, shifts) for value in values]
    predicate = None if predicate is None else substitute(predicate, shifts)
    found = detect_iter_map(values, zero_based, predicate)
    # TVM's affine binding also reads each index as an iterator unscaled: `l * 16` is none
    return not found.errors and not any(_is_scaled(total) for total in found.sums)


def _is_scaled(total: IterSum) -> bool:
    scales = [split.scale for split in total.splits if split.extent != 1]
    return bool(scales) and min(scales) != 1


def realize_of(block: SRef) -> SBlockRealize:
    """The SBlockRealize that runs `block`, found in its parent without entering other loops
    or blocks (a realize sits directly in its parent's body)."""
    target = block.block
    assert block.parent is not None, "the root block has no realize"
    pending: list[object] = [block.parent.node.body]
    while pending:
        node = pending.pop()
        if isinstance(node, SBlockRealize):
            if node.block is target:
                return node
        elif isinstance(node, tuple):
            pending.extend(node)
        elif isinstance(node, Node) and not isinstance(node, (For, SBlock)):
            pending.extend(
                getattr(node, name)
                for name in child_fields(type(node))
                if isinstance(getattr(node, name), (Stmt, tuple))
            )
    raise AssertionError(f"no realize for block {target.name}")

"""loop_partition: a loop becomes consecutive loops over the ranges its factors cut, each in an
opaque block of its own, all inside one opaque "common" block (TVM's naming: `B_j_common`,
`B_j0_partition`, loop `j0`, block `B_j0`).

One factor may be `None`: it takes what the others leave; otherwise a last partition takes
the remainder. An iterator bound to the loop itself gets the partition's range as its domain,
and that block's regions are inferred again, those indexed by its iterators alone
(`A[vi, vj]`, not `A[vi, vj + 1]`) over the iterators' domains; blocks nested inside
the partitioned block are renamed and narrowed alike (`B` inside `outer` becomes `B_i0`).

Refused where TVM accepts, on purpose: a loop bound to a reduction iterator of a block with
an init (TVM's result runs the init again at the start of each partition, discarding what
the earlier partitions summed). A loop inside a block other than the root (a blockized one)
is partitioned, where TVM 0.27 fails with an internal error ('key is not in Map').

    for j in range(16):                      with T.sblock("B_j_common"):
        with T.sblock("B"):                      with T.sblock("B_j0_partition"):
            vj = T.axis.spatial(16, j)  →            for j0 in range(12): B_j0 (vj in 0:12)
            ...                                  with T.sblock("B_j1_partition"):
                                                     for j1 in range(12, 16): B_j1 (vj in 12:16)
"""

from __future__ import annotations

import dataclasses

from tirc.analysis.region_bound import estimate_region
from tirc.analysis.regions import infer_access_regions
from tirc.ir.buffer import Buffer, BufferRegion, Range
from tirc.ir.dtype import BOOL
from tirc.ir.expr import IntImm, PrimExpr, Var
from tirc.ir.functor import Mutator
from tirc.ir.stmt import For, ForKind, IterType, IterVar, SBlock, SBlockRealize, SeqStmt, Stmt
from tirc.ir.substitute import substitute
from tirc.schedule.errors import ScheduleError
from tirc.schedule.inline import data_buffers
from tirc.schedule.primitives import primitive
from tirc.schedule.primitives.split import check_factors, check_plain_loop
from tirc.schedule.rebind import const_value
from tirc.schedule.schedule import Schedule, describe
from tirc.schedule.signature import Kind, Param, Signature, optional
from tirc.schedule.sref import SRef
from tirc.schedule.state import ScheduleState


@primitive(
    Signature(
        "loop_partition",
        "LoopPartition",
        inputs=(Param("loop", Kind.LOOP), Param("factors", Kind.INTS, variadic=True)),
        attrs=(optional("preserve_unit_iters", Kind.BOOL, True),),
        outputs="many",
        doc="Cut a loop into consecutive loops of the given lengths (one may be null).",
    )
)
def loop_partition(
    sch: Schedule, loop: SRef, factors: list[int | None], preserve_unit_iters: bool = True
) -> list[SRef]:
    # preserve_unit_iters is accepted for TVM's signature: bindings are only renamed here.
    state = sch.state_owning(loop)
    values = check_factors(factors, loop, "loop_partition")
    extent = _static_extent(loop)
    check_plain_loop(loop, "partition")
    bounds = _bounds(values, extent, loop)
    loops, realize = _single_block_chain(loop)
    _check_reduction_init(realize, loop)
    common, nests = _rewrite(state, loop, loops, realize, bounds)
    state.replace(loop, common, {realize.block: _first_block(nests[0])})
    return [state.get_sref(nest) for nest in nests]


# -- legality -------------------------------------------------------------------------------


def _static_extent(loop: SRef) -> int:
    node = loop.loop
    extent = const_value(node.extent)
    if const_value(node.min) is None or extent is None:
        raise ScheduleError(
            f"cannot partition {describe(loop)}: its start or extent is not a constant "
            "(a symbolic loop cannot be cut at fixed points)",
            loop,
        )
    return extent


def _bounds(values: list[int | None], extent: int, loop: SRef) -> list[tuple[int, int]]:
    """The [start, end) of each partition, in order."""
    known = sum(value or 0 for value in values)
    if known >= extent:
        raise ScheduleError(
            f"the factors add up to {known}, which is not less than the extent {extent} of "
            f"{describe(loop)}: nothing would be left to partition",
            loop,
        )
    lengths = [extent - known if value is None else value for value in values]
    if None not in values:
        lengths.append(extent - known)
    bounds, start = [], 0
    for length in lengths:
        bounds.append((start, start + length))
        start += length
    return bounds


def _single_block_chain(loop: SRef) -> tuple[list[For], SBlockRealize]:
    """The loops from `loop` down (itself first) and the one block they run."""
    loops: list[For] = []
    stmt: Stmt = loop.loop
    while isinstance(stmt, For):
        loops.append(stmt)
        stmt = stmt.body
    if not isinstance(stmt, SBlockRealize):
        raise ScheduleError(
            f"cannot partition {describe(loop)}: the loops below it must be a chain that runs "
            f"exactly one block, but a {type(stmt).__name__} statement is there",
            loop,
        )
    return loops, stmt


def _check_reduction_init(realize: SBlockRealize, loop: SRef) -> None:
    """A reduction iterator bound to the loop would start each partition's domain past 0, and
    the init runs where the reduction iterators are at their domain's start: once per
    partition, discarding what the earlier partitions summed. TVM accepts this; tirc refuses."""
    block = realize.block
    if block.init is None:
        return
    for iter_var, value in zip(block.iter_vars, realize.iter_values, strict=True):
        if value is loop.loop.loop_var and iter_var.iter_type is IterType.REDUCE:
            raise ScheduleError(
                f"cannot partition {describe(loop)}: reduction iterator {iter_var.var.name} of "
                f'block "{block.name}" is bound to it, and the block\'s init would run again at '
                "the start of every partition (decompose the reduction first)",
                loop,
            )


# -- rewrite ---------------------------------------------------------------------------------


def _rewrite(
    state: ScheduleState,
    loop: SRef,
    loops: list[For],
    realize: SBlockRealize,
    bounds: list[tuple[int, int]],
) -> tuple[SBlockRealize, list[For]]:
    """The opaque block holding the partitions, each in its own opaque block, and the
    partitions' loops."""
    node = loops[0]
    name = node.loop_var.name
    block_name = realize.block.name
    buffers = data_buffers(state.func, loop)
    partitions: list[Stmt] = []
    nests: list[For] = []
    for index, (start, end) in enumerate(bounds):
        var = Var(f"{name}{index}", node.loop_var.dtype)
        # The first partition keeps the inner loops' and iterators' variables; the others
        # get their own, as a variable is defined once.
        fresh: dict[Var, Var] = {node.loop_var: var}
        if index > 0:
            for inner in loops[1:]:
                fresh[inner.loop_var] = Var(inner.loop_var.name, inner.loop_var.dtype)
            for iter_var in realize.block.iter_vars:
                fresh[iter_var.var] = Var(iter_var.var.name, iter_var.var.dtype)
        mapping: dict[Var, PrimExpr] = dict(fresh)
        body: Stmt = _partition_realize(
            realize,
            mapping,
            node.loop_var,
            (start, end),
            f"{block_name}_{var.name}",
            buffers,
            fresh=index > 0,
        )
        for inner in reversed(loops[1:]):
            body = dataclasses.replace(
                inner,
                loop_var=fresh.get(inner.loop_var, inner.loop_var),
                min=substitute(inner.min, mapping),
                extent=substitute(inner.extent, mapping),
                body=body,
            )
        dtype = node.loop_var.dtype
        nest = dataclasses.replace(
            node,
            loop_var=var,
            min=IntImm(start, dtype),
            extent=IntImm(end - start, dtype),
            kind=ForKind.SERIAL,  # as TVM rebuilds it: an unrolled loop's parts are serial
            body=body,
        )
        nests.append(nest)
        partitions.append(_opaque(f"{block_name}_{var.name}_partition", nest))
    return _opaque(f"{block_name}_{name}_common", SeqStmt(tuple(partitions))), nests


def _partition_realize(
    realize: SBlockRealize,
    mapping: dict[Var, PrimExpr],
    loop_var: Var,
    bounds: tuple[int, int],
    name: str,
    buffers: dict[Var, Buffer],
    fresh: bool,
) -> SBlockRealize:
    """The block, renamed; an iterator bound to the loop itself ranges over the partition."""
    block = realize.block
    nested = _NestedBlocks(mapping, loop_var, bounds, name[len(block.name) :], buffers, fresh)
    block = dataclasses.replace(block, body=nested.visit(block.body))
    renamed = _narrowed(dataclasses.replace(realize, block=block), loop_var, bounds, name, buffers)
    return substitute(renamed, mapping)


def _narrowed(
    realize: SBlockRealize,
    loop_var: Var,
    bounds: tuple[int, int],
    name: str,
    buffers: dict[Var, Buffer],
) -> SBlockRealize:
    """The block renamed, an iterator bound to `loop_var` ranging over `bounds`, and then its
    regions inferred again over its iterators' domains."""
    block = realize.block
    start, end = bounds
    iter_vars: list[IterVar] = []
    narrowed = False
    for iter_var, value in zip(block.iter_vars, realize.iter_values, strict=True):
        if value is loop_var:
            dtype = iter_var.var.dtype
            iter_var = dataclasses.replace(
                iter_var, dom=Range(IntImm(start, dtype), IntImm(end - start, dtype))
            )
            narrowed = True
        iter_vars.append(iter_var)
    new_block = dataclasses.replace(block, name=name, iter_vars=tuple(iter_vars))
    if narrowed:
        reads, writes = infer_access_regions(new_block, buffers)
        domains = {iv.var: iv.dom for iv in iter_vars if iv.dom is not None}
        new_block = dataclasses.replace(
            new_block,
            reads=tuple(_relaxed(region, domains) for region in reads),
            writes=tuple(_relaxed(region, domains) for region in writes),
        )
    return dataclasses.replace(realize, block=new_block)


def _relaxed(region: BufferRegion, domains: dict[Var, Range]) -> BufferRegion:
    """A region whose every index is an iterator, `A[vi, vj]`, over the iterators' domains
    (`A[0:16, 0:12]`); any other (`A[vi, vj + 1]`, `A[vi, 3]`) as it is, as TVM leaves it."""
    for item in region.region:
        extent = const_value(item.extent)
        if extent != 1 or not (isinstance(item.min, Var) and item.min in domains):
            return region
    return estimate_region(region, domains, IntImm(1, BOOL))


class _NestedBlocks(Mutator):
    """Blocks inside the partitioned block get the partition's suffix and their iterators
    bound to the loop its range, as the block itself does (`B` inside `outer` becomes `B_i0`,
    `vi` in 0:12); their loops and iterators are renamed where `mapping` renames the
    partition's own (every partition but the first)."""

    def __init__(
        self,
        mapping: dict[Var, PrimExpr],
        loop_var: Var,
        bounds: tuple[int, int],
        suffix: str,
        buffers: dict[Var, Buffer],
        fresh: bool,  # the first partition keeps its variables
    ):
        self.mapping, self.loop_var, self.bounds = mapping, loop_var, bounds
        self.suffix, self.buffers, self.fresh = suffix, buffers, fresh

    def visit_For(self, node: For) -> For:
        if self.fresh:
            self.mapping[node.loop_var] = Var(node.loop_var.name, node.loop_var.dtype)
        return self.generic_visit(node)

    def visit_SBlockRealize(self, node: SBlockRealize) -> SBlockRealize:
        if self.fresh:
            for iter_var in node.block.iter_vars:
                self.mapping[iter_var.var] = Var(iter_var.var.name, iter_var.var.dtype)
        block = node.block
        inner = dataclasses.replace(block, body=self.visit(block.body))
        if block.init is not None:
            inner = dataclasses.replace(inner, init=self.visit(block.init))
        realize = dataclasses.replace(node, block=inner)
        name = block.name + self.suffix
        return _narrowed(realize, self.loop_var, self.bounds, name, self.buffers)


def _opaque(name: str, body: Stmt) -> SBlockRealize:
    """A block without iterators or regions around `body`."""
    return SBlockRealize((), IntImm(1, BOOL), SBlock(name, (), (), (), body))


def _first_block(first: For) -> SBlock:
    """The renamed block of the first partition: the old block's handle follows it."""
    stmt: Stmt = first
    while isinstance(stmt, For):
        stmt = stmt.body
    assert isinstance(stmt, SBlockRealize)
    return stmt.block

"""What the rules ask of a block: its loops and their roles, and whether its reads reuse data."""

from __future__ import annotations

from dataclasses import dataclass

from tirc.ir.functor import vars_in
from tirc.ir.stmt import IterType
from tirc.schedule.properties import realize_of
from tirc.schedule.sref import SRef
from tirc.tune.builder import PlanBuilder, is_plain_nest, loop_roles


@dataclass
class Nest:
    """A block under a plain nest of loops, each loop feeding one iterator of the block."""

    block: SRef
    loops: list[SRef]
    roles: list[IterType]

    @property
    def spatial(self) -> list[SRef]:
        return [
            loop
            for loop, role in zip(self.loops, self.roles, strict=True)
            if role is IterType.SPATIAL
        ]

    @property
    def reduce(self) -> list[SRef]:
        return [
            loop
            for loop, role in zip(self.loops, self.roles, strict=True)
            if role is IterType.REDUCE
        ]


def plain_nest(builder: PlanBuilder, name: str) -> Nest | None:
    """The block `name` and its loops, when each loop is a constant serial loop over this block
    alone that feeds exactly one spatial or reduction iterator; None otherwise."""
    blocks = builder.sch.blocks_named(name)
    if len(blocks) != 1:
        return None
    block = blocks[0]
    loops = builder.sch.loops_above(block)
    if not loops or not is_plain_nest(block, loops):
        return None
    roles = loop_roles(block, loops)
    if any(role not in (IterType.SPATIAL, IterType.REDUCE) for role in roles):
        return None
    if len(roles) != len(block.block.iter_vars):
        return None
    return Nest(block, loops, [role for role in roles if role is not None])


def has_reuse(block: SRef) -> bool:
    """Some buffer the block reads is indexed without one of its spatial iterators: a tile of
    the output then reads a smaller tile of that input many times (matmul, conv2d)."""
    spatial = {iv.var for iv in block.block.iter_vars if iv.iter_type is IterType.SPATIAL}
    written = {region.buffer for region in block.block.writes}
    for region in block.block.reads:
        if region.buffer in written:
            continue
        used: set[object] = set()
        for item in region.region:
            used |= vars_in(item.min) | vars_in(item.extent)
        if spatial - used:
            return True
    return False


def is_innermost_contiguous(block: SRef, loop: SRef) -> bool:
    """The loop's iterator indexes the last dimension of what the block writes."""
    realize_var = loop.loop.loop_var
    realize = realize_of(block)
    fed = [
        iv.var
        for iv, value in zip(block.block.iter_vars, realize.iter_values, strict=True)
        if realize_var in vars_in(value)
    ]
    if not fed:
        return False
    for region in block.block.writes:
        if not region.region:
            return False
        if fed[0] not in vars_in(region.region[-1].min):
            return False
    return True

"""rfactor (CPU): a reduction along the innermost loop becomes partial sums that vectorize.

Applies, when the sampler says so, to a reduction block without reuse whose innermost loop is
a reduction loop (row sums, softmax's max and sum, layernorm's statistics, a dot product). That
loop is tiled in two and rfactor makes the inner part a spatial iterator of a new block
writing partial results (laid out last, so that they are contiguous); parallel-vectorize-
unroll then schedules both blocks.
"""

from __future__ import annotations

from tirc.ir.stmt import IterType
from tirc.tune.builder import PlanBuilder
from tirc.tune.rules.analysis import has_reuse, plain_nest

MAX_INNERMOST = 64


def apply(builder: PlanBuilder, name: str) -> list[str] | None:
    nest = plain_nest(builder, name)
    if nest is None or not nest.reduce or has_reuse(nest.block):
        return None
    if nest.roles[-1] is not IterType.REDUCE or len(nest.block.block.writes) != 1:
        return None
    if builder.sample_choice([False, True]).value is not True:
        return None
    block = builder.get_sblock(name)
    loops = builder.get_loops(block)
    factors = builder.sample_tile(loops[-1], 2, MAX_INNERMOST)
    if factors[-1].value == 1:
        return None  # nothing to vectorize: leave the block to parallel-vectorize-unroll
    _, inner = builder.split(loops[-1], list(factors))
    axis = len(nest.block.block.writes[0].region)
    rf_block, _ = builder.run("rfactor", loop=inner, factor_axis=axis)
    return None if rf_block is None else []

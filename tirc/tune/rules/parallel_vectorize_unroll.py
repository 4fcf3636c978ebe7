"""parallel-vectorize-unroll (CPU): the rule every block falls back on.

Applies to every block under a plain nest that no earlier rule scheduled (elementwise maps,
transposes, reductions without reuse, the blocks rfactor made, programs no other rule
covers). The innermost loop, when it is spatial, is tiled in two and its inner part
vectorized (or not, when the sampled tile is 1); the leading spatial loops are fused and run
in parallel where the block sits at the top level; an unroll depth is sampled.
"""

from __future__ import annotations

from tirc.ir.stmt import IterType
from tirc.tune.builder import PlanBuilder, loop_extent
from tirc.tune.rules.analysis import plain_nest
from tirc.tune.rules.common import annotate_unroll

MAX_VECTOR = 64


def apply(builder: PlanBuilder, name: str) -> list[str] | None:
    nest = plain_nest(builder, name)
    if nest is None:
        return None
    block = builder.get_sblock(name)
    loops = builder.get_loops(block)
    roles = list(nest.roles)
    vector = None
    if roles[-1] is IterType.SPATIAL and (loop_extent(loops[-1]) or 1) > 1:
        factors = builder.sample_tile(loops[-1], 2, MAX_VECTOR)
        if factors[-1].value > 1:
            outer, vector = builder.split(loops[-1], list(factors))
            loops = loops[:-1] + [outer]
    lead: list = []
    for loop, role in zip(loops, roles, strict=True):
        if role is not IterType.SPATIAL:
            break
        lead.append(loop)
    top = nest.block.parent is not None and nest.loops[0].parent is builder.sch.state.root
    if lead and top:
        fused = builder.fuse(lead)
        builder.run("parallel", loop=fused)
        loops = [fused] + loops[len(lead) :]
    if vector is not None:
        builder.run("vectorize", loop=vector)
    annotate_unroll(builder, loops[0])
    return [name]

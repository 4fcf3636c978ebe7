"""random-compute-location (CPU): where a producer that stays a block of its own is computed.

Applies to a block that writes an intermediate buffer (not a parameter) under a plain nest at
the top level, once the rules before it have scheduled its consumer: conv2d's padding stage
when auto-inline kept it, an elementwise stage before a reduction. sample_compute_location
draws among the legal locations (the root, or a loop of the first consumer down to the first
reduction loop) and compute_at moves the block there, so that it computes only the tile its
consumer reads next, while that tile is in cache. At the root the block stays where it is,
for parallel-vectorize-unroll to schedule.
"""

from __future__ import annotations

from tirc.ir.stmt import IterType
from tirc.schedule.location import LocationMark
from tirc.tune.builder import PlanBuilder, writes_output
from tirc.tune.rules.analysis import plain_nest


def apply(builder: PlanBuilder, name: str) -> list[str] | None:
    nest = plain_nest(builder, name)
    if nest is None or nest.loops[0].parent is not builder.sch.state.root:
        return None
    node = nest.block.block
    if any(iv.iter_type is not IterType.SPATIAL for iv in node.iter_vars):
        return None
    if len(node.writes) != 1 or writes_output(builder, nest.block):
        return None
    block = builder.get_sblock(name)
    location = builder.sample_compute_location(block)
    if isinstance(location.value, LocationMark):
        return None  # the root: left to parallel-vectorize-unroll
    builder.run("compute_at", block=block, loop=location)
    return [name]

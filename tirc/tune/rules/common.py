"""Steps several rules end with: vectorize a block's innermost loop, sample an unroll depth."""

from __future__ import annotations

from tirc.schedule.sref import SRef
from tirc.tune.builder import PlanBuilder

UNROLL_DEPTHS = [0, 16, 64, 512]


def vectorize_innermost(builder: PlanBuilder, block: SRef) -> None:
    loops = builder.get_loops(block)
    if loops:
        builder.run("vectorize", loop=loops[-1])


def annotate_unroll(builder: PlanBuilder, loop: SRef) -> None:
    """pragma_auto_unroll_max_step on `loop`: the unroll pass unrolls inner loops up to that
    many iterations in all (0: none)."""
    depth = builder.sample_choice(UNROLL_DEPTHS)
    if depth.value:
        builder.run("annotate", target=loop, key="pragma_auto_unroll_max_step", value=depth)

"""cross-thread-reduction (CUDA): one thread block per output element, its threads sharing
the reduction.

Applies to a reduction block without reuse under a plain nest whose innermost loop reduces
(row sums, softmax, layernorm statistics, gemv). The innermost reduction loop is split by a
sampled thread count and its inner part bound to threadIdx.x (lowering makes it an
all-reduce); the spatial loops are fused and bound to blockIdx.x.
"""

from __future__ import annotations

from tirc.ir.stmt import IterType
from tirc.tune.builder import PlanBuilder, loop_extent
from tirc.tune.rules.analysis import has_reuse, plain_nest

THREADS = [32, 64, 128, 256, 512]


def apply(builder: PlanBuilder, name: str) -> list[str] | None:
    nest = plain_nest(builder, name)
    if nest is None or not nest.reduce or has_reuse(nest.block):
        return None
    if nest.roles[-1] is not IterType.REDUCE or len(nest.block.block.writes) != 1:
        return None
    if any(role is IterType.REDUCE for role in nest.roles[: len(nest.spatial)]):
        return None  # spatial loops first, so they fuse into one launch dimension
    extent = loop_extent(nest.loops[-1]) or 0
    choices = [t for t in THREADS if t <= extent and extent % t == 0] or [1]
    threads = builder.sample_choice(choices).value
    block = builder.get_sblock(name)
    loops = builder.get_loops(block)
    if threads > 1:
        _, inner = builder.split(loops[-1], [None, threads])
        builder.run("bind", loop=inner, thread="threadIdx.x")
    spatial = loops[: len(nest.spatial)]
    if spatial:
        fused = builder.fuse(spatial)
        builder.run("bind", loop=fused, thread="blockIdx.x")
    return [name]

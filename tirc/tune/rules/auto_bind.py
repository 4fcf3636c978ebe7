"""auto-bind (CUDA): the rule every block falls back on, so that each one runs on threads.

Applies to every block under a plain nest that no earlier rule scheduled: its leading spatial
loops are fused, split by a sampled thread count, and bound to blockIdx.x and threadIdx.x
(elementwise maps, transposes, the parts of softmax and layernorm that map).
"""

from __future__ import annotations

from tirc.ir.stmt import IterType
from tirc.tune.builder import PlanBuilder, loop_extent
from tirc.tune.rules.analysis import plain_nest

THREADS = [32, 64, 128, 256, 512, 1024]


def apply(builder: PlanBuilder, name: str) -> list[str] | None:
    nest = plain_nest(builder, name)
    if nest is None:
        return None
    count = 0
    for role in nest.roles:
        if role is not IterType.SPATIAL:
            break
        count += 1
    if count == 0:
        return None
    block = builder.get_sblock(name)
    loops = builder.get_loops(block)
    fused = builder.fuse(loops[:count])
    extent = loop_extent(fused) or 1
    choices = [t for t in THREADS if t <= extent] or [extent]
    threads = builder.sample_choice(choices).value
    if threads >= extent:
        builder.run("bind", loop=fused, thread="threadIdx.x")
        return [name]
    outer, inner = builder.split(fused, [None, threads])
    builder.run("bind", loop=outer, thread="blockIdx.x")
    builder.run("bind", loop=inner, thread="threadIdx.x")
    return [name]

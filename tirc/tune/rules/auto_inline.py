"""auto-inline: an elementwise producer is computed where it is read, when the sampler says so.

Applies to a block with spatial iterators only, that writes one buffer the function allocates
(not a parameter), and that compute_inline accepts: a padding stage before a convolution, an
elementwise stage inside a softmax or a fused epilogue's producer. Keeping the block is the
other choice, since an inlined condition can stop a consumer's vectorization (conv2d's pad).
"""

from __future__ import annotations

from tirc.ir.stmt import IterType
from tirc.schedule import primitives
from tirc.schedule.errors import ScheduleError
from tirc.schedule.schedule import Schedule
from tirc.tune.builder import PlanBuilder, writes_output


def apply(builder: PlanBuilder, name: str) -> list[str] | None:
    blocks = builder.sch.blocks_named(name)
    if len(blocks) != 1:
        return None
    block = blocks[0]
    node = block.block
    if not node.iter_vars or any(iv.iter_type is not IterType.SPATIAL for iv in node.iter_vars):
        return None
    if len(node.writes) != 1 or node.init is not None or writes_output(builder, block):
        return None
    if not _can_inline(builder, name):
        return None
    if builder.sample_choice([True, False]).value is not True:
        return None
    handle = builder.get_sblock(name)
    builder.run("compute_inline", block=handle)
    return [name]


def _can_inline(builder: PlanBuilder, name: str) -> bool:
    """compute_inline's preconditions, tried on a copy of the schedule (nothing recorded)."""
    trial = Schedule(builder.module, builder.func)
    trial.context = {}  # the primitives read it
    entry = primitives.by_op("compute_inline")
    assert entry is not None
    try:
        entry.apply(trial, block=trial.blocks_named(name)[0])
    except ScheduleError:
        return False
    return True

"""sample_compute_location: where to compute a block, replayed from the plan.

The decision is -2 (inline), -1 (the root of its scope) or the index of a loop of the
block's first consumer, counted from the outermost. Decision 1 → loop j of `for i, j`.
"""

from __future__ import annotations

from tirc.schedule.errors import ScheduleError
from tirc.schedule.location import LocationMark
from tirc.schedule.primitives import primitive
from tirc.schedule.schedule import Schedule, describe
from tirc.schedule.signature import Kind, Param, Signature
from tirc.schedule.sref import SRef


@primitive(
    Signature(
        "sample_compute_location",
        "SampleComputeLocation",
        inputs=(Param("block", Kind.BLOCK),),
        outputs="one",
    )
)
def sample_compute_location(
    sch: Schedule, block: SRef, decision: object = None
) -> SRef | LocationMark:
    if decision is None:
        raise ScheduleError(
            "the plan gives no decision; tirc replays plans and does not sample", block
        )
    if not isinstance(decision, int) or isinstance(decision, bool) or decision < -2:
        raise ScheduleError(
            f"the decision {decision!r} is not -2 (inline), -1 (root) or a loop index", block
        )
    if decision < 0:
        return LocationMark(decision)
    root = block.enclosing_block()
    if root is None:
        raise ScheduleError("the root block has no compute location", block)
    consumers = sch.state_owning(block).scope(root).consumers(block)
    if not consumers:
        raise ScheduleError(
            f"the decision {decision} names a loop of a consumer, but {describe(block)} has "
            "no consumer",
            block,
        )
    loops = sch.loops_above(consumers[0])
    if decision >= len(loops):
        raise ScheduleError(
            f"the decision {decision} names a loop of {describe(consumers[0])}, which has "
            f"{len(loops)} loops",
            block,
            consumers[0],
        )
    return loops[decision]

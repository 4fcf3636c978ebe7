"""compute_at: move a producer under a loop of its consumers, computing there exactly the
region the consumers read in one iteration of that loop (loops `ax0, ax1, ...` regenerated).
The block's scope must be a stage pipeline: no block overwrites what an earlier one reads,
and each producer writes all that its consumers read from it.

    for i, j in T.grid(128, 128): B[i, j] = ...       for i in range(128):
    for i, j in T.grid(128, 128): C[i, j] = B[i, j]  →    for ax0, ax1 in T.grid(1, 128):
                                                              B[i + ax0, ax1] = ...
                                                          for j in range(128): C[i, j] = ...
"""

from __future__ import annotations

from tirc.schedule.compute_location import move_block_under_loop
from tirc.schedule.location import LocationMark
from tirc.schedule.location_marks import apply_mark
from tirc.schedule.primitives import primitive
from tirc.schedule.schedule import Schedule
from tirc.schedule.signature import Kind, Param, Signature, optional
from tirc.schedule.sref import SRef


@primitive(
    Signature(
        "compute_at",
        "ComputeAt",
        inputs=(Param("block", Kind.BLOCK), Param("loop", Kind.LOCATION)),
        attrs=(
            optional("preserve_unit_loops", Kind.BOOL, False),
            optional("index", Kind.INT, -1),
        ),
        doc="Move a producer block under a loop of its consumers.",
    )
)
def compute_at(
    sch: Schedule,
    block: SRef,
    loop: SRef | LocationMark,
    preserve_unit_loops: bool = False,
    index: int = -1,
) -> None:
    if isinstance(loop, LocationMark):
        apply_mark(sch, block, loop, "compute_inline")
        return
    move_block_under_loop(sch, block, loop, bool(preserve_unit_loops), int(index), True)

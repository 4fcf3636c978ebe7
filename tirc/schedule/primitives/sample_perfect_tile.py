"""sample_perfect_tile: the factors of a perfect tiling of a loop, replayed from the plan.

tirc replays plans and does not sample: the factors are the step's decision, checked to
have `n` entries whose product is the loop's extent. A loop of 128, n=3 → `[4, 8, 4]`.
"""

from __future__ import annotations

import math

from tirc.ir.expr import IntImm
from tirc.schedule.errors import ScheduleError
from tirc.schedule.primitives import primitive
from tirc.schedule.schedule import Schedule, describe
from tirc.schedule.signature import Kind, Param, Signature, optional
from tirc.schedule.sref import SRef


@primitive(
    Signature(
        "sample_perfect_tile",
        "SamplePerfectTile",
        inputs=(Param("loop", Kind.LOOP),),
        attrs=(Param("n", Kind.INT), optional("max_innermost_factor", Kind.INT, 16)),
        outputs="many",
    )
)
def sample_perfect_tile(
    sch: Schedule,
    loop: SRef,
    n: int,
    max_innermost_factor: int = 16,
    decision: object = None,
) -> list[int | None]:
    if not isinstance(n, int) or n < 1:
        raise ScheduleError(f"a tiling has at least one factor, not {n!r}", loop)
    extent = loop.loop.extent
    if not isinstance(extent, IntImm):
        # Nothing to choose: the outer factor is inferred, as TVM does for symbolic extents.
        return [None] + [1] * (n - 1)
    if decision is None:
        raise ScheduleError(
            f"the plan gives no decision for this tiling of {describe(loop)}; tirc replays "
            "plans and does not sample",
            loop,
        )
    factors = decision
    if not (
        isinstance(factors, list)
        and all(isinstance(f, int) and not isinstance(f, bool) and f >= 1 for f in factors)
    ):
        raise ScheduleError(f"the decision {factors!r} is not a list of positive integers", loop)
    if len(factors) != n:
        raise ScheduleError(
            f"the decision {factors} has {len(factors)} factors but the step asks for {n}", loop
        )
    if math.prod(factors) != extent.value:
        raise ScheduleError(
            f"the decision {factors} is not a perfect tiling of {describe(loop)}: the factors "
            f"multiply to {math.prod(factors)}, the extent is {extent.value}",
            loop,
        )
    return list(factors)

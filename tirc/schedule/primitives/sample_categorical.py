"""sample_categorical: one of several candidate values, replayed from the plan.

The decision is the index of the chosen candidate. candidates [32, 64, 128], decision 1 → 64.
"""

from __future__ import annotations

from tirc.schedule.errors import ScheduleError
from tirc.schedule.primitives import primitive
from tirc.schedule.schedule import Schedule
from tirc.schedule.signature import Kind, Param, Signature, optional


@primitive(
    Signature(
        "sample_categorical",
        "SampleCategorical",
        attrs=(Param("candidates", Kind.VALUE), optional("probs", Kind.VALUE, None)),
        outputs="one",
    )
)
def sample_categorical(
    sch: Schedule, candidates: object, probs: object = None, decision: object = None
) -> object:
    if not isinstance(candidates, list) or not candidates:
        raise ScheduleError(f"the candidates must be a non-empty list, not {candidates!r}")
    if probs is not None and (not isinstance(probs, list) or len(probs) != len(candidates)):
        raise ScheduleError(
            f"there are {len(candidates)} candidates but the probabilities are {probs!r}"
        )
    if decision is None:
        raise ScheduleError("the plan gives no decision; tirc replays plans and does not sample")
    if not isinstance(decision, int) or isinstance(decision, bool):
        raise ScheduleError(f"the decision {decision!r} is not the index of a candidate")
    if not 0 <= decision < len(candidates):
        raise ScheduleError(
            f"the decision {decision} is out of range: there are {len(candidates)} candidates"
        )
    return candidates[decision]

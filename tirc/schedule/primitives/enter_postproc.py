"""enter_postproc: marks where a tuning trace's post-processing begins; changes nothing.

`EnterPostproc` → the same module.
"""

from __future__ import annotations

from tirc.schedule.primitives import primitive
from tirc.schedule.schedule import Schedule
from tirc.schedule.signature import Signature


@primitive(Signature("enter_postproc", "EnterPostproc"))
def enter_postproc(sch: Schedule) -> None:
    return None

"""unroll: ask for a loop to be unrolled; always legal, since it keeps the iteration order.

A thread binding the loop had is dropped. `for k in range(4):` → `for k in T.unroll(4):`
"""

from __future__ import annotations

from tirc.ir.stmt import ForKind
from tirc.schedule.loop_kind import set_kind
from tirc.schedule.primitives import primitive
from tirc.schedule.schedule import Schedule
from tirc.schedule.signature import Kind, Param, Signature
from tirc.schedule.sref import SRef


@primitive(Signature("unroll", "Unroll", inputs=(Param("loop", Kind.LOOP),)))
def unroll(sch: Schedule, loop: SRef) -> None:
    set_kind(sch, loop, ForKind.UNROLLED)

"""vectorize: run a loop's iterations as the lanes of vector instructions.

The same conditions as parallel: a compact data flow below, data-parallel iterators only.
`for j in range(8):` → `for j in T.vectorized(8):`
"""

from __future__ import annotations

from tirc.ir.stmt import ForKind
from tirc.schedule.loop_kind import check_parallelizable, set_kind
from tirc.schedule.primitives import primitive
from tirc.schedule.schedule import Schedule
from tirc.schedule.signature import Kind, Param, Signature
from tirc.schedule.sref import SRef


@primitive(Signature("vectorize", "Vectorize", inputs=(Param("loop", Kind.LOOP),)))
def vectorize(sch: Schedule, loop: SRef) -> None:
    check_parallelizable(sch, loop, ForKind.VECTORIZED)
    set_kind(sch, loop, ForKind.VECTORIZED)

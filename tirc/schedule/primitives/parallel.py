"""parallel: run a loop's iterations on several CPU threads.

The blocks under the loop must form a compact data flow and the loop may feed only their
data-parallel iterators. `for i in range(128):` → `for i in T.parallel(128):`
"""

from __future__ import annotations

from tirc.ir.stmt import ForKind
from tirc.schedule.loop_kind import check_parallelizable, set_kind
from tirc.schedule.primitives import primitive
from tirc.schedule.schedule import Schedule
from tirc.schedule.signature import Kind, Param, Signature
from tirc.schedule.sref import SRef


@primitive(Signature("parallel", "Parallel", inputs=(Param("loop", Kind.LOOP),)))
def parallel(sch: Schedule, loop: SRef) -> None:
    check_parallelizable(sch, loop, ForKind.PARALLEL)
    set_kind(sch, loop, ForKind.PARALLEL)

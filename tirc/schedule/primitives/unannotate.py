"""unannotate: remove a key from a loop's or a block's annotations; the key must be there.

`for i in T.serial(128, annotations={"pragma_unroll": 4}):` → `for i in range(128):`
"""

from __future__ import annotations

import dataclasses

from tirc.schedule.errors import ScheduleError
from tirc.schedule.primitives import primitive
from tirc.schedule.schedule import Schedule, describe
from tirc.schedule.signature import Kind, Param, Signature
from tirc.schedule.sref import SRef


@primitive(
    Signature(
        "unannotate",
        "Unannotate",
        inputs=(Param("target", Kind.BLOCK_OR_LOOP),),
        attrs=(Param("key", Kind.STR),),
    )
)
def unannotate(sch: Schedule, target: SRef, key: str) -> None:
    stmt = target.stmt
    assert stmt is not None, "apply_plan passes valid handles only"
    annotations = stmt.annotations
    if key not in annotations:
        keys = ", ".join(f"'{k}'" for k in annotations.keys()) or "none"
        raise ScheduleError(
            f"{describe(target)} has no annotation '{key}' (its annotations: {keys})", target
        )
    new = dataclasses.replace(stmt, annotations=annotations.remove(key))
    sch.state_owning(target).replace(target, new)

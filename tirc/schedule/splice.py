"""Replacing one loop by several statements: spliced into the sequence that holds it, so no
sequence nests in another (what the printer and structural equality expect).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

from tirc.ir.stmt import SBlock, SeqStmt, Stmt, seq
from tirc.schedule.sref import SRef
from tirc.schedule.state import ScheduleState


def replace_with_sequence(
    state: ScheduleState, loop: SRef, stmts: Sequence[Stmt], block_reuse: Mapping[SBlock, SBlock]
) -> None:
    """Put `stmts` where `loop` is; when its parent's body is a sequence holding it, the
    parent is rebuilt with them spliced in (loop handles follow their loop variables)."""
    parent = loop.parent
    assert parent is not None
    holder = parent.stmt
    assert holder is not None  # a loop's parent is a loop or a block
    body = holder.body
    if isinstance(body, SeqStmt) and any(item is loop.stmt for item in body.stmts):
        items: list[Stmt] = []
        for item in body.stmts:
            items.extend(stmts if item is loop.stmt else [item])
        new_parent = dataclasses.replace(holder, body=seq(*items))
        state.replace(parent, new_parent, block_reuse)
        return
    state.replace(loop, seq(*stmts), block_reuse)

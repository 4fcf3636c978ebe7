"""Replacing one loop by several statements: spliced into the sequence that holds it, so no
sequence nests in another (what the printer and structural equality expect).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

from tirc.ir.stmt import SBlock, SeqStmt, Stmt, seq
from tirc.schedule.sref import SRef


def replace_with_sequence(
    state: object, loop: SRef, stmts: Sequence[Stmt], block_reuse: Mapping[SBlock, SBlock]
) -> None:
    """Put `stmts` where `loop` is; when its parent's body is a sequence holding it, the
    parent is rebuilt with them spliced in (loop handles follow their loop variables)."""
    parent = loop.parent
    assert parent is not None
    holder = parent.stmt
    body = holder.body  # type: ignore[union-attr]
    if isinstance(body, SeqStmt) and any(item is loop.stmt for item in body.stmts):
        items: list[Stmt] = []
        for item in body.stmts:
            items.extend(stmts if item is loop.stmt else [item])
        new_parent = dataclasses.replace(holder, body=seq(*items))  # type: ignore[type-var]
        state.replace(parent, new_parent, block_reuse)  # type: ignore[attr-defined]
        return
    state.replace(loop, seq(*stmts), block_reuse)  # type: ignore[attr-defined]

"""Taking a leaf block out of its scope: the lowest ancestor with other children loses it.

The loops that held only the block go with it; the ancestor that has more than one child
(a loop whose body is a sequence, or the scope root) is rebuilt without that child. A block
that is the only thing in its scope cannot be removed: the scope would be empty.
"""

from __future__ import annotations

import dataclasses

from tirc.ir.stmt import For, SBlock, SBlockRealize, SeqStmt, Stmt, seq
from tirc.schedule.errors import ScheduleError
from tirc.schedule.schedule import describe
from tirc.schedule.sref import SRef


@dataclasses.dataclass(frozen=True)
class RemovalPlan:
    """Replace `source` (a loop or the scope root) by `target` to remove the block."""

    source: SRef
    target: For | SBlock


def plan_leaf_removal(block: SRef) -> RemovalPlan:
    last: For | SBlock = block.block
    node = block.parent
    while node is not None and node.is_loop:
        body = node.loop.body
        if isinstance(body, SeqStmt) and len(body.stmts) > 1:
            break
        last = node.loop
        node = node.parent
    assert node is not None, "the root block has no parent"
    stmt = node.node
    body = stmt.body
    if isinstance(body, SeqStmt):
        kept = [child for child in body.stmts if not _holds(child, last)]
        if len(kept) < len(body.stmts):
            return RemovalPlan(node, dataclasses.replace(stmt, body=seq(*kept)))
    raise ScheduleError(
        f"{describe(block)} is the only leaf in the scope of {describe(node)}: removing it "
        "would leave the scope empty",
        block,
        node,
    )


def _holds(child: Stmt, target: For | SBlock) -> bool:
    return child is target or (isinstance(child, SBlockRealize) and child.block is target)

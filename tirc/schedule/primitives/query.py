"""Queries: handles to blocks and loops, and the dependence neighbours of a block.

get_sblock("C") → the block named C; get_loops(C) → [i, j, k], outermost first;
get_child_blocks, get_producers, get_consumers, get_output_blocks.
"""

from __future__ import annotations

import difflib

from tirc.ir.stmt import SBlock
from tirc.schedule.errors import ScheduleError
from tirc.schedule.primitives import primitive
from tirc.schedule.schedule import Schedule, describe
from tirc.schedule.scope import BlockScope, child_blocks
from tirc.schedule.signature import Kind, Param, Signature, optional
from tirc.schedule.sref import SRef
from tirc.schedule.state import children


@primitive(
    Signature(
        "get_sblock",
        "GetSBlock",
        attrs=(Param("name", Kind.STR), optional("func_name", Kind.STR, None)),
        outputs="one",
        doc="The block with this name.",
    )
)
def get_sblock(sch: Schedule, name: str, func_name: str | None = None) -> SRef:
    if name == "root":
        return sch.state_of(func_name).root
    found = sch.blocks_named(name, func_name)
    if not found:
        state = sch.state_of(func_name)

        names = [b.name for b in _all_blocks(state.root.stmt)]
        close = difflib.get_close_matches(name, names, n=1)
        hint = f"; did you mean '{close[0]}'?" if close else ""
        raise ScheduleError(f"no block named '{name}' in function '{state.func_name}'{hint}")
    if len(found) > 1:
        raise ScheduleError(
            f"{len(found)} blocks are named '{name}'; block names must be unique", *found
        )
    return found[0]


def _all_blocks(stmt: object) -> list[SBlock]:
    result: list[SBlock] = []
    pending = [stmt]
    while pending:
        node = pending.pop()
        if isinstance(node, SBlock):
            result.append(node)
        pending.extend(children(node))
    return result


@primitive(Signature("get_loops", "GetLoops", inputs=(Param("block", Kind.BLOCK),), outputs="many"))
def get_loops(sch: Schedule, block: SRef) -> list[SRef]:
    return sch.loops_above(block)


@primitive(
    Signature(
        "get_child_blocks",
        "GetChildBlocks",
        inputs=(Param("parent", Kind.BLOCK_OR_LOOP),),
        outputs="many",
    )
)
def get_child_blocks(sch: Schedule, parent: SRef) -> list[SRef]:
    return child_blocks(parent, children, sch.state_owning(parent).get_sref)


def _scope_of(sch: Schedule, block: SRef) -> tuple[BlockScope, SRef]:
    if not block.is_block:
        raise ScheduleError(f"{describe(block)} is not a block", block)
    root = block.enclosing_block()
    if root is None:
        raise ScheduleError("the root block has no producers or consumers", block)
    return sch.state_owning(block).scope(root), root


@primitive(
    Signature("get_producers", "GetProducers", inputs=(Param("block", Kind.BLOCK),), outputs="many")
)
def get_producers(sch: Schedule, block: SRef) -> list[SRef]:
    scope, _ = _scope_of(sch, block)
    return scope.producers(block)


@primitive(
    Signature("get_consumers", "GetConsumers", inputs=(Param("block", Kind.BLOCK),), outputs="many")
)
def get_consumers(sch: Schedule, block: SRef) -> list[SRef]:
    scope, _ = _scope_of(sch, block)
    return scope.consumers(block)


@primitive(
    Signature(
        "get_output_blocks",
        "GetOutputBlocks",
        inputs=(Param("scope_block", Kind.BLOCK),),
        outputs="many",
    )
)
def get_output_blocks(sch: Schedule, scope_block: SRef) -> list[SRef]:
    """Every block below the scope block, nested ones too, in program order, that writes a
    buffer its own scope block does not allocate (TVM's output blocks)."""
    state = sch.state_owning(scope_block)
    found: list[SRef] = []
    pending = list(reversed(children(scope_block.stmt)))
    while pending:
        node = pending.pop()
        if isinstance(node, SBlock):
            block = state.get_sref(node)
            scope_root = block.enclosing_block()
            if scope_root is not None and _writes_outside(block, scope_root):
                found.append(block)
        pending.extend(reversed(children(node)))
    return found


def _writes_outside(block: SRef, scope_root: SRef) -> bool:
    allocated = {id(buffer) for buffer in scope_root.block.alloc_buffers}
    return any(id(region.buffer) not in allocated for region in block.block.writes)

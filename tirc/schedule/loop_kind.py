"""Changing how a loop runs (parallel, vectorized, bound to a thread): the checks these
primitives share, and the rewrite, which only touches the loop itself.

A loop may run its iterations at once when the blocks under it form a compact data flow
(each is complete or a reduction in its scope) and every block iterator the loop feeds is
data-parallel; threadIdx.* alone may also run a reduction (a cross-thread reduction).
"""

from __future__ import annotations

import dataclasses

from tirc.ir.expr import Var
from tirc.ir.functor import uses_var, walk
from tirc.ir.stmt import For, ForKind, IterType, IterVar, SBlock, SBlockRealize
from tirc.schedule.errors import ScheduleError
from tirc.schedule.properties import not_complete, not_reduction, realize_of
from tirc.schedule.schedule import Schedule, describe
from tirc.schedule.sref import SRef
from tirc.schedule.state import ScheduleState, children

# What a loop of each kind cannot do with a reduction iterator, for the message.
_REDUCTION_REFUSAL = {
    ForKind.PARALLEL: "a reduction cannot run in parallel",
    ForKind.VECTORIZED: "a reduction cannot be vectorized",
    ForKind.THREAD_BINDING: "only threadIdx.x/y/z can run a reduction (across threads)",
}

_ITER_NAMES = {
    IterType.REDUCE: "reduction",
    IterType.SCAN: "ordered (scan)",
    IterType.OPAQUE: "opaque",
    IterType.THREAD: "thread",
}

_KIND_WORDS = {
    ForKind.PARALLEL: "parallel",
    ForKind.VECTORIZED: "vectorized",
    ForKind.THREAD_BINDING: "bound to a thread",
}


def check_parallelizable(sch: Schedule, loop: SRef, kind: ForKind, thread: str = "") -> None:
    """Raise ScheduleError unless `loop` may become a loop of `kind` (on `thread`)."""
    state = sch.state_owning(loop)
    _check_compact_data_flow(state, loop, kind)
    for realize in _realizes_under(loop.loop):
        if id(realize.block) in state.stmt2ref:  # blocks made by tensorize have no sref
            _check_bindings(state, loop, realize, kind, thread)


def set_kind(sch: Schedule, loop: SRef, kind: ForKind, thread: str = "") -> None:
    """Make `loop` a loop of `kind`; a thread binding names its thread, others drop it."""
    old = loop.loop
    binding = None
    if kind is ForKind.THREAD_BINDING:
        binding = IterVar(Var(thread, old.loop_var.dtype), None, IterType.THREAD, thread)
    new = dataclasses.replace(old, kind=kind, thread_binding=binding)
    sch.state_owning(loop).replace(loop, new)


def _check_compact_data_flow(state: ScheduleState, loop: SRef, kind: ForKind) -> None:
    blocks = _child_blocks(state, loop)
    writers = _writers_within(state, blocks)
    for block in blocks:
        complete = not_complete(writers, block)
        if complete is None:
            continue
        reduction = not_reduction(writers, block, realize_of(block))
        if reduction is None:
            continue
        raise ScheduleError(
            f"{describe(loop)} cannot be {_KIND_WORDS[kind]}: {describe(block)} under it is "
            f"neither a complete block ({complete}) nor a reduction block ({reduction}), so "
            "its iterations may depend on each other",
            loop,
            block,
        )


def _writers_within(state: ScheduleState, blocks: list[SRef]) -> dict[int, list[SRef]]:
    """Writers by buffer inside the given blocks' own scopes, the first block's kept for a
    buffer several write. TVM judges a block under a loop "dominant" against these, not
    against its siblings, so sibling blocks writing one buffer (an init and an update) pass.
    """
    writers: dict[int, list[SRef]] = {}
    for block in blocks:
        for buffer, found in state.scope(block).writers.items():
            writers.setdefault(buffer, found)
    return writers


def _child_blocks(state: ScheduleState, loop: SRef) -> list[SRef]:
    """The blocks under `loop` not nested in another block, in program order."""
    found: list[SRef] = []
    pending = list(reversed(children(loop.loop)))
    while pending:
        node = pending.pop()
        if isinstance(node, SBlock):
            found.append(state.get_sref(node))
        else:
            pending.extend(reversed(children(node)))
    return found


def _realizes_under(stmt: For) -> list[SBlockRealize]:
    found: list[SBlockRealize] = []
    walk(stmt.body, lambda node: found.append(node) if isinstance(node, SBlockRealize) else None)
    return found


def _check_bindings(
    state: ScheduleState, loop: SRef, realize: SBlockRealize, kind: ForKind, thread: str
) -> None:
    loop_var = loop.loop.loop_var
    for iter_var, value in zip(realize.block.iter_vars, realize.iter_values, strict=True):
        if iter_var.iter_type is IterType.SPATIAL or not uses_var(value, loop_var):
            continue
        block = state.get_sref(realize.block)
        if iter_var.iter_type is IterType.REDUCE:
            if kind is ForKind.THREAD_BINDING and thread.startswith("threadIdx."):
                continue
            refusal = _REDUCTION_REFUSAL[kind]
            if kind is ForKind.THREAD_BINDING:
                refusal += f", not {thread}"
        else:
            refusal = f"only a data-parallel iterator can be {_KIND_WORDS[kind]}"
        raise ScheduleError(
            f"{describe(loop)} is bound to the {_ITER_NAMES[iter_var.iter_type]} variable "
            f"{iter_var.var.name} of {describe(block)}: {refusal}",
            loop,
            block,
        )

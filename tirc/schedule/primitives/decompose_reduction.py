"""decompose_reduction: a reduction block's T.init() becomes a block of its own, run before
`loop` over copies of the loops below it that the data-parallel iterators use.

The reduction block is renamed `<name>_update` and reads what it writes; the new block,
`<name>_init`, runs under loops `<loop>_init` and is returned.

    for i, k in T.grid(128, 128):                 for i in range(128):   # loop = k
        with T.sblock("C"):                           with T.sblock("C_init"): C[vi] = 0.0
            with T.init(): C[vi] = 0.0        →       for k in range(128):
            C[vi] = C[vi] + A[vi, vk]                     with T.sblock("C_update"): C[vi] += ...
"""

from __future__ import annotations

import dataclasses
from typing import Any

from tirc.ir import expr as E
from tirc.ir.buffer import BufferRegion
from tirc.ir.expr import IntImm, PrimExpr, Var
from tirc.ir.functor import Mutator, uses_var
from tirc.ir.node import Node
from tirc.ir.stmt import For, IterType, IterVar, SBlock, SBlockRealize, SeqStmt, Stmt, seq
from tirc.ir.substitute import substitute
from tirc.schedule.errors import ScheduleError
from tirc.schedule.primitives import primitive
from tirc.schedule.properties import not_reduction, realize_of
from tirc.schedule.schedule import Schedule, describe
from tirc.schedule.signature import Kind, Param, Signature
from tirc.schedule.sref import SRef


@primitive(
    Signature(
        "decompose_reduction",
        "DecomposeReduction",
        inputs=(Param("block", Kind.BLOCK), Param("loop", Kind.LOOP)),
        outputs="one",
        doc="Split a reduction block's init into its own block, placed before the loop.",
    )
)
def decompose_reduction(sch: Schedule, block: SRef, loop: SRef) -> SRef:
    state = sch.state_owning(block)
    loops = sch.loops_above(block)
    if not any(item is loop for item in loops):
        raise ScheduleError(
            f"{describe(loop)} is not a loop above {describe(block)} in its scope", block, loop
        )
    scope_root = block.enclosing_block()
    assert scope_root is not None
    realize = realize_of(block)
    reason = not_reduction(state.scope(scope_root).writers, block, realize)
    if reason is not None:
        raise ScheduleError(f"{describe(block)} is not a reduction block: {reason}", block)
    _check_above_reduction_loops(block, realize, loops, loop)
    _check_no_repeating_loop_below(block, realize, loops, loop)
    init = _init_nest(block.block, realize, loops, loop)
    update = _update_block(block.block)
    new_loop = _BlockSwap(block.block, update).visit(loop.loop)
    parent = loop.parent
    assert parent is not None
    holder = parent.node
    new_parent = _InsertBefore(loop.loop, init, new_loop).generic_visit(holder)
    reuse = {block.block: update}
    if isinstance(holder, SBlock):
        assert isinstance(new_parent, SBlock)  # generic_visit keeps the node's class
        reuse[holder] = new_parent
    state.replace(parent, new_parent, reuse)
    init_block = init
    while not isinstance(init_block, SBlockRealize):
        assert isinstance(init_block, For)  # _init_nest: loops down to the init's realize
        init_block = init_block.body
    return state.get_sref(init_block.block)


def _check_above_reduction_loops(
    block: SRef, realize: SBlockRealize, loops: list[SRef], loop: SRef
) -> None:
    """No loop above `loop` may feed a reduction iterator: the init would run once per
    iteration of it, wiping partial results."""
    for iter_var, value in zip(block.block.iter_vars, realize.iter_values, strict=True):
        if iter_var.iter_type is not IterType.REDUCE:
            continue
        for higher in loops:
            if higher is loop:
                break
            if uses_var(value, higher.loop.loop_var):
                raise ScheduleError(
                    f"{describe(loop)} must be above every loop that feeds a reduction "
                    f"iterator of {describe(block)}, but {describe(higher)} above it feeds "
                    f"{iter_var.var.name}",
                    loop,
                    block,
                )


def _check_no_repeating_loop_below(
    block: SRef, realize: SBlockRealize, loops: list[SRef], loop: SRef
) -> None:
    """No loop from `loop` down may feed none of the block's iterators (a unit loop aside):
    the block repeats its whole reduction in each of its iterations, T.init() included, and
    the init taken out of it would run once, so the repetitions would add up.

        for k_0, k_1 in T.grid(2, 16):      # "C" under k_0 repeats, each time from its init
            C[vi] += A[vi, vk]   (vk = k_1) decompose at k_0 -> C = 2 * sum: refused"""
    start = next(index for index, item in enumerate(loops) if item is loop)
    for item in loops[start:]:
        node = item.loop
        if isinstance(node.extent, IntImm) and node.extent.value == 1:
            continue
        if not any(uses_var(value, node.loop_var) for value in realize.iter_values):
            raise ScheduleError(
                f"cannot decompose the reduction of {describe(block)} at {describe(loop)}: "
                f"{describe(item)} feeds none of its iterators, so the block repeats its "
                "reduction in every iteration of it, each starting from its init; taken out "
                "of that loop, the init would run once and the repetitions would add up",
                item,
                block,
            )


def _init_nest(block: SBlock, realize: SBlockRealize, loops: list[SRef], loop: SRef) -> Stmt:
    """The init block under copies of the loops, at or below `loop`, its bindings use."""
    assert block.init is not None
    iter_vars: list[IterVar] = []
    values: list[PrimExpr] = []
    renamed: dict[Var, PrimExpr] = {}
    for iter_var, value in zip(block.iter_vars, realize.iter_values, strict=True):
        if iter_var.iter_type is not IterType.SPATIAL:
            continue
        var = Var(iter_var.var.name, iter_var.var.dtype)
        iter_vars.append(dataclasses.replace(iter_var, var=var))
        values.append(value)
        renamed[iter_var.var] = var
    writes = tuple(
        BufferRegion(region.buffer, substitute(region.region, renamed)) for region in block.writes
    )
    init = SBlock(
        f"{block.name}_init",
        tuple(iter_vars),
        (),
        writes,
        substitute(block.init, renamed),
        annotations=block.annotations,
    )
    chosen: list[For] = []
    discarded: set[Var] = set()
    start = next(index for index, item in enumerate(loops) if item is loop)
    for item in reversed(loops[start:]):
        node = item.loop
        if any(uses_var(value, node.loop_var) for value in values):
            chosen.append(node)
        else:
            discarded.add(node.loop_var)
    predicate = _kept_conjuncts(realize.predicate, discarded)
    body: Stmt = SBlockRealize(tuple(values), predicate, init)
    fresh: dict[Var, PrimExpr] = {}
    for node in chosen:  # innermost first
        var = Var(f"{node.loop_var.name}_init", node.loop_var.dtype)
        fresh[node.loop_var] = var
        binding = node.thread_binding
        if binding is not None:
            binding = dataclasses.replace(binding, var=Var(binding.var.name, binding.var.dtype))
        # a copy of the loop (annotations and all), as TVM 0.27 makes it
        body = dataclasses.replace(node, loop_var=var, body=body, thread_binding=binding)
    return substitute(body, fresh)


def _kept_conjuncts(predicate: PrimExpr, discarded: set[Var]) -> PrimExpr:
    """The conjuncts of `predicate` that use no discarded loop, last first (TVM's order)."""
    conjuncts: list[PrimExpr] = []
    while isinstance(predicate, E.And):
        conjuncts.append(predicate.b)
        predicate = predicate.a
    conjuncts.append(predicate)
    result: PrimExpr = IntImm(1, predicate.dtype)
    for item in conjuncts:
        if isinstance(item, IntImm) or uses_var(item, discarded):
            continue
        result = item if isinstance(result, IntImm) else E.And(result, item)
    return result


def _update_block(block: SBlock) -> SBlock:
    """The reduction without its init, reading what it writes first."""
    read = {id(region.buffer) for region in block.reads}
    reads = tuple(w for w in block.writes if id(w.buffer) not in read) + block.reads
    return dataclasses.replace(block, name=f"{block.name}_update", init=None, reads=reads)


class _BlockSwap(Mutator):
    """Rebuilds the path down to one block, which it replaces."""

    def __init__(self, old: SBlock, new: SBlock):
        self.old, self.new = old, new

    def visit_SBlock(self, node: SBlock) -> SBlock:
        if node is self.old:
            return self.new
        return self.generic_visit(node)


class _InsertBefore(Mutator):
    """Puts `init` before `loop` (rebuilt as `new_loop`) in its parent, flattening sequences."""

    def __init__(self, loop: For, init: Stmt, new_loop: For):
        self.loop, self.init, self.new_loop = loop, init, new_loop

    def visit(self, node: Any) -> Any:
        if node is self.loop:
            return SeqStmt((self.init, self.new_loop))
        if isinstance(node, (For, SBlock)):
            return node  # not below the parent's own body
        if isinstance(node, SeqStmt):
            items = [self.visit(item) for item in node.stmts]
            if all(a is b for a, b in zip(items, node.stmts, strict=True)):
                return node
            return seq(*items)
        return super().visit(node) if isinstance(node, (Node, tuple)) else node

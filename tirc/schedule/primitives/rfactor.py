"""rfactor: a reduction over a loop becomes two: a block `<name>_rf` that reduces into a new
buffer `<buffer>_rf` with one slot per iteration of the loop (inserted at `factor_axis`), then
the original block, which reduces those slots.

Preconditions: the loop holds that one block, a reduction in a scope that is a stage pipeline
(no block overwrites what an earlier one reads; each producer writes all that its consumers
read from it); the block's init and update match a commutative reducer, with the buffers it
reduces into all of one shape and stored at the same indices; the loop feeds a reduction
iterator and no data-parallel one (a unit loop that feeds none factors too). Where the
reduction's loops also hold a block outside any loop of its own (a write_at copy, a scalar
block at the root), tirc factors as usual and TVM 0.27 fails an internal check.

    for i, k0, k1 in T.grid(128, 4, 32):            for i, k0, k1 in T.grid(128, 4, 32):
        C[vi] += A[vi, vk]                  →           C_rf[vk1, vi] += A[vi, vk0 * 32 + vk1]
    (rfactor k1, factor_axis 0)                     for i, k1 in T.grid(128, 32):
                                                        C[vi] += C_rf[vk1, vi]
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from tirc.analysis.arith import Analyzer
from tirc.analysis.reducer import Match, match_reducer, same
from tirc.ir import dtype as dt
from tirc.ir import expr as E
from tirc.ir.buffer import Buffer, BufferRegion, Range
from tirc.ir.expr import BufferLoad, IntImm, PrimExpr, Var, is_const_int
from tirc.ir.functor import Mutator, uses_var, walk
from tirc.ir.node import Node
from tirc.ir.stmt import (
    Bind,
    BufferStore,
    For,
    ForKind,
    IterType,
    IterVar,
    SBlock,
    SBlockRealize,
    SeqStmt,
    Stmt,
    seq,
)
from tirc.ir.substitute import substitute
from tirc.schedule.errors import ScheduleError
from tirc.schedule.primitives import primitive
from tirc.schedule.properties import not_reduction, realize_of
from tirc.schedule.schedule import Schedule, describe
from tirc.schedule.signature import Kind, Param, Signature
from tirc.schedule.sref import SRef
from tirc.schedule.stage_pipeline import stage_pipeline_root
from tirc.schedule.state import ScheduleState, children
from tirc.text import script


@primitive(
    Signature(
        "rfactor",
        "RFactor",
        inputs=(Param("loop", Kind.LOOP),),
        attrs=(Param("factor_axis", Kind.INT),),
        outputs="one",
        doc="Factor a reduction over a loop into a reduction into a new buffer and a final one.",
    )
)
def rfactor(sch: Schedule, loop: SRef, factor_axis: int) -> SRef:
    state = sch.state_owning(loop)
    block = _single_block(state, loop)
    scope_root = stage_pipeline_root(state, block)
    realize = realize_of(block)
    reason = not_reduction(state.scope(scope_root).writers, block, realize)
    if reason is not None:
        raise ScheduleError(f"{describe(block)} is not a reduction block: {reason}", block)
    if loop.loop.kind is not ForKind.SERIAL:
        raise ScheduleError(f"{describe(loop)} must be a serial loop to be factored", loop)
    loops = sch.loops_above(block)
    spatial, reduce = _touched_loop_vars(realize)
    _check_loops(state, loops, loop, block, spatial, reduce)
    _check_every_slot_written(loops, loop, block, realize.predicate, reduce)
    inits, stores = _inits_and_updates(block)
    loads = [BufferLoad(store.buffer, store.indices) for store in stores]
    match = match_reducer(inits, [store.value for store in stores], loads)
    if match is None:
        raise ScheduleError(
            f"the update of {describe(block)} matches no known commutative reducer (sum, "
            "product, min, max, argmax, argmin) with its init as identity",
            block,
        )
    axis = factor_axis
    for store in stores:
        axis = _factor_axis(store.buffer, factor_axis, block)
    plan = _Factoring(block.block, realize, loop.loop, loops, stores, inits, match, axis, reduce)
    rf_nest = plan.rf_nest()
    if len(_blocks_under(state, loops[0].loop)) == 1:
        wb_nest = plan.wb_nest()
    else:  # the write-back stays among the outermost loop's other children
        wb_nest = _WriteBack(realize, plan).visit(loops[0].loop)
    root = scope_root.block
    body: Stmt = _SwapLoop(loops[0].loop, SeqStmt((rf_nest, wb_nest))).visit(root.body)
    new_root = dataclasses.replace(
        root, body=body, alloc_buffers=root.alloc_buffers + tuple(plan.rf_buffers)
    )
    state.replace(scope_root, new_root, {root: new_root, block.block: plan.wb_block})
    return state.get_sref(plan.rf_block)


def _blocks_under(state: ScheduleState, stmt: For) -> list[SBlock]:
    found: list[SBlock] = []
    pending: list[object] = list(reversed(children(stmt)))
    while pending:
        node = pending.pop()
        if isinstance(node, SBlock):
            found.append(node)
        else:
            pending.extend(reversed(children(node)))
    return found


def _single_block(state: ScheduleState, loop: SRef) -> SRef:
    blocks = _blocks_under(state, loop.loop)
    if len(blocks) != 1:
        raise ScheduleError(
            f"{describe(loop)} must have exactly one block under it, but it has {len(blocks)}",
            loop,
        )
    return state.get_sref(blocks[0])


def _loop_vars_in(expr: PrimExpr) -> list[Var]:
    found: list[Var] = []
    walk(
        expr,
        lambda node: found.append(node) if isinstance(node, Var) and node not in found else None,
    )
    return found


def _touched_loop_vars(realize: SBlockRealize) -> tuple[set[Var], set[Var]]:
    """The variables the data-parallel and the reduction iterators' bindings use."""
    spatial: set[Var] = set()
    reduce: set[Var] = set()
    for iter_var, value in zip(realize.block.iter_vars, realize.iter_values, strict=True):
        target = spatial if iter_var.iter_type is IterType.SPATIAL else reduce
        target.update(_loop_vars_in(value))
    return spatial, reduce


def _check_loops(
    state: ScheduleState,
    loops: list[SRef],
    loop: SRef,
    block: SRef,
    spatial: set[Var],
    reduce: set[Var],
) -> None:
    outermost = loops[0]
    blocks = _blocks_under(state, outermost.loop)
    if blocks[0] is not block.block:
        # the rf nest goes right before the outermost loop: a block under that loop ahead of
        # the reduction would then run after the rf block, out of order
        raise ScheduleError(
            f"the first block under the outermost loop {outermost.loop.loop_var.name} around "
            f'{describe(block)} is not that block but block "{blocks[0].name}"',
            outermost,
            block,
        )
    for item in loops:
        var = item.loop.loop_var
        if var in spatial and var in reduce:
            raise ScheduleError(
                f"{describe(item)} feeds both data-parallel and reduction iterators of "
                f"{describe(block)}",
                item,
                block,
            )
        if var in spatial and item is loop:
            raise ScheduleError(
                f"{describe(loop)} feeds a data-parallel iterator of {describe(block)}: only "
                "a reduction loop can be factored",
                loop,
                block,
            )
    if loop.loop.loop_var not in reduce and not is_const_int(loop.loop.extent, 1):
        # TVM factors any loop no data-parallel iterator reads; one that feeds no iterator
        # repeats the whole reduction, and each slot would hold all of it: the final block
        # would add them up, where the block computed it once
        raise ScheduleError(
            f"{describe(loop)} feeds no reduction iterator of {describe(block)}: each of its "
            "iterations would reduce into a slot the whole reduction, and the final block "
            "would add them up; only a reduction loop (or a unit loop) can be factored",
            loop,
            block,
        )


def _conjuncts(expr: PrimExpr) -> list[PrimExpr]:
    if isinstance(expr, E.And):
        return _conjuncts(expr.a) + _conjuncts(expr.b)
    return [expr]


def _check_every_slot_written(
    loops: list[SRef], loop: SRef, block: SRef, predicate: PrimExpr, reduce: set[Var]
) -> None:
    """Refuse when some slot of the rf buffer, which the final block reads, is provably never
    written: the rf block's init runs under the block's predicate, so a slot is written only
    if some iteration of the other reduction loops passes it.

    The slot checked is the last one: every loop that picks the slot (the factored loop, the
    data-parallel ones) at its last value, the predicate then false for every value of the
    other reduction loops. An uneven split of the factored loop itself does that:

        k_0 * 25 + (k_1_0 * 3 + k_1_1) < 256, rfactor k_1_0: at k_0 = 10, k_1_0 = 8 no k_1_1
        passes, so the slot B_rf_rf[8, 10, vi] is never written

    A symbolic bound is let through (TVM's GPU schedules factor a loop of `n` split by 16 and
    then decompose the reduction, which takes the init out of the predicate); so is a
    predicate on the data-parallel loops alone, which a later reverse_compute_at of the final
    block bounds."""
    if isinstance(predicate, IntImm) and predicate.value != 0:
        return
    last: dict[Var, PrimExpr] = {}
    analyzer = Analyzer()
    for item in loops:
        var = item.loop.loop_var
        if var in reduce and item is not loop:
            analyzer.bind(var, Range(item.loop.min, item.loop.extent))
        else:
            one = IntImm(1, item.loop.extent.dtype)
            last[var] = E.Sub(E.Add(item.loop.min, item.loop.extent), one)
    witnesses = {item.loop.loop_var for item in loops} - set(last)
    for conjunct in _conjuncts(predicate):
        if not uses_var(conjunct, {loop.loop.loop_var, *witnesses}):
            continue
        at_last = analyzer.simplify(substitute(conjunct, last))
        if not analyzer.can_prove(E.Not(at_last)):
            continue
        slot = ", ".join(
            f"{var.name} = {script(analyzer.simplify(value))}"
            for var, value in last.items()
            if uses_var(conjunct, var)
        )
        raise ScheduleError(
            f"cannot factor {describe(loop)}: at {slot} no iteration passes the predicate "
            f"`{script(conjunct)}` of {describe(block)}, so a slot of the rf buffer that the "
            "final block reads would never be written",
            loop,
            block,
        )


def _inits_and_updates(block: SRef) -> tuple[list[PrimExpr], list[BufferStore]]:
    """The init values and update stores, one per reduced buffer, in update order; `T.let`
    bindings in the update are substituted into the stored values."""
    node = block.block

    def refuse(why: str) -> ScheduleError:
        return ScheduleError(f"cannot factor the reduction of {describe(block)}: {why}", block)

    init_stmts = node.init.stmts if isinstance(node.init, SeqStmt) else (node.init,)
    init_stores = [stmt for stmt in init_stmts if isinstance(stmt, BufferStore)]
    if len(init_stores) != len(init_stmts):
        raise refuse("its init is not a sequence of buffer stores")
    body = node.body.stmts if isinstance(node.body, SeqStmt) else (node.body,)
    lets: dict[Var, PrimExpr] = {}
    stores: list[BufferStore] = []
    for stmt in body:
        if isinstance(stmt, Bind) and not stores:
            lets[stmt.var] = substitute(stmt.value, lets)
        elif isinstance(stmt, BufferStore):
            stores.append(stmt)
        else:
            raise refuse("its update is not `T.let` bindings followed by buffer stores")
    if lets:
        # each store writes one bound value; the bindings' order is the reduction's order
        order = list(lets)
        stored = [s.value for s in stores if isinstance(s.value, Var) and s.value in lets]
        if len(lets) != len(stores) or len(stored) != len(stores):
            raise refuse(f"its update binds {len(lets)} values but stores {len(stores)}")
        in_order = sorted(zip(stored, stores, strict=True), key=lambda p: order.index(p[0]))
        stores = [dataclasses.replace(s, value=lets[var]) for var, s in in_order]
    if len(stores) != len(init_stores):
        raise refuse(f"its init stores {len(init_stores)} values but its update {len(stores)}")
    inits: list[PrimExpr] = []
    for store in stores:
        found = [s for s in init_stores if s.buffer is store.buffer]
        if len(found) != 1 or not same(found[0].indices, store.indices):
            raise refuse(f"its init and update do not store {store.buffer.name} alike")
        inits.append(found[0].value)
        if not same(store.indices, stores[0].indices):
            raise refuse("its update stores its buffers at different indices")
        if not same(store.buffer.shape, stores[0].buffer.shape):
            raise refuse(
                f"the buffers it reduces into differ in shape ({stores[0].buffer.name} and "
                f"{store.buffer.name}), so one rf buffer layout cannot serve both"
            )
    return inits, stores


def _factor_axis(buffer: Buffer, factor_axis: int, block: SRef) -> int:
    ndim = buffer.ndim
    if not -ndim - 1 <= factor_axis <= ndim:
        raise ScheduleError(
            f"factor_axis {factor_axis} is out of range for {buffer.name}, which has {ndim} "
            f"dimension(s): it must lie in [{-ndim - 1}, {ndim}]",
            block,
        )
    return factor_axis + ndim + 1 if factor_axis < 0 else factor_axis


def _iter_from_loop(loop: For, iter_type: IterType) -> IterVar:
    var = Var(f"v{loop.loop_var.name}", loop.loop_var.dtype)
    return IterVar(var, Range(loop.min, loop.extent), iter_type)


class _Factoring:
    """Builds the two blocks and their loop nests (TVM's construction, step for step)."""

    def __init__(
        self,
        block: SBlock,
        realize: SBlockRealize,
        rf_loop: For,
        loops: list[SRef],
        stores: list[BufferStore],
        inits: list[PrimExpr],
        match: Match,
        axis: int,
        reduce_vars: set[Var],
    ):
        self.block, self.realize, self.rf_loop = block, realize, rf_loop
        self.loops = [item.loop for item in loops]
        self.stores, self.inits, self.match, self.axis = stores, inits, match, axis
        self.reduce_vars = reduce_vars
        self.rf_buffers = [self._rf_buffer(store.buffer) for store in stores]
        self.rf_block, self.rf_realize, extra = self._make_rf()
        self.wb_block, self.wb_realize = self._make_wb(extra)

    def _rf_buffer(self, buffer: Buffer) -> Buffer:
        shape = list(buffer.shape)
        shape.insert(self.axis, self.rf_loop.extent)
        data = Var(f"{buffer.data.name}.rf", buffer.data.dtype, buffer.data.pointer)
        return dataclasses.replace(buffer, name=f"{buffer.name}.rf", data=data, shape=tuple(shape))

    def _rf_indices(self, extra: Var) -> tuple[PrimExpr, ...]:
        indices = list(self.stores[0].indices)
        indices.insert(self.axis, extra)
        return tuple(indices)

    def _make_rf(self) -> tuple[SBlock, SBlockRealize, IterVar]:
        extra = _iter_from_loop(self.rf_loop, IterType.SPATIAL)
        by_loop: dict[Var, PrimExpr] = {self.rf_loop.loop_var: extra.var}
        loop_of = {loop.loop_var: loop for loop in self.loops}
        iter_vars = [extra]
        values: list[PrimExpr] = [self.rf_loop.loop_var]
        var_map: dict[Var, PrimExpr] = {}
        for iter_var, value in zip(self.block.iter_vars, self.realize.iter_values, strict=True):
            if iter_var.iter_type is IterType.SPATIAL:
                new = dataclasses.replace(iter_var, var=Var(iter_var.var.name, iter_var.var.dtype))
                iter_vars.append(new)
                values.append(value)
                var_map[iter_var.var] = new.var
                continue
            if self.rf_loop.loop_var not in _loop_vars_in(value):
                # a reduction iterator the factored loop does not feed stays as it is
                new = dataclasses.replace(iter_var, var=Var(iter_var.var.name, iter_var.var.dtype))
                iter_vars.append(new)
                values.append(value)
                var_map[iter_var.var] = new.var
                continue
            for var in _loop_vars_in(value):
                if var in loop_of and var not in by_loop:
                    new = _iter_from_loop(loop_of[var], IterType.REDUCE)
                    by_loop[var] = new.var
                    iter_vars.append(new)
                    values.append(var)
            var_map[iter_var.var] = substitute(value, by_loop)
        has_reduce = any(iv.iter_type is IterType.REDUCE for iv in iter_vars)
        indices = substitute(self._rf_indices(extra.var), var_map)
        lhs = [BufferLoad(buffer, indices) for buffer in self.rf_buffers]
        rhs = [substitute(value, var_map) for value in self.match.rhs]
        stored = self.match.reducer.combine(lhs, rhs) if has_reduce else rhs
        # without a reduction left, the rf block copies each value: plain stores, no lets
        store = _stores if has_reduce else _plain_stores
        body = store(self.rf_buffers, indices, stored)
        init = _plain_stores(self.rf_buffers, indices, self.inits) if has_reduce else None
        reads = tuple(
            BufferRegion(r.buffer, substitute(r.region, var_map)) for r in self.block.reads
        )
        writes = []
        rf_of = {
            id(store.buffer): rf for store, rf in zip(self.stores, self.rf_buffers, strict=True)
        }
        for region in self.block.writes:
            rf = rf_of.get(id(region.buffer))
            if rf is None:
                writes.append(region)
                continue
            ranges = list(substitute(region.region, var_map))
            ranges.insert(self.axis, Range(extra.var, IntImm(1, extra.var.dtype)))
            writes.append(BufferRegion(rf, tuple(ranges)))
        block = SBlock(
            f"{self.block.name}_rf",
            tuple(iter_vars),
            reads,
            tuple(writes),
            body,
            init,
            annotations=self.block.annotations,
        )
        return block, SBlockRealize(tuple(values), self.realize.predicate, block), extra

    def _make_wb(self, rf_extra: IterVar) -> tuple[SBlock, SBlockRealize]:
        extra = _iter_from_loop(self.rf_loop, IterType.REDUCE)
        iter_vars = [extra]
        values: list[PrimExpr] = [self.rf_loop.loop_var]
        var_map: dict[Var, PrimExpr] = {rf_extra.var: extra.var}
        for iter_var, value in zip(self.block.iter_vars, self.realize.iter_values, strict=True):
            if iter_var.iter_type is IterType.SPATIAL:
                new = dataclasses.replace(iter_var, var=Var(iter_var.var.name, iter_var.var.dtype))
                iter_vars.append(new)
                values.append(value)
                var_map[iter_var.var] = new.var
        indices = substitute(self.stores[0].indices, var_map)
        rf_indices = substitute(self._rf_indices(rf_extra.var), var_map)
        lhs = [BufferLoad(store.buffer, indices) for store in self.stores]
        rhs = [BufferLoad(buffer, rf_indices) for buffer in self.rf_buffers]
        buffers = [store.buffer for store in self.stores]
        body = _stores(buffers, indices, self.match.reducer.combine(lhs, rhs))
        init = _plain_stores(buffers, indices, self.inits)
        block = SBlock(
            self.block.name,
            tuple(iter_vars),
            tuple(_point(load) for load in rhs),
            tuple(_point(load) for load in lhs),
            body,
            init,
            annotations=self.block.annotations,
        )
        return block, SBlockRealize(tuple(values), IntImm(1, dt.BOOL), block)

    def rf_nest(self) -> Stmt:
        return _wrap(self.rf_realize, self.loops)

    def wb_nest(self) -> Stmt:
        kept = [
            loop
            for loop in self.loops
            if loop is self.rf_loop or loop.loop_var not in self.reduce_vars
        ]
        return _wrap(self.wb_realize, kept)


def _stores(
    buffers: Sequence[Buffer], indices: tuple[PrimExpr, ...], values: Sequence[PrimExpr]
) -> Stmt:
    """One store per buffer; several go through `T.let` bindings named `v_<buffer>` first."""
    if len(buffers) == 1:
        return BufferStore(buffers[0], values[0], indices)
    lets = [Var(f"v_{b.name}", v.dtype) for b, v in zip(buffers, values, strict=True)]
    binds: list[Stmt] = [Bind(var, value) for var, value in zip(lets, values, strict=True)]
    stores: list[Stmt] = [
        BufferStore(b, var, indices) for b, var in zip(buffers, lets, strict=True)
    ]
    return seq(*binds, *stores)


def _plain_stores(
    buffers: Sequence[Buffer], indices: tuple[PrimExpr, ...], values: Sequence[PrimExpr]
) -> Stmt:
    return seq(*(BufferStore(b, v, indices) for b, v in zip(buffers, values, strict=True)))


def _point(load: BufferLoad) -> BufferRegion:
    return BufferRegion(
        load.buffer,
        tuple(Range(index, IntImm(1, index.dtype)) for index in load.indices),
    )


def _wrap(realize: SBlockRealize, loops: Sequence[For]) -> Stmt:
    """`realize` under copies of `loops` with fresh loop variables of the same names."""
    fresh: dict[Var, Var] = {
        loop.loop_var: Var(loop.loop_var.name, loop.loop_var.dtype) for loop in loops
    }
    body: Stmt = dataclasses.replace(
        realize,
        iter_values=tuple(substitute(v, fresh) for v in realize.iter_values),
        predicate=substitute(realize.predicate, fresh),
    )
    for loop in reversed(loops):
        body = dataclasses.replace(loop, loop_var=fresh[loop.loop_var], body=body)
    return body


class _WriteBack(Mutator):
    """The outermost loop with the reduction block turned into the write-back block and the
    reduction loops other than the factored one gone (their bodies take their place)."""

    def __init__(self, realize: SBlockRealize, plan: _Factoring):
        self.realize, self.wb_realize = realize, plan.wb_realize
        self.dropped = {
            id(loop)
            for loop in plan.loops
            if loop is not plan.rf_loop and loop.loop_var in plan.reduce_vars
        }

    def visit(self, node: Any) -> Any:
        if node is self.realize:
            return self.wb_realize
        if isinstance(node, SBlock):
            return node
        if isinstance(node, For) and id(node) in self.dropped:
            return self.visit(node.body)
        return super().visit(node) if isinstance(node, (Node, tuple)) else node


class _SwapLoop(Mutator):
    """Replaces one loop in a block body by a statement, flattening the sequence it joins."""

    def __init__(self, old: For, new: Stmt):
        self.old, self.new = old, new

    def visit(self, node: Any) -> Any:
        if node is self.old:
            return self.new
        if isinstance(node, SBlock):
            return node
        if isinstance(node, SeqStmt):
            items = [self.visit(item) for item in node.stmts]
            if all(a is b for a, b in zip(items, node.stmts, strict=True)):
                return node
            return seq(*items)
        return super().visit(node) if isinstance(node, (Node, tuple)) else node

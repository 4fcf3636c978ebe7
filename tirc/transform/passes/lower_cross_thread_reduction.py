"""lower-cross-thread-reduction: a reduction block whose reduce loops are (partly) bound to
threadIdx.* becomes an in-thread pre-reduction, a `T.tvm_thread_allreduce` over the bound
loops, and a write-back by the first thread of each group.

Expects s-tir with `T.init()` still in place (runs before lower-init-block); leaves s-tir. The
reduction loops of such a block (the loops its reduce bindings use) must be the innermost
loops around it, with nothing but statement sequences in between, and the block must be the
last one under the outermost of them. That loop becomes its thread-bound reduction loops
around the new blocks; inside, it keeps its other statements (a loop of loads beside the
block, say, which every thread then runs) with the thread-bound loops unwrapped and the block
replaced by the in-thread update. New `local` buffers `in_thread_<B>` / `cross_thread_<B>` go
to the root block. The in-thread part exists when some reduce loop is not thread-bound or the
block has a predicate:

    for k1 in T.thread_binding(64, "threadIdx.x"):     for k1 in T.thread_binding(64, ...):
        for k0 in range(4):                                 B_in_thread_init: in_B[0] = 0
            with T.sblock("B"):                             for k0 in range(4):
                vi, vk = S(i), R(k0 * 64 + k1)      ->          B_in_thread: in_B[0] += A[vi, vk]
                with T.init(): B[vi] = 0                    B_cross_thread: T.tvm_thread_allreduce(
                B[vi] = B[vi] + A[vi, vk]                       1, in_B[0], True, cross_B[0], k1)
                                                            B_write_back (where k1 == 0):
                                                                B[vi] = cross_B[0]

(`in_B`, `cross_B` stand for `in_thread_B`, `cross_thread_B`.) Where every written buffer is
`local`, every thread writes back its own copy, without the condition.

Order: each thread folds its own iterations in loop order, then the all-reduce folds the
threads in thread order (threadIdx.x fastest). That is the loop nest's order when the
thread-bound loops are outside the serial reduction loops (each thread's iterations are
consecutive) and bound x innermost; otherwise (the sketch above: thread k1 takes every 64th
iteration) the result is the loop's only for a combiner that commutes. argmax and argmin that
keep the earlier of equal values (`>=`, `<=`) do not: on ties they may then give another of
the equal values' indices, as TVM's lowering does.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from tirc.analysis.reducer import Combine, Match, Reducer, match_reducer
from tirc.diagnostics import DiagnosticError
from tirc.ir import dtype as dt
from tirc.ir import expr as E
from tirc.ir import stmt as S
from tirc.ir.buffer import Buffer, BufferRegion, Range, make_buffer
from tirc.ir.function import PrimFunc
from tirc.ir.functor import Mutator, Visitor, vars_in, walk
from tirc.ir.substitute import substitute
from tirc.transform.pass_base import Dialect, FunctionPass


def _is_thread_bound(loop: S.For) -> bool:
    binding = loop.thread_binding
    return binding is not None and binding.thread_tag.startswith("threadIdx")


def _conjuncts(expr: E.PrimExpr) -> list[E.PrimExpr]:
    if isinstance(expr, E.And):
        return _conjuncts(expr.a) + _conjuncts(expr.b)
    return [expr]


def _all_of(exprs: Sequence[E.PrimExpr]) -> E.PrimExpr:
    if not exprs:
        return E.const(True, dt.BOOL)
    result = exprs[0]
    for expr in exprs[1:]:
        result = E.And(result, expr)
    return result


@dataclass
class _Update:
    """A reduction block's init values and update stores, one per reduced buffer."""

    inits: list[E.PrimExpr]
    stores: list[S.BufferStore]  # with `T.let` bindings substituted into the values


def _update_of(block: S.SBlock) -> _Update | None:
    init = block.init
    inits = init.stmts if isinstance(init, S.SeqStmt) else (init,)
    body = block.body.stmts if isinstance(block.body, S.SeqStmt) else (block.body,)
    if not all(isinstance(stmt, S.BufferStore) for stmt in inits):
        return None
    lets: dict[E.Var, E.PrimExpr] = {}
    stores: list[S.BufferStore] = []
    for stmt in body:
        if isinstance(stmt, S.Bind) and not stores:
            lets[stmt.var] = substitute(stmt.value, lets)
        elif isinstance(stmt, S.BufferStore):
            stores.append(dataclasses.replace(stmt, value=substitute(stmt.value, lets)))
        else:
            return None
    values: list[E.PrimExpr] = []
    for store in stores:
        found = [s for s in inits if isinstance(s, S.BufferStore) and s.buffer is store.buffer]
        if len(found) != 1:
            return None
        values.append(found[0].value)
    return _Update(values, stores)


@dataclass(frozen=True)
class _Tuple:
    """Independent reducers side by side: `(x0 + y0, max(x1, y1))`."""

    parts: tuple[Reducer, ...]

    def combine(self, x: Sequence[E.PrimExpr], y: Sequence[E.PrimExpr]) -> list[E.PrimExpr]:
        return [p.combine([a], [b])[0] for p, a, b in zip(self.parts, x, y, strict=True)]


def _match(update: _Update, loads: list[E.BufferLoad]) -> tuple[Combine, list[E.PrimExpr]] | None:
    """The combiner of the update's reducer (a tuple of reducers side by side if no one
    reducer matches), and the new values it combines into the stored buffers."""
    values = [store.value for store in update.stores]
    match = match_reducer(update.inits, values, loads)
    if match is not None or len(values) == 1:
        return None if match is None else (match.reducer.combine, match.rhs)
    parts: list[Match] = []
    for init, value, load in zip(update.inits, values, loads, strict=False):
        part = match_reducer([init], [value], [load])
        if part is None:
            return None
        parts.append(part)
    return _Tuple(tuple(p.reducer for p in parts)).combine, [p.rhs[0] for p in parts]


class _Lowering(Mutator):
    def __init__(self) -> None:
        self.path: list[S.Stmt] = []  # the statements from the nearest block down
        self.new_buffers: list[Buffer] = []
        # outermost reduction loop -> the block to lower there and all its reduction loops
        self.plans: dict[int, tuple[S.SBlockRealize, list[S.For]]] = {}

    def visit(self, node: Any) -> Any:
        if not isinstance(node, S.Stmt) or isinstance(node, S.SBlock):
            return super().visit(node)
        self.path.append(node)
        try:
            return super().visit(node)
        finally:
            self.path.pop()

    def visit_SBlock(self, block: S.SBlock) -> S.SBlock:
        saved, self.path = self.path, []
        try:
            return self.generic_visit(block)
        finally:
            self.path = saved

    def visit_SeqStmt(self, node: S.SeqStmt) -> S.Stmt:
        # a loop lowered into several statements joins the sequence it sat in, as the
        # parser would read it back
        new = self.generic_visit(node)
        return new if new is node else S.seq(*new.stmts)

    def visit_SBlockRealize(self, realize: S.SBlockRealize) -> S.Stmt:
        loops = [stmt for stmt in self.path if isinstance(stmt, S.For)]
        reduction = _reduction_loops(realize, loops)
        if not any(map(_is_thread_bound, reduction)):
            return self.generic_visit(realize)
        _check_placement(realize, self.path[:-1], reduction)
        # lowered when the visit returns to the outermost reduction loop
        self.plans[id(reduction[0])] = (realize, reduction)
        return realize

    def visit_For(self, loop: S.For) -> S.Stmt:
        new: S.For = self.generic_visit(loop)
        plan = self.plans.pop(id(loop), None)
        if plan is None:
            return new
        return self.lower(new, *plan)

    def lower(self, outermost: S.For, realize: S.SBlockRealize, loops: list[S.For]) -> S.Stmt:
        """`outermost` (the first of the reduction `loops`, its inner reductions lowered)
        becomes the thread-bound reduction loops around: the in-thread init, `outermost` with
        its thread-bound loops unwrapped and the block made the in-thread update, the
        cross-thread all-reduce and the write-back."""
        block = realize.block
        update = _update_of(block)
        loads = [E.BufferLoad(s.buffer, s.indices) for s in update.stores] if update else []
        match = update and _match(update, loads)
        if not update or not match:
            raise DiagnosticError.at(
                block.span,
                f"cannot lower the cross-thread reduction of block '{block.name}': its update "
                "matches no known commutative reducer (sum, product, min, max, argmax, argmin) "
                "with its init as identity",
            )
        reduced = [store.buffer for store in update.stores]
        threads = [loop for loop in loops if _is_thread_bound(loop)]
        serial = [loop for loop in loops if not _is_thread_bound(loop)]
        in_thread_needed = bool(serial) or not E.is_true(realize.predicate)
        cross = [self.scratch(f"cross_thread_{b.name}", b.dtype) for b in reduced]
        inner = [self.scratch(f"in_thread_{b.name}", b.dtype) for b in reduced if in_thread_needed]
        zero = (E.IntImm(0, dt.INT32),)
        others = tuple(r for r in block.reads if r.buffer not in reduced)
        steps: list[S.Stmt] = []
        if in_thread_needed:
            init_stores = [
                S.BufferStore(b, v, zero) for b, v in zip(inner, update.inits, strict=False)
            ]
            steps.append(
                _realize(_block(f"{block.name}_in_thread_init", (), inner, S.seq(*init_stores)))
            )
            replaced = _replace_buffers(block.body, dict(zip(reduced, inner, strict=False)))
            in_block = dataclasses.replace(
                block,
                name=f"{block.name}_in_thread",
                reads=others,
                writes=tuple(_point(b) for b in inner),
                body=replaced,
                init=None,
            )
            in_place: S.SBlockRealize = dataclasses.replace(realize, block=in_block)
            values: list[E.PrimExpr] = [E.BufferLoad(b, zero) for b in inner]
            cross_block = _block(
                f"{block.name}_cross_thread", inner, cross, S.Evaluate(E.IntImm(0, dt.INT32))
            )
            cross_realize = _realize(cross_block)
        else:
            values = list(match[1])
            cross_block = dataclasses.replace(
                block,
                name=f"{block.name}_cross_thread",
                reads=others,
                writes=tuple(_point(b) for b in cross),
                init=None,
            )
            cross_realize = dataclasses.replace(realize, block=cross_block)
        allreduce = _allreduce(match[0], update.inits, values, cross, threads)
        cross_realize = dataclasses.replace(
            cross_realize, block=dataclasses.replace(cross_realize.block, body=allreduce)
        )
        if not in_thread_needed:
            in_place = cross_realize
        unwrapped = _Unwrap({t.loop_var for t in threads}, block, in_place).visit(outermost)
        steps.append(unwrapped)
        if in_thread_needed:
            steps.append(cross_realize)
        steps.append(self.write_back(realize, reduced, cross, loops, threads))
        body: S.Stmt = S.seq(*steps)
        for loop in reversed(threads):
            body = dataclasses.replace(loop, body=body)
        return body

    def scratch(self, name: str, dtype: dt.DataType) -> Buffer:
        buffer = make_buffer(
            name, (E.IntImm(1, dt.INT32),), dtype, "local", strides=(E.IntImm(1, dt.INT32),)
        )
        self.new_buffers.append(buffer)
        return buffer

    def write_back(
        self,
        realize: S.SBlockRealize,
        reduced: list[Buffer],
        cross: list[Buffer],
        loops: list[S.For],
        threads: list[S.For],
    ) -> S.Stmt:
        block = realize.block
        loop_vars = {loop.loop_var for loop in loops}
        kept = [
            (iv, value)
            for iv, value in zip(block.iter_vars, realize.iter_values, strict=False)
            if iv.iter_type is not S.IterType.REDUCE
        ]
        conditions = [c for c in _conjuncts(realize.predicate) if not E.is_true(c)]
        conditions = [c for c in conditions if not (vars_in(c) & loop_vars)]
        conditions += [E.EQ(t.loop_var, E.const(0, t.loop_var.dtype)) for t in threads]
        if all(b.scope == "local" for b in reduced):
            conditions = []  # each thread keeps its own copy of the result
        stores = [
            S.BufferStore(b, E.BufferLoad(c, (E.IntImm(0, dt.INT32),)), _store_indices(block, b))
            for b, c in zip(reduced, cross, strict=False)
        ]
        fresh = {iv.var: E.Var(iv.var.name, iv.var.dtype) for iv, _ in kept}
        new = S.SBlock(
            f"{block.name}_write_back",
            tuple(dataclasses.replace(iv, var=fresh[iv.var]) for iv, _ in kept),
            tuple(_point(c) for c in cross),
            substitute(tuple(block.writes), fresh),
            substitute(S.seq(*stores), fresh),
            span=block.span,
        )
        return S.SBlockRealize(tuple(v for _, v in kept), _all_of(conditions), new)


def _store_indices(block: S.SBlock, buffer: Buffer) -> tuple[E.PrimExpr, ...]:
    found: list[tuple[E.PrimExpr, ...]] = []
    walk(
        block.body,
        lambda n: (
            found.append(n.indices) if isinstance(n, S.BufferStore) and n.buffer is buffer else None
        ),
    )
    return found[-1]


def _allreduce(
    combine: Combine,
    inits: list[E.PrimExpr],
    values: list[E.PrimExpr],
    cross: list[Buffer],
    threads: list[S.For],
) -> S.Stmt:
    dtypes = [v.dtype for v in values]
    x = tuple(E.Var(f"x{i}", t) for i, t in enumerate(dtypes))
    y = tuple(E.Var(f"y{i}", t) for i, t in enumerate(dtypes))
    comm = E.CommReducer(x, y, tuple(combine(x, y)), tuple(inits))
    zero = (E.IntImm(0, dt.INT32),)
    args = (
        E.IntImm(len(values), dt.UINT32),
        *values,
        E.const(True, dt.BOOL),
        *(E.BufferLoad(c, zero) for c in cross),
        *(t.loop_var for t in threads),
    )
    call = E.Call(dt.HANDLE, "tvm_thread_allreduce", args)
    return S.AttrStmt(comm, "reduce_scope", E.IntImm(0, dt.INT32), S.Evaluate(call))


def _reduction_loops(realize: S.SBlockRealize, loops: list[S.For]) -> list[S.For]:
    """The loops whose variables the block's reduce bindings use, outermost first; none
    unless the block is a reduction with an init."""
    block = realize.block
    if block.init is None:
        return []
    used: set[E.Var] = set()
    for iv, value in zip(block.iter_vars, realize.iter_values, strict=False):
        if iv.iter_type is S.IterType.REDUCE:
            used |= vars_in(value)
    return [loop for loop in loops if loop.loop_var in used]


def _check_placement(realize: S.SBlockRealize, path: list[S.Stmt], reduction: list[S.For]) -> None:
    """The reduction loops are the deepest statements around the block, sequences aside
    (what sits before the block in them stays where it is), and the block is the last one
    under the outermost of them."""
    seen = 0
    for stmt in reversed(path):
        if seen == len(reduction):
            break
        if isinstance(stmt, S.SeqStmt):
            continue
        if not (isinstance(stmt, S.For) and stmt in reduction):
            raise DiagnosticError.at(
                realize.block.span,
                f"cannot lower the cross-thread reduction of block '{realize.block.name}': the "
                "loops its reduce iteration variables use must be the innermost loops around it, "
                f"with only statement sequences in between ({_describe(stmt)} is not one)",
            )
        seen += 1
    realizes: list[S.SBlockRealize] = []
    _Realizes(realizes).visit(reduction[0].body)
    if realizes[-1].block is not realize.block:
        raise DiagnosticError.at(
            realize.block.span,
            f"cannot lower the cross-thread reduction of block '{realize.block.name}': it must "
            f"be the last block under its outermost reduction loop "
            f"'{reduction[0].loop_var.name}', and '{realizes[-1].block.name}' follows it",
        )


def _describe(stmt: S.Stmt) -> str:
    if isinstance(stmt, S.For):
        return f"loop {stmt.loop_var.name}"
    return type(stmt).__name__


class _Realizes(Visitor):
    """The block realizations under a statement, outermost ones only, in program order."""

    def __init__(self, found: list[S.SBlockRealize]):
        self.found = found

    def visit_SBlockRealize(self, realize: S.SBlockRealize) -> None:
        self.found.append(realize)


class _Unwrap(Mutator):
    """The loops over `threads` replaced by their bodies, and `block`'s realization by
    `replacement`."""

    def __init__(self, threads: set[E.Var], block: S.SBlock, replacement: S.Stmt):
        self.threads = threads
        self.block = block
        self.replacement = replacement

    def visit_For(self, loop: S.For) -> S.Stmt:
        new: S.For = self.generic_visit(loop)
        return new.body if loop.loop_var in self.threads else new

    def visit_SeqStmt(self, node: S.SeqStmt) -> S.Stmt:
        new = self.generic_visit(node)
        return new if new is node else S.seq(*new.stmts)

    def visit_SBlockRealize(self, realize: S.SBlockRealize) -> S.Stmt:
        if realize.block is self.block:
            return self.replacement
        return realize


def _point(buffer: Buffer) -> BufferRegion:
    return BufferRegion(buffer, (Range(E.IntImm(0, dt.INT32), E.IntImm(1, dt.INT32)),))


def _block(name: str, reads: Sequence[Buffer], writes: Sequence[Buffer], body: S.Stmt) -> S.SBlock:
    return S.SBlock(
        name, (), tuple(_point(b) for b in reads), tuple(_point(b) for b in writes), body
    )


def _realize(block: S.SBlock) -> S.SBlockRealize:
    return S.SBlockRealize((), E.const(True, dt.BOOL), block)


class _BufferReplacer(Mutator):
    """Accesses of the reduced buffers become accesses of element 0 of their scratch."""

    def __init__(self, mapping: dict[Buffer, Buffer]):
        self.mapping = mapping

    def visit_BufferLoad(self, load: E.BufferLoad) -> E.PrimExpr:
        load = self.generic_visit(load)
        target = self.mapping.get(load.buffer)
        return load if target is None else E.BufferLoad(target, (E.IntImm(0, dt.INT32),))

    def visit_BufferStore(self, store: S.BufferStore) -> S.Stmt:
        store = self.generic_visit(store)
        target = self.mapping.get(store.buffer)
        if target is None:
            return store
        return S.BufferStore(target, store.value, (E.IntImm(0, dt.INT32),), span=store.span)


def _replace_buffers(body: S.Stmt, mapping: dict[Buffer, Buffer]) -> S.Stmt:
    result: S.Stmt = _BufferReplacer(mapping).visit(body)
    return result


@dataclass(frozen=True)
class LowerCrossThreadReduction(FunctionPass):
    name = "lower-cross-thread-reduction"
    expects = Dialect.S_TIR
    leaves = Dialect.S_TIR

    def run_function(self, func: PrimFunc) -> PrimFunc:
        root = func.body
        if not isinstance(root, S.SBlockRealize):
            return func
        lowering = _Lowering()
        block = lowering.visit(root.block)
        if not lowering.new_buffers:
            return func
        block = dataclasses.replace(
            block, alloc_buffers=block.alloc_buffers + tuple(lowering.new_buffers)
        )
        return dataclasses.replace(func, body=dataclasses.replace(root, block=block))

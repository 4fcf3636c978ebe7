"""lower-thread-allreduce: `T.tvm_thread_allreduce` becomes warp shuffles, shared memory and
barriers, with TVM 0.27's strategies for CUDA (warp size 32), combining in thread order.

Expects flat tir inside kernels (after flatten-buffer and thread-sync; it places its own
barriers); leaves flat tir with no all-reduce calls. The `reduce_scope` attribute stays. The
output buffers' allocations are replaced by the buffer that ends up holding the result, and
their loads by loads of it. The reduced threads (`reduce_index`, extent n) are the listed
thread dimensions; the others form groups (`group_index`). Three strategies:

- warp (n <= 32 and one group or 32 % n == 0): shuffle-down steps into lane 0 of the group,
  then a shuffle from that lane to every lane; the result is in a `red_buf0` local.
- two-stage (n a multiple of 32, up to 32 warps): each warp reduces with shuffles, lane 0
  stores to `red_buf_staging` in shared memory, barrier, the first warp reduces those; the
  result is in `red_result[group_index]` (shared), followed by a barrier.
- tree (anything else): steps on a shared `red_buf0[group * n + reduce_index]`, a barrier
  after each.

Every step combines a window of threads with the window just after it (offsets 1, 2, 4, ...,
where TVM halves from n / 2 down), so the result is v0 . v1 . ... . v(n-1) in thread order,
as the language defines the all-reduce: a combiner that is associative but not commutative
(argmax keeping the earlier of equal values) gets the answer of a sequential loop. Where n is
not a power of two, a step skips windows that would start past n.

    T.attr(reducer, "reduce_scope", 0)
    T.tvm_thread_allreduce(1, A[k], True, cross[0], k)       (32 threads k)
        ->
    red_buf0[0] = A[k]
    mask[0] = T.tvm_warp_activemask()
    t0[0] = T.tvm_warp_shuffle_down(mask[0], red_buf0[0], 1, 32, 32)
    red_buf0[0] = red_buf0[0] + t0[0]                       (and 2, 4, 8, 16)
    red_buf0[0] = T.tvm_warp_shuffle(mask[0], red_buf0[0], 0, 32, 32)

Inside a warp-specialized split (`warp_specialize_scope`, inject-warp-specialization's), an
all-reduce of the consumers' branch synchronizes with their named barrier (thread-sync's
`T.ptx_bar_sync(1, consumers)`) where it would use `__syncthreads`, which the producers never
reach; one of the producers' branch that needs a barrier is refused, located.

A step's results are stored in order; when a later result reads a value an earlier store
changed, all are bound to `T.let`s first. When the output's memory also holds other values
(storage rewrite shares it), the result is copied into it instead.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import cast

from tirc.diagnostics import DiagnosticError, Note
from tirc.ir import dtype as dt
from tirc.ir import expr as E
from tirc.ir import stmt as S
from tirc.ir.buffer import Buffer, make_buffer
from tirc.ir.function import PrimFunc
from tirc.ir.functor import Mutator, walk
from tirc.ir.substitute import substitute
from tirc.transform.pass_base import Dialect, FunctionPass
from tirc.transform.passes.inject_warp_specialization import SCOPE, split_branches
from tirc.transform.passes.thread_sync import named_sync, split_consumers

WARP_SIZE = 32
_TAGS = ("threadIdx.x", "threadIdx.y", "threadIdx.z")


def _int(value: int, like: object = None) -> E.PrimExpr:
    """An int32 constant, or one of the dtype of `like` (index arithmetic on int64 threads)."""
    return E.IntImm(value, getattr(like, "dtype", dt.INT32))


def _at(buffer: Buffer, index: E.PrimExpr | int = 0) -> E.BufferLoad:
    return E.BufferLoad(buffer, (_int(index) if isinstance(index, int) else index,))


def _store(buffer: Buffer, value: E.PrimExpr, index: E.PrimExpr | int = 0) -> S.Stmt:
    return S.BufferStore(buffer, value, (_int(index) if isinstance(index, int) else index,))


def _local(name: str, dtype: dt.DataType) -> Buffer:
    return make_buffer(name, (_int(1),), dtype, "local")


def _next_power_of_two(n: int) -> int:
    power = 1
    while power < n:
        power *= 2
    return power


def _sum(terms: list[E.PrimExpr]) -> E.PrimExpr:
    result = terms[0]
    for term in terms[1:]:
        result = E.Add(result, term)
    return result


@dataclass
class _Threads:
    """The reduced and the grouping thread indices of one all-reduce."""

    reduce_index: E.PrimExpr
    reduce_extent: int
    group_index: E.PrimExpr | None
    group_extent: int
    contiguous: bool  # the reduced dimensions are the lowest ones (x, then y, then z)


def _threads(
    call: E.Call, reduced: Sequence[E.Var], launched: dict[str, tuple[E.Var, int]]
) -> _Threads:
    reduce_terms: list[E.PrimExpr] = []
    group_terms: list[E.PrimExpr] = []
    reduce_extent = group_extent = 1
    contiguous, seen_group = True, False
    for tag in _TAGS:
        if tag not in launched:
            continue
        var, extent = launched[tag]
        if var in reduced:
            if seen_group:
                contiguous = False
            reduce_terms.append(var if reduce_extent == 1 else E.Mul(var, _int(reduce_extent, var)))
            reduce_extent *= extent
        else:
            seen_group = seen_group or extent > 1
            group_terms.append(var if group_extent == 1 else E.Mul(var, _int(group_extent, var)))
            group_extent *= extent
    if len(reduce_terms) != len(reduced):
        raise DiagnosticError.at(
            call.span,
            "T.tvm_thread_allreduce reduces over a variable that is not a launched threadIdx",
        )
    reduce_index = _sum(reduce_terms)  # x + y * extent_x + ...
    group_index = None if group_extent == 1 else _sum(group_terms)
    return _Threads(reduce_index, reduce_extent, group_index, group_extent, contiguous)


class _Emitter:
    """Builds the statements of one all-reduce."""

    def __init__(self, reducer: E.CommReducer, dtypes: list[dt.DataType], threads: _Threads):
        self.reducer = reducer
        self.dtypes = dtypes
        self.threads = threads
        self.allocs: list[Buffer] = []
        self.tag = ""  # appended to the result buffers' names

    def combine(self, x: Sequence[E.PrimExpr], y: Sequence[E.PrimExpr]) -> list[E.PrimExpr]:
        mapping = dict(zip(self.reducer.lhs, x, strict=False)) | dict(
            zip(self.reducer.rhs, y, strict=False)
        )
        return [substitute(result, mapping) for result in self.reducer.result]

    def group_offset(self, scale: int) -> E.PrimExpr | None:
        group = self.threads.group_index
        return None if group is None else E.Mul(group, _int(scale, group))

    def plus_group(self, index: E.PrimExpr, scale: int) -> E.PrimExpr:
        offset = self.group_offset(scale)
        return index if offset is None else E.Add(offset, index)

    def assign(
        self, targets: Sequence[tuple[Buffer, E.PrimExpr]], values: list[E.PrimExpr], name: str
    ) -> S.Stmt:
        """Stores each combined value at its target; when a value reads a target that an
        earlier store changes (argmax with the value first), every value is bound first."""
        earlier = [{id(buffer) for buffer, _ in targets[:j]} for j in range(len(targets))]
        if not any(_reads(value, changed) for value, changed in zip(values, earlier, strict=True)):
            return S.seq(*(_store(b, v, i) for (b, i), v in zip(targets, values, strict=True)))
        lets = [E.Var(f"{name}_{i}", t) for i, t in enumerate(self.dtypes)]
        binds = [S.Bind(var, value) for var, value in zip(lets, values, strict=True)]
        stores = [_store(b, var, i) for (b, i), var in zip(targets, lets, strict=True)]
        return S.seq(*binds, *stores)

    def warp_reduce(
        self, suffix: str, values: list[E.PrimExpr], n: int, broadcast: bool
    ) -> tuple[list[S.Stmt], list[Buffer]]:
        """Shuffle-down steps over n lanes into each group's first lane, in lane order: at
        offset 1, 2, 4, ... each lane combines its own window of lanes with the next one, so
        the first lane ends with v0 . v1 . ... . v(n-1) (a combiner need not commute)."""
        temps = [_local(f"t{i}{suffix}", t) for i, t in enumerate(self.dtypes)]
        mask = _local(f"mask{suffix}", dt.UINT32)
        tag = self.tag if broadcast else ""
        bufs = [_local(f"red_buf{i}{suffix}{tag}", t) for i, t in enumerate(self.dtypes)]
        self.allocs += temps + [mask]
        body: list[S.Stmt] = [_store(b, v) for b, v in zip(bufs, values, strict=False)]
        body.append(_store(mask, E.Call(dt.UINT32, "tvm_warp_activemask", ())))
        width = _next_power_of_two(n)
        offset = 1
        while offset < width:
            for temp, buf in zip(temps, bufs, strict=False):
                shuffle = E.Call(
                    buf.dtype,
                    "tvm_warp_shuffle_down",
                    (_at(mask), _at(buf), _int(offset), _int(WARP_SIZE), _int(WARP_SIZE)),
                )
                body.append(_store(temp, shuffle))
            combined = self.combine([_at(b) for b in bufs], [_at(t) for t in temps])
            targets = [(b, _int(0)) for b in bufs]
            steps = self.assign(targets, combined, f"v{offset}{suffix}")
            k = self.threads.reduce_index
            if n != width:
                # lanes past n hold no value (or another group's): a window stops at n
                steps = S.IfThenElse(E.LT(E.Add(k, _int(offset, k)), _int(n, k)), steps)
            body.append(steps)
            offset *= 2
        if broadcast:
            group = self.threads.group_index
            lane = _int(0) if group is None else E.Mul(_int(n, group), group)
            for buf in bufs:
                call = E.Call(
                    buf.dtype,
                    "tvm_warp_shuffle",
                    (_at(mask), _at(buf), lane, _int(WARP_SIZE), _int(WARP_SIZE)),
                )
                body.append(_store(buf, call))
        return body, bufs


def _reads(expr: E.PrimExpr, buffers: set[int]) -> bool:
    found: list[bool] = []
    walk(
        expr,
        lambda n: (
            found.append(True) if isinstance(n, E.BufferLoad) and id(n.buffer) in buffers else None
        ),
    )
    return bool(found)


def _lower_warp(
    emit: _Emitter, values: list[E.PrimExpr]
) -> tuple[list[S.Stmt], list[Buffer], E.PrimExpr]:
    body, bufs = emit.warp_reduce("", values, emit.threads.reduce_extent, broadcast=True)
    return body, bufs, _int(0)


def _lower_two_stage(
    emit: _Emitter, values: list[E.PrimExpr]
) -> tuple[list[S.Stmt], list[Buffer], E.PrimExpr]:
    threads = emit.threads
    warps = threads.reduce_extent // WARP_SIZE
    staging = [
        make_buffer(
            "red_buf_staging" + (f"_{i}" if i else ""),
            (_int(warps * threads.group_extent),),
            t,
            "shared",
        )
        for i, t in enumerate(emit.dtypes)
    ]
    emit.allocs += staging
    first, bufs = emit.warp_reduce("", values, WARP_SIZE, broadcast=False)
    emit.allocs += bufs
    k = threads.reduce_index
    stage = emit.plus_group(E.FloorDiv(k, _int(WARP_SIZE, k)), warps)
    body = first
    body.append(
        S.IfThenElse(
            E.EQ(E.FloorMod(k, _int(WARP_SIZE, k)), _int(0, k)),
            S.seq(*(_store(s, _at(b), stage) for s, b in zip(staging, bufs, strict=False))),
        )
    )
    body.append(S.storage_sync("shared"))
    load_index = emit.plus_group(k, warps)
    second, second_bufs = emit.warp_reduce(
        "_1", [_at(s, load_index) for s in staging], warps, broadcast=False
    )
    emit.allocs += second_bufs
    # its first stores read the staging area: only the first `warps` lanes may
    body.append(S.IfThenElse(E.LT(k, _int(warps, k)), S.seq(*second[: len(values)])))
    body.extend(second[len(values) :])
    results = [
        make_buffer(
            "red_result" + (f"_{i}" if i else "") + emit.tag,
            (_int(threads.group_extent),),
            t,
            "shared",
        )
        for i, t in enumerate(emit.dtypes)
    ]
    index = threads.group_index if threads.group_index is not None else _int(0, k)
    stores = S.seq(*(_store(r, _at(b), index) for r, b in zip(results, second_bufs, strict=False)))
    body.append(S.IfThenElse(E.EQ(k, _int(0, k)), stores))
    body.append(S.storage_sync("shared"))
    return body, results, index


def _lower_tree(
    emit: _Emitter, values: list[E.PrimExpr]
) -> tuple[list[S.Stmt], list[Buffer], E.PrimExpr]:
    """Shared-memory steps at offset 1, 2, 4, ...: element k (a multiple of twice the offset)
    combines its window with the next one, so element 0 ends with the values in thread
    order; a barrier after each step."""
    threads = emit.threads
    n = threads.reduce_extent
    k = threads.reduce_index
    bufs = [
        make_buffer(f"red_buf{i}{emit.tag}", (_int(n * threads.group_extent),), t, "shared")
        for i, t in enumerate(emit.dtypes)
    ]
    here = emit.plus_group(k, n)
    body: list[S.Stmt] = [S.storage_sync("shared")]
    body.append(S.seq(*(_store(b, v, here) for b, v in zip(bufs, values, strict=False))))
    body.append(S.storage_sync("shared"))
    offset = 1
    while offset < n:
        combined = emit.combine(
            [_at(b, here) for b in bufs], [_at(b, E.Add(here, _int(offset, k))) for b in bufs]
        )
        updates = emit.assign([(b, here) for b in bufs], combined, f"w_{offset}")
        condition: E.PrimExpr = E.EQ(E.FloorMod(k, _int(2 * offset, k)), _int(0, k))
        if n % (2 * offset):
            condition = E.And(condition, E.LT(E.Add(k, _int(offset, k)), _int(n, k)))
        body.append(S.IfThenElse(condition, updates))
        body.append(S.storage_sync("shared"))
        offset *= 2
    index = emit.group_offset(n)
    return body, bufs, _int(0, k) if index is None else index


def _is_warp(threads: _Threads, dtypes: list[dt.DataType]) -> bool:
    if not threads.contiguous or any(t.lanes != 1 or t.bits < 16 for t in dtypes):
        return False
    n = threads.reduce_extent
    if n <= WARP_SIZE:
        return threads.group_extent == 1 or WARP_SIZE % n == 0
    return n % WARP_SIZE == 0 and n <= WARP_SIZE * WARP_SIZE


class _Lowering(Mutator):
    def __init__(self, replaceable: set[Buffer]) -> None:
        self.replaceable = replaceable
        self.lowered = False
        self.copies = 0
        self.launched: dict[str, tuple[E.Var, int]] = {}
        # the buffer each output holds its value in, from its last all-reduce on (storage
        # rewrite may have one scratch buffer serve several all-reduces)
        self.current: dict[Buffer, tuple[Buffer, E.PrimExpr]] = {}
        self.results: dict[Buffer, list[Buffer]] = {}
        self.reducers: list[E.CommReducer] = []  # of the reduce_scope attributes around
        self.extents: dict[str, E.PrimExpr] = {}  # the kernel's threadIdx extents
        # in a warp-specialized split's branch: the barrier its all-reduces use instead of
        # __syncthreads (the consumers' named barrier), or the split, for the producers' branch
        self.split_barrier: _ConsumersBarrier | S.AttrStmt | None = None

    def visit_AttrStmt(self, stmt: S.AttrStmt) -> S.Stmt:
        node = stmt.node
        if stmt.key == "thread_extent" and isinstance(node, S.IterVar) and node.thread_tag in _TAGS:
            extent = stmt.value
            saved = self.launched.get(node.thread_tag)
            saved_extent = self.extents.get(node.thread_tag)
            if isinstance(extent, E.IntImm):
                self.launched[node.thread_tag] = (node.var, extent.value)
            self.extents[node.thread_tag] = extent
            try:
                return self.generic_visit(stmt)
            finally:
                if saved is None:
                    self.launched.pop(node.thread_tag, None)
                else:
                    self.launched[node.thread_tag] = saved
                if saved_extent is None:
                    self.extents.pop(node.thread_tag, None)
                else:
                    self.extents[node.thread_tag] = saved_extent
        if stmt.key == SCOPE:
            return self.split(stmt)
        if stmt.key == "reduce_scope" and isinstance(node, E.CommReducer):
            # the call may sit below `T.let`s of its arguments (common-subexpr-elim binds
            # an index two values share inside the scope)
            self.reducers.append(node)
            try:
                return self.generic_visit(stmt)
            finally:
                self.reducers.pop()
        return self.generic_visit(stmt)

    def split(self, stmt: S.AttrStmt) -> S.Stmt:
        """A warp-specialized split: `if <producers>: ... else: <consumers>` last in its
        body; each branch's all-reduces synchronize their own threads (see the module)."""
        found = split_branches(stmt)
        if found is None:
            return self.generic_visit(stmt)
        bindings, branches, consumers = found
        outer = self.split_barrier
        try:
            self.split_barrier = stmt
            then = self.visit(branches.then_case)
            self.split_barrier = _ConsumersBarrier(stmt, self.extents)
            otherwise = self.visit(consumers)
        finally:
            self.split_barrier = outer
        if then is branches.then_case and otherwise is consumers:
            return stmt
        changed = dataclasses.replace(branches, then_case=then, else_case=otherwise)
        return dataclasses.replace(stmt, body=S.seq(*bindings, changed))

    def visit_Evaluate(self, stmt: S.Evaluate) -> S.Stmt:
        call = stmt.value
        if isinstance(call, E.Call) and call.op == "tvm_thread_allreduce" and self.reducers:
            lowered = self.lower(self.reducers[-1], call)
            if self.split_barrier is None:
                return lowered
            return _BranchBarriers(self.split_barrier, call).visit(lowered)
        return self.generic_visit(stmt)

    def visit_SeqStmt(self, stmt: S.SeqStmt) -> S.Stmt:
        # an all-reduce lowered to a sequence joins the sequence it sat in, as the parser
        # would read it back
        new = self.generic_visit(stmt)
        return new if new is stmt else S.seq(*new.stmts)

    def lower(self, reducer: E.CommReducer, call: E.Call) -> S.Stmt:
        args = cast(tuple[E.PrimExpr, ...], call.args)
        count = args[0]
        if not isinstance(count, E.IntImm):
            raise DiagnosticError.at(
                call.span, "T.tvm_thread_allreduce needs a constant value count"
            )
        size = count.value
        self.lowered = True
        values = list(args[1 : 1 + size])
        condition = args[1 + size]
        outputs = args[2 + size : 2 + 2 * size]
        reduced = args[2 + 2 * size :]
        if not all(isinstance(o, E.BufferLoad) for o in outputs) or not all(
            isinstance(v, (E.Var, E.IntImm)) for v in reduced
        ):
            raise DiagnosticError.at(
                call.span,
                "T.tvm_thread_allreduce: outputs must be buffer elements and threads variables",
            )
        outputs_ = [o for o in outputs if isinstance(o, E.BufferLoad)]
        # a thread index simplified to a constant was a launch of one thread: nothing to combine
        thread_vars = [v for v in reduced if isinstance(v, E.Var)]
        if not thread_vars:
            return S.seq(
                *(
                    S.BufferStore(o.buffer, v, o.indices)
                    for o, v in zip(outputs_, values, strict=False)
                )
            )
        unknown = [v for v in thread_vars if not any(v is var for var, _ in self.launched.values())]
        if unknown:
            raise DiagnosticError.at(
                call.span,
                f"T.tvm_thread_allreduce reduces over '{unknown[0].name}' (a variable that is not "
                "a threadIdx launched with a constant extent around it)",
            )
        threads = _threads(call, thread_vars, self.launched)
        if not (isinstance(condition, E.IntImm) and condition.value):
            values = [
                E.Select(condition, v, i) for v, i in zip(values, reducer.identity, strict=False)
            ]
        dtypes = [v.dtype for v in values]
        emit = _Emitter(reducer, dtypes, threads)
        if any(o.buffer not in self.replaceable for o in outputs_):
            # results copied out live in the all-reduce's scope; the parser reads sibling
            # scopes as one name space, so name them apart
            self.copies += 1
            emit.tag = f"_{self.copies}"
        if _is_warp(threads, dtypes):
            lower = _lower_warp if threads.reduce_extent <= WARP_SIZE else _lower_two_stage
        else:
            lower = _lower_tree
        body, results, index = lower(emit, values)
        allocs = [S.AllocBuffer(b) for b in emit.allocs]
        loads = outputs_
        for output, result in zip(loads, results, strict=True):
            if output.buffer in self.replaceable:
                self.current[output.buffer] = (result, index)
                self.results.setdefault(output.buffer, []).append(result)
                continue
            # the output's memory serves other values too (storage rewrite): copy the result
            # there, as every thread can read it
            annotations = S.EMPTY_ATTRS
            if result.scope == "shared":
                annotations = annotations.set("tirx.volatile", E.const(True, dt.BOOL))
            allocs.append(S.AllocBuffer(result, annotations))
            body.append(S.BufferStore(output.buffer, _at(result, index), output.indices))
        return S.seq(*allocs, *body)

    def visit_BufferLoad(self, load: E.BufferLoad) -> E.PrimExpr:
        load = self.generic_visit(load)
        found = self.current.get(load.buffer)
        return load if found is None else E.BufferLoad(found[0], (found[1],), span=load.span)


@dataclass
class _ConsumersBarrier:
    """The consumers' branch of a split: their named barrier, computed when first needed
    (computing it may fail: extents not constants, consumers not whole warps)."""

    split: S.AttrStmt
    extents: dict[str, E.PrimExpr]

    def barrier(self) -> S.Stmt:
        return named_sync(split_consumers(self.split, dict(self.extents)), self.split.span)


class _BranchBarriers(Mutator):
    """An all-reduce lowered in a split's branch: its __syncthreads become the consumers'
    named barrier, or, in the producers' branch, a located error."""

    def __init__(self, where: S.AttrStmt | _ConsumersBarrier, call: E.Call):
        self.where = where
        self.call = call

    def visit_Evaluate(self, stmt: S.Evaluate) -> S.Stmt:
        value = stmt.value
        if not (isinstance(value, E.Call) and value.op == "tvm_storage_sync"):
            return stmt
        if isinstance(self.where, _ConsumersBarrier):
            return self.where.barrier()
        assert isinstance(self.where, S.AttrStmt)
        raise DiagnosticError.at(
            self.call.span,
            "this all-reduce, in the producer branch of a warp-specialized split, needs a "
            "barrier among the producers, which tirc does not give them (__syncthreads would "
            "wait for the consumers, which never reach it)",
            Note("the split", self.where.span),
        )


def _replaceable(body: S.Stmt) -> set[Buffer]:
    """The all-reduce outputs that hold nothing else: allocated here, the output of one
    all-reduce, never stored to, read one element at a time. Their allocation and loads can
    become those of the result buffer, as TVM does."""
    outputs: dict[Buffer, int] = {}
    others: set[Buffer] = set()
    allocated: set[Buffer] = set()

    def look(node: object) -> None:
        if isinstance(node, E.Call) and node.op == "tvm_thread_allreduce":
            size = node.args[0].value if isinstance(node.args[0], E.IntImm) else 0
            for output in node.args[2 + size : 2 + 2 * size]:
                if isinstance(output, E.BufferLoad):
                    outputs[output.buffer] = outputs.get(output.buffer, 0) + 1
        elif isinstance(node, S.BufferStore):
            others.add(node.buffer)
        elif isinstance(node, E.BufferLoad) and node.dtype != node.buffer.dtype:
            others.add(node.buffer)
        elif isinstance(node, S.AllocBuffer):
            allocated.add(node.buffer)

    walk(body, look)
    return {b for b, count in outputs.items() if count == 1 and b in allocated and b not in others}


class _Allocations(Mutator):
    """Each all-reduce output's allocation becomes that of its result buffers."""

    def __init__(self, results: dict[Buffer, list[Buffer]]):
        self.results = results

    def visit_SeqStmt(self, stmt: S.SeqStmt) -> S.Stmt:
        stmts = [self.visit(item) for item in stmt.stmts]
        if all(new is old for new, old in zip(stmts, stmt.stmts, strict=False)):
            return stmt
        return S.seq(*stmts)

    def visit_AllocBuffer(self, stmt: S.AllocBuffer) -> S.Stmt:
        results = self.results.get(stmt.buffer)
        if results is None:
            return stmt
        allocations = []
        for result in results:
            annotations = stmt.annotations
            if result.scope == "shared":
                annotations = annotations.set("tirx.volatile", E.const(True, dt.BOOL))
            allocations.append(S.AllocBuffer(result, annotations, span=stmt.span))
        return S.seq(*allocations)


@dataclass(frozen=True)
class LowerThreadAllreduce(FunctionPass):
    name = "lower-thread-allreduce"
    expects = Dialect.FLAT
    leaves = Dialect.FLAT

    def run_function(self, func: PrimFunc) -> PrimFunc:
        lowering = _Lowering(_replaceable(func.body))
        body = lowering.visit(func.body)
        if not lowering.results and not lowering.lowered:
            return func
        body = _Allocations(lowering.results).visit(body)
        return dataclasses.replace(func, body=body)

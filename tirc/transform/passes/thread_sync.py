"""thread-sync: a `T.tvm_storage_sync("shared")` wherever a statement in a kernel may read
shared memory that an earlier statement wrote (other threads' writes must be visible) or write
shared memory that an earlier one read (other threads must have read it first), counting the
previous iteration of a loop as earlier.

Expects flat tir with thread launches; leaves the same. Conservative: buffers, not elements,
are compared, so a sync may be more than needed, never fewer. A barrier the program already
has (a block barrier; in a split, the consumers' named barrier) orders what came before it as
one the pass puts does. Intrinsics that move shared memory through pointers count as
accesses: `T.tvm_access_ptr` by its read/write mask,
`T.address_of(S[i])` as a read, and a shared buffer's data passed to a call as the call uses
it (ptx_cp_async writes its destination, ptx_ldmatrix reads its source, mma_store and
tvm_store_matrix_sync write, tvm_load_matrix_sync reads; any other call reads and writes).

Asynchronous copies (stores under `T.attr(0, "async_scope", 1)`, or `T.ptx_cp_async`) may land
any time until a wait retires them (`async_wait_inflight_count` around a statement, or
`T.ptx_wait_group(n)`), so a barrier does not make them visible: they count as writes where
they are issued (other threads must have read the old values first) and again at every wait
after them, until a wait for all groups (`n == 0`). Barriers go inside the async attributes,
as TVM puts them: the one a read needs after the wait, `wait_group(n); __syncthreads(); read`.

Inside a warp-specialized split (`T.attr(0, "warp_specialize_scope", P)` around
`if <producer>: ... else: <consumers>`, made by inject-warp-specialization) the branches
diverge and the mbarrier ring orders the pipeline's buffers, so no `__syncthreads` goes there:
a barrier the consumers need among themselves is the named barrier `T.ptx_bar_sync(1, C)` (C:
the block's threads but the P producers, constant extents), and so is each
`T.tvm_storage_sync("shared")` the consumers' code already had (a tensor intrinsic's). A
statement of the producer branch that would need a barrier, or a block barrier there, is
refused, located, as is a split whose consumers are not whole warps, or the program's own use
of barrier 1 in a split other than as the consumers' barrier.

    with T.launch_thread("threadIdx.x", 32) as tx:           ... as tx:
        S[tx] = A[tx]                                 ->          S[tx] = A[tx]
        B[tx] = S[31 - tx]                                        T.tvm_storage_sync("shared")
                                                                  B[tx] = S[31 - tx]

    with T.attr(0, "warp_specialize_scope", 128):            with T.attr(...):
        if threadIdx_y >= 1:                                      if threadIdx_y >= 1:
            ...                                       ->              ...
        else:                                                     else:
            S[tx] = A[tx]                                             S[tx] = A[tx]
            B[tx] = S[127 - tx]                                       T.ptx_bar_sync(1, 128)
                                                                      B[tx] = S[127 - tx]
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field

from tirc.diagnostics import DiagnosticError, Note, Span
from tirc.ir import dtype as dt
from tirc.ir import expr as E
from tirc.ir import stmt as S
from tirc.ir.function import PrimFunc
from tirc.ir.functor import Mutator, Visitor, walk
from tirc.ir.named_barrier import OPS as NAMED_BARRIERS
from tirc.ir.named_barrier import SYNC as NAMED_SYNC
from tirc.ir.named_barrier import WARP
from tirc.ir.tma import tma_load
from tirc.transform.pass_base import Dialect, FunctionPass
from tirc.transform.passes.inject_software_pipeline import (
    ASYNC_SCOPE,
    COMMIT_QUEUE_SCOPE,
    WAIT_INFLIGHT_COUNT,
    WAIT_QUEUE_SCOPE,
)
from tirc.transform.passes.inject_warp_specialization import SCOPE as WARP_SPECIALIZE_SCOPE
from tirc.transform.passes.inject_warp_specialization import split_branches

SHARED_SCOPES = ("shared", "shared.dyn")
CONSUMER_BARRIER = 1  # the named barrier of a warp-specialized split's consumers
_THREAD_TAGS = ("threadIdx.x", "threadIdx.y", "threadIdx.z")
ASYNC_KEYS = (ASYNC_SCOPE, COMMIT_QUEUE_SCOPE, WAIT_QUEUE_SCOPE, WAIT_INFLIGHT_COUNT)
# spelled as the parser completes `T.tvm_storage_sync("shared")`
SYNC = S.storage_sync("shared")


@dataclass
class _Accesses:
    """Shared buffers (by data handle) read and written since the last barrier, and written by
    asynchronous copies that no wait for every group has retired since they were issued."""

    reads: set[E.Var] = field(default_factory=set)
    writes: set[E.Var] = field(default_factory=set)
    pending: set[E.Var] = field(default_factory=set)

    def conflicts(self, later: _Accesses) -> bool:
        return bool(later.reads & self.writes or (later.writes | later.pending) & self.reads)

    def merged(self, other: _Accesses) -> _Accesses:
        return _Accesses(
            self.reads | other.reads, self.writes | other.writes, self.pending | other.pending
        )

    def after_barrier(self) -> _Accesses:
        return _Accesses(pending=self.pending)

    def after_wait(self, count: E.PrimExpr) -> _Accesses:
        """A wait may complete any pending copy; only a wait for all groups completes all."""
        pending = set() if E.is_const_int(count, 0) else self.pending
        return _Accesses(self.reads, self.writes | self.pending, pending)


class _Collector(Visitor):
    """The shared accesses of a statement; `synced` when it holds a barrier of its own."""

    def __init__(self, in_async: bool) -> None:
        self.accesses = _Accesses()
        self.synced = False
        self.in_async = in_async

    def visit_AttrStmt(self, node: S.AttrStmt) -> None:
        if node.key != ASYNC_SCOPE or self.in_async:
            self.generic_visit(node)
            return
        self.in_async = True
        self.generic_visit(node)
        self.in_async = False

    def visit_BufferLoad(self, node: E.BufferLoad) -> None:
        if node.buffer.scope in SHARED_SCOPES:
            self.accesses.reads.add(node.buffer.data)
        self.generic_visit(node)

    def visit_BufferStore(self, node: S.BufferStore) -> None:
        if node.buffer.scope in SHARED_SCOPES:
            (self.accesses.pending if self.in_async else self.accesses.writes).add(node.buffer.data)
        self.generic_visit(node)

    def visit_Call(self, node: E.Call) -> None:
        if node.op == "tvm_storage_sync" or node.op in NAMED_BARRIERS:
            self.synced = True
        elif node.op == "tvm_access_ptr" and isinstance(node.args[1], E.Var):
            mask = node.args[4]
            self.touch(node.args[1], mask.value if isinstance(mask, E.IntImm) else _READ_WRITE)
        elif node.op.startswith("ptx_mbarrier_"):
            pass  # an mbarrier is a synchronization object, not data other threads read
        elif node.op in ("ptx_tma_load", "ptx_tma_load_multicast"):
            # its destination is the mbarrier's to order: readers wait on it, and the program
            # frees a stage (a barrier, or an mbarrier its readers arrive on) before refilling
            # it; a barrier here would stall a producer warp's loop against its consumers'
            pass
        elif node.op == "ptx_tma_store":
            # its source is read (other threads' writes must be done first)
            shared = tma_load(node).shared
            if isinstance(shared, E.Var):
                self.touch(shared, _READ)
        elif node.op != "address_of":  # address_of(S[i]): its load is the read
            modes = _POINTER_ARGS.get(node.op, {})
            for index, arg in enumerate(node.args):
                if isinstance(arg, E.Var):
                    self.touch(arg, modes.get(index, _READ_WRITE))
        self.generic_visit(node)

    def touch(self, data: E.Var, flags: int) -> None:
        """Records an access through a pointer to `data` (flags: 1 read, 2 write)."""
        if data.pointer is None or data.pointer.scope not in SHARED_SCOPES:
            return
        if flags & _READ:
            self.accesses.reads.add(data)
        if flags & _WRITE:
            self.accesses.writes.add(data)
        if flags & _ASYNC:
            self.accesses.pending.add(data)


_READ, _WRITE, _READ_WRITE, _ASYNC = 1, 2, 3, 4  # _ASYNC: written by an asynchronous copy
# how intrinsics use the buffers whose data they take (argument index -> flags), the dtype
# argument not counted; a shared buffer's data elsewhere in a call is read and written
_POINTER_ARGS: dict[str, dict[int, int]] = {
    "ptx_cp_async": {0: _ASYNC, 2: _READ},
    "ptx_ldmatrix": {3: _WRITE, 5: _READ},
    "mma_store": {2: _WRITE, 3: _READ},
    "tvm_load_matrix_sync": {0: _WRITE, 5: _READ},
    "tvm_store_matrix_sync": {0: _READ, 5: _WRITE},
    "tvm_fill_fragment": {0: _WRITE},
    "tvm_mma_sync": {0: _WRITE, 2: _READ, 4: _READ, 6: _READ},
    "ptx_wgmma": {4: _READ, 10: _READ},
    "ptx_map_shared_cluster": {0: 0},  # a peer's address: its loads and stores are the accesses
}


def _accesses(stmt: S.Stmt, in_async: bool) -> tuple[_Accesses, bool]:
    collector = _Collector(in_async)
    collector.visit(stmt)
    return collector.accesses, collector.synced


def _wait_count(stmt: S.Stmt) -> E.PrimExpr | None:
    """The group count of `T.ptx_wait_group(n)`; None for any other statement."""
    if isinstance(stmt, S.Evaluate) and isinstance(stmt.value, E.Call):
        call = stmt.value
        if call.op == "ptx_wait_group" and isinstance(call.args[0], E.PrimExpr):
            return call.args[0]
    return None


def _is_async_scope(stmt: S.Stmt) -> bool:
    return isinstance(stmt, S.AttrStmt) and stmt.key in ASYNC_KEYS


def _block_sync(stmt: S.Stmt) -> E.Call | None:
    """The call of a `T.tvm_storage_sync("shared")` statement (a block barrier), or None."""
    if not isinstance(stmt, S.Evaluate) or not isinstance(stmt.value, E.Call):
        return None
    call = stmt.value
    scope = call.args[0] if call.args else None
    shared = isinstance(scope, E.StringImm) and scope.value in SHARED_SCOPES
    return call if call.op == "tvm_storage_sync" and shared else None


def split_consumers(node: S.AttrStmt, extents: Mapping[str, E.PrimExpr]) -> int:
    """The consumer threads of a warp-specialized split (`node`, its attribute) in a kernel
    whose threadIdx extents are `extents`: the block's threads but its producers; a located
    error where they cannot have a named barrier (not constants, not whole warps)."""
    total = 1
    for tag, extent in extents.items():
        if not isinstance(extent, E.IntImm):
            raise DiagnosticError.at(
                node.span,
                f"a warp-specialized split needs constant thread extents for its consumers' "
                f"named barrier: {tag} is not",
            )
        total *= extent.value
    if not isinstance(node.value, E.IntImm):
        raise DiagnosticError.at(
            node.span, "a warp-specialized split's producer count must be a constant"
        )
    producers = node.value.value
    consumers = total - producers
    if producers < 0 or consumers <= 0 or consumers % WARP:
        raise DiagnosticError.at(
            node.span,
            f"the consumers of a warp-specialized split ({total} threads but "
            f"{producers} producers) must be whole warps for their named barrier",
        )
    return consumers


def named_sync(count: int, span: Span | None = None) -> S.Evaluate:
    """`T.ptx_bar_sync(1, count)`: the consumers' barrier in a warp-specialized split."""
    args = (E.IntImm(CONSUMER_BARRIER, dt.INT32), E.IntImm(count, dt.INT32))
    return S.Evaluate(E.Call(dt.VOID, NAMED_SYNC, args, span=span), span=span)


@dataclass
class _Split:
    """The warp-specialized split we are in: its attribute, and the barrier its branch
    being planned takes (None in the producer's, which may need none; in the consumers',
    None with `problem`, why they cannot have one, raised only if they need it)."""

    attr: S.AttrStmt
    barrier: S.Evaluate | None
    problem: DiagnosticError | None = None

    def refuse(self) -> None:
        if self.problem is not None:
            raise self.problem


class _Planner(Mutator):
    """Rewrites statement lists inside kernels, threading through them the shared accesses
    made since the last barrier."""

    def __init__(self) -> None:
        self.state = _Accesses()
        self.in_kernel = False
        self.in_async = False
        self.split: _Split | None = None
        self.extents: dict[str, E.PrimExpr] = {}  # the kernel's threadIdx extents

    def visit_AttrStmt(self, node: S.AttrStmt) -> S.Stmt:
        if node.key == WARP_SPECIALIZE_SCOPE and self.in_kernel:
            return self.split_body(node)
        entering = node.key == "thread_extent" and not self.in_kernel
        if entering:
            self.in_kernel, self.state, self.extents = True, _Accesses(), {}
        if node.key == "thread_extent" and isinstance(node.node, S.IterVar):
            if node.node.thread_tag in _THREAD_TAGS:
                self.extents[node.node.thread_tag] = node.value
        if node.key == WAIT_INFLIGHT_COUNT and self.in_kernel:
            self.state = self.state.after_wait(node.value)
        was_async = self.in_async
        self.in_async = was_async or node.key == ASYNC_SCOPE
        body = self.body(node.body)
        self.in_async = was_async
        if entering:
            self.in_kernel = False
        return node if body is node.body else dataclasses.replace(node, body=body)

    def visit_SeqStmt(self, node: S.SeqStmt) -> S.Stmt:
        return self.body(node)

    def split_body(self, node: S.AttrStmt) -> S.Stmt:
        """A warp-specialized split: the producer branch (`then`) planned with no barrier
        to put, the consumers' (`else`) with their named barrier. common-subexpr-elim may
        have bound values before the branches."""
        outer = self.split
        found = split_branches(node)
        if found is None:
            self.split = _Split(node, None)
            body = self.body(node.body)
        else:
            bindings, branches, consumers_code = found
            barrier: S.Evaluate | None = None
            problem: DiagnosticError | None = None
            try:
                consumers = self.consumers(node)
                _check_barrier_one(branches, consumers, node)
                barrier = named_sync(consumers, node.span)
            except DiagnosticError as error:
                problem = error
            before = self.state
            self.split = _Split(node, None)
            then = self.body(branches.then_case)
            after_then, self.state = self.state, before
            self.split = _Split(node, barrier, problem)
            otherwise = self.body(consumers_code)
            self.state = after_then.merged(self.state)
            body = node.body
            if then is not branches.then_case or otherwise is not consumers_code:
                changed = dataclasses.replace(branches, then_case=then, else_case=otherwise)
                body = S.seq(*bindings, changed)
        self.split = outer
        return node if body is node.body else dataclasses.replace(node, body=body)

    def consumers(self, node: S.AttrStmt) -> int:
        return split_consumers(node, self.extents)

    def block_sync(self, child: S.Stmt, call: E.Call) -> S.Stmt:
        """A block barrier of the program inside a split: the consumers' named barrier, or
        an error in the producer branch."""
        assert self.split is not None
        self.split.refuse()
        if self.split.barrier is None:
            raise DiagnosticError.at(
                call.span or child.span or self.split.attr.span,
                "this block barrier is in the producer branch of a warp-specialized split, "
                "which the consumer threads never reach",
                Note("the split", self.split.attr.span),
            )
        return dataclasses.replace(self.split.barrier, span=child.span)

    def body(self, stmt: S.Stmt) -> S.Stmt:
        """A statement list (or one statement) with the barriers it needs."""
        if not self.in_kernel:
            visited = self.generic_visit(stmt) if isinstance(stmt, S.SeqStmt) else self.visit(stmt)
            return visited
        old = stmt.stmts if isinstance(stmt, S.SeqStmt) else (stmt,)
        new: list[S.Stmt] = []
        for child in old:
            call = _block_sync(child) if self.split is not None else None
            if call is not None:
                child = self.block_sync(child, call)
            count = _wait_count(child)
            if count is not None:
                self.state = self.state.after_wait(count)
            accesses, synced = _accesses(child, self.in_async)
            barrier = SYNC if self.split is None else self.split.barrier
            if (
                self.state.conflicts(accesses)
                and not _starts_with_sync(child, barrier)
                and not _is_async_scope(child)  # the barrier goes inside (after a wait)
            ):
                if barrier is None:
                    assert self.split is not None
                    self.split.refuse()
                    raise DiagnosticError.at(
                        child.span or self.split.attr.span,
                        "this statement needs a barrier after the shared memory accesses before "
                        "it, in the producer branch of a warp-specialized split, where "
                        "__syncthreads would deadlock (the consumers never reach it) and the "
                        "consumers' named barrier does not apply: the mbarrier ring orders only "
                        "the pipeline's buffers",
                        Note("the split", self.split.attr.span),
                    )
                new.append(barrier)
                self.state = self.state.after_barrier()
            if _is_barrier(child, barrier):
                new.append(child)  # the program's own barrier orders what came before it
                self.state = self.state.after_barrier()
            elif synced or isinstance(child, _COMPOUND):
                new.append(self.visit(child))  # barriers inside: let it track the state
            else:
                new.append(child)
                self.state = self.state.merged(accesses)
        if len(new) == len(old) and all(a is b for a, b in zip(new, old, strict=True)):
            return stmt
        return S.seq(*new)

    def visit_For(self, node: S.For) -> S.Stmt:
        if not self.in_kernel:
            return self.generic_visit(node)
        before = self.state
        self.body(node.body)  # a first pass finds what an iteration leaves for the next
        self.state = before.merged(self.state)
        body = self.body(node.body)
        self.state = before.merged(self.state)  # the loop may run no iteration
        return node if body is node.body else dataclasses.replace(node, body=body)

    def visit_While(self, node: S.While) -> S.Stmt:
        if not self.in_kernel:
            return self.generic_visit(node)
        before = self.state
        self.body(node.body)
        self.state = before.merged(self.state)
        body = self.body(node.body)
        self.state = before.merged(self.state)
        return node if body is node.body else dataclasses.replace(node, body=body)

    def visit_IfThenElse(self, node: S.IfThenElse) -> S.Stmt:
        if not self.in_kernel:
            return self.generic_visit(node)
        before = self.state
        then = self.body(node.then_case)
        after_then, self.state = self.state, before
        otherwise = self.body(node.else_case) if node.else_case is not None else None
        self.state = after_then.merged(self.state)
        if then is node.then_case and otherwise is node.else_case:
            return node
        return S.IfThenElse(node.condition, then, otherwise, span=node.span)

    def visit_PrimExpr(self, node: E.PrimExpr) -> E.PrimExpr:
        return node


_COMPOUND = (S.For, S.While, S.IfThenElse, S.AttrStmt, S.SeqStmt)


def _check_barrier_one(branches: S.IfThenElse, consumers: int, split: S.AttrStmt) -> None:
    """The program's own uses of named barrier 1 in a split must be the consumers' barrier:
    in their branch, with their count; elsewhere they would mix with it."""
    for branch, count in ((branches.then_case, None), (branches.else_case, consumers)):
        found: list[E.Call] = []

        def look(node: object, found: list[E.Call] = found) -> None:
            if isinstance(node, E.Call) and node.op in NAMED_BARRIERS:
                if E.is_const_int(node.args[0], CONSUMER_BARRIER):
                    found.append(node)

        walk(branch, look)
        for call in found:
            if count is None or not E.is_const_int(call.args[1], count):
                what = "in the producer branch" if count is None else "with another count"
                raise DiagnosticError.at(
                    call.span or split.span,
                    f"named barrier {CONSUMER_BARRIER} is the consumers' barrier in a "
                    f"warp-specialized split (bar.sync {CONSUMER_BARRIER}, {consumers}): this "
                    f"use of it {what} would mix with it",
                    Note("the split", split.span),
                )


def _is_barrier(stmt: S.Stmt, barrier: S.Evaluate | None) -> bool:
    """Whether `stmt` is a barrier among the threads this planner orders: a block barrier
    outside a split, `barrier` (the consumers' named barrier) in one."""
    if barrier is SYNC:
        return _block_sync(stmt) is not None
    return isinstance(stmt, S.Evaluate) and barrier is not None and _starts_with_sync(stmt, barrier)


def _starts_with_sync(stmt: S.Stmt, barrier: S.Evaluate | None) -> bool:
    """Whether `stmt` starts with a block barrier, or with `barrier` where that is a named
    one (another named barrier orders other threads)."""
    first = stmt.stmts[0] if isinstance(stmt, S.SeqStmt) else stmt
    if not isinstance(first, S.Evaluate) or not isinstance(first.value, E.Call):
        return False
    call = first.value
    if call.op == "tvm_storage_sync":
        return True
    if call.op != NAMED_SYNC or barrier is None or not isinstance(barrier.value, E.Call):
        return False
    return all(
        isinstance(want, E.IntImm) and E.is_const_int(arg, want.value)
        for arg, want in zip(call.args, barrier.value.args, strict=True)
    )


@dataclass(frozen=True)
class ThreadSync(FunctionPass):
    name = "thread-sync"
    expects = Dialect.TIR
    leaves = Dialect.TIR

    def run_function(self, func: PrimFunc) -> PrimFunc:
        body = _Planner().visit(func.body)
        return func if body is func.body else dataclasses.replace(func, body=body)

"""defer-wgmma-wait: a loop of wgmmas waits for them once, after the loop, instead of after
each one, so that the wgmmas of its iterations overlap; the proxy fence and the barrier that
start each iteration are done once, before it. (cuda_wgmma.tir's intrinsics fence, sync,
issue, commit and wait at every call: right for one call, serial for a loop of them.)

A statement is wgmma-only when it is a T.ptx_fence_proxy_async, a barrier
(T.tvm_storage_sync("shared"), or T.ptx_bar_sync(id, count): the named barrier thread-sync
gives a warp-specialized split's consumers, their `__syncthreads`), T.ptx_wgmma_fence,
T.ptx_wgmma or T.ptx_wgmma_commit_group, a binding of a value that reads no memory
(common-subexpr-elim's), or a serial loop or sequence of such. Where a barrier is put back
or merged, it is the one the statements had, and only barriers of the same threads merge.
Wgmma-only statements write no memory and read none but through the wgmmas, whose reads end
at a wait; their accumulators chain in issue order when the wgmmas share a shape (the PTX
ISA's rule, and the interpreter's), so a later wgmma does not need an earlier one waited
for. Hence, in a function whose wgmmas all have one shape (others are left as they are),
innermost loops first:

- a serial loop whose body is wgmma-only statements and then T.ptx_wgmma_wait_group(0) waits
  once, after it. Each iteration's barrier ordered the reads of the wgmmas waited for before
  it ahead of whatever follows the loop; a barrier after the wait now does that. A fence and
  barrier leading the body leave it, before the loop, when its extent is a positive constant
  (nothing in the loop writes shared memory: the first iteration's are enough);
- in a run of wgmma-only statements and waits within a sequence (the deferred loop and what
  is around it, an unrolled loop): only the last wait stays, followed by a barrier where a
  barrier came after an earlier one; a barrier with only fences between it and the next
  barrier goes (thread-sync's, before the hoisted fence and barrier); after a fence, other
  fences go, and after a fence and then a barrier, other barriers up to the wait.

A loop that does anything else (the software pipeline's loop also copies the next stage into
shared memory) keeps its wait. Programs without wgmma are returned as they are. It runs after
thread-sync, whose barriers it merges with the intrinsics' own (thread-sync does not count a
barrier it did not put, so both are there).

Expects tir; leaves tir:

    T.tvm_storage_sync("shared")                T.ptx_fence_proxy_async()
    for k in range(4):                          T.tvm_storage_sync("shared")
        T.ptx_fence_proxy_async()               for k in range(4):
        T.tvm_storage_sync("shared")     ->         T.ptx_wgmma_fence()
        T.ptx_wgmma_fence()                         T.ptx_wgmma("m64n128k16", ...)
        T.ptx_wgmma("m64n128k16", ...)              T.ptx_wgmma_commit_group()
        T.ptx_wgmma_commit_group()              T.ptx_wgmma_wait_group(0)
        T.ptx_wgmma_wait_group(0)               T.tvm_storage_sync("shared")
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from tirc.analysis.effects import reads_no_memory
from tirc.ir import expr as E
from tirc.ir import stmt as S
from tirc.ir.function import PrimFunc
from tirc.ir.functor import Mutator, walk
from tirc.ir.named_barrier import SYNC as NAMED_SYNC
from tirc.transform.pass_base import Dialect, FunctionPass

# a fence, then a barrier: writes seen
_BARRIERS = ("ptx_fence_proxy_async", "tvm_storage_sync", NAMED_SYNC)
_ISSUE = ("ptx_wgmma_fence", "ptx_wgmma", "ptx_wgmma_commit_group")
_LOOPS = (S.ForKind.SERIAL, S.ForKind.UNROLLED)
_POINTERS = ("tvm_access_ptr", "type_annotation")  # the wgmma's operands, read by the wgmma


def _call(stmt: S.Stmt) -> E.Call | None:
    if isinstance(stmt, S.Evaluate) and isinstance(stmt.value, E.Call):
        return stmt.value
    return None


def _is_barrier(stmt: S.Stmt) -> bool:
    call = _call(stmt)
    if call is None or call.op not in _BARRIERS:
        return False
    if call.op == "tvm_storage_sync":
        scope = call.args[0] if call.args else None
        return isinstance(scope, E.StringImm) and scope.value == "shared"
    if call.op == NAMED_SYNC:
        return all(isinstance(arg, E.IntImm) for arg in call.args)
    return True


def _is_sync(stmt: S.Stmt) -> bool:
    call = _call(stmt)
    return call is not None and call.op != "ptx_fence_proxy_async" and _is_barrier(stmt)


def _same_barrier(a: S.Stmt, b: S.Stmt) -> bool:
    """Two barriers that synchronize the same threads (the block, or one named barrier)."""
    first, second = _call(a), _call(b)
    assert first is not None and second is not None
    if first.op != second.op:
        return False
    return all(
        E.is_const_int(x, y.value)
        for x, y in zip(first.args, second.args, strict=True)
        if isinstance(y, E.IntImm)
    )


def _is_wait_all(stmt: S.Stmt) -> bool:
    call = _call(stmt)
    return (
        call is not None and call.op == "ptx_wgmma_wait_group" and E.is_const_int(call.args[0], 0)
    )


def _is_wgmma_only(stmt: S.Stmt) -> bool:
    if isinstance(stmt, S.SeqStmt):
        return all(_is_wgmma_only(item) for item in stmt.stmts)
    if isinstance(stmt, S.For):
        return stmt.kind in _LOOPS and _is_wgmma_only(stmt.body)
    if isinstance(stmt, S.Bind):  # common-subexpr-elim's bindings of offsets
        return reads_no_memory(stmt.value, _POINTERS)
    call = _call(stmt)
    if call is None or not (_is_barrier(stmt) or call.op in _ISSUE):
        return False
    return all(reads_no_memory(arg, _POINTERS) for arg in call.args)


def _shapes(func: PrimFunc) -> set[str]:
    """The shapes of the function's wgmmas (a non-constant shape counts as one of its own)."""
    found: set[str] = set()

    def visit(node: object) -> None:
        if isinstance(node, E.Call) and node.op == "ptx_wgmma":
            shape = node.args[0]
            found.add(shape.value if isinstance(shape, E.StringImm) else f"?{id(node)}")

    walk(func.body, visit)
    return found


def _statements(stmt: S.Stmt) -> list[S.Stmt]:
    return list(stmt.stmts) if isinstance(stmt, S.SeqStmt) else [stmt]


def _defer(loop: S.For) -> S.Stmt:
    """The loop waiting once after it, or the loop as it is."""
    found = _pop_wait(loop.body) if loop.kind in _LOOPS else None
    if found is None or found[0] is None or not _is_wgmma_only(found[0]):
        return loop
    issued, wait = _statements(found[0]), found[1]
    # each iteration's barrier ordered the reads of the wgmmas before it, waited for, before
    # what comes after the loop: now that they are waited for after the loop, one barrier there
    barrier = _sync_in(found[0])
    after = [wait] if barrier is None else [wait, barrier]
    hoisted: list[S.Stmt] = []
    if isinstance(loop.extent, E.IntImm) and loop.extent.value > 0:
        while len(issued) > 1 and _is_barrier(issued[0]):
            hoisted.append(issued.pop(0))
    return S.seq(*hoisted, dataclasses.replace(loop, body=S.seq(*issued)), *after)


def _sync_in(stmt: S.Stmt) -> S.Stmt | None:
    """The first barrier in `stmt` (the one its wgmmas' threads synchronize with), if any."""
    found: list[S.Stmt] = []

    def visit(node: object) -> None:
        if not found and isinstance(node, S.Evaluate) and _is_sync(node):
            found.append(node)

    walk(stmt, visit)
    return found[0] if found else None


def _pop_wait(stmt: S.Stmt) -> tuple[S.Stmt | None, S.Stmt] | None:
    """(what comes before it, the wait) where `stmt` ends with a wait_group(0), else None."""
    if _is_wait_all(stmt):
        return None, stmt
    if isinstance(stmt, S.SeqStmt):
        found = _pop_wait(stmt.stmts[-1])
        if found is None:
            return None
        before = [*stmt.stmts[:-1], *([found[0]] if found[0] is not None else [])]
        return (S.seq(*before) if before else None), found[1]
    return None


def _merge_runs(stmts: list[S.Stmt]) -> list[S.Stmt]:
    """`stmts` with each maximal run of wgmma-only statements and waits merged."""
    kept: list[S.Stmt] = []
    start = 0
    while start < len(stmts):
        end = start
        while end < len(stmts) and (_is_wgmma_only(stmts[end]) or _is_wait_all(stmts[end])):
            end += 1
        if end == start:
            kept.append(stmts[start])
            end += 1
        else:
            kept += _merge(stmts[start:end])
        start = end
    return kept


def _merge(run: list[S.Stmt]) -> list[S.Stmt]:
    """A run without the waits and barriers it repeats. It writes no memory and reads none
    but through its wgmmas, whose reads end at a wait: its last wait does for all, followed by
    a barrier where one came after an earlier wait (it ordered that wait's reads before the
    writes after the run); one fence and then one barrier make every earlier write visible to
    every wgmma after them, until that last wait."""
    waits = [i for i, stmt in enumerate(run) if _is_wait_all(stmt)]
    stmts = list(run)
    if len(waits) > 1:
        due = next((b for b in map(_sync_in, run[waits[0] + 1 : waits[-1]]) if b is not None), None)
        last = run[waits[-1]]
        stmts = [stmt for stmt in run if not _is_wait_all(stmt) or stmt is last]
        index = stmts.index(last) + 1
        if due is not None and not (
            index < len(stmts) and _is_sync(stmts[index]) and _same_barrier(stmts[index], due)
        ):
            stmts.insert(index, due)
    # a barrier with only fences between it and the next barrier: the next one does its work
    stmts = [stmt for i, stmt in enumerate(stmts) if not _has_later_barrier(stmts, i)]
    kept: list[S.Stmt] = []
    fenced = False
    ordered: S.Stmt | None = None  # the barrier that, after a fence, ordered every write
    for stmt in stmts:
        call = _call(stmt)
        if call is not None and call.op == "ptx_fence_proxy_async":
            if fenced:
                continue  # no write since the first fence
            fenced = True
        elif _is_sync(stmt):
            if ordered is not None and _same_barrier(stmt, ordered):
                continue  # a fence and this barrier since the last wait have done its work
            ordered = stmt if fenced else None
        elif _is_wait_all(stmt):
            ordered = None
        kept.append(stmt)
    return kept


def _has_later_barrier(stmts: list[S.Stmt], index: int) -> bool:
    """Whether stmts[index] is a barrier that another follows with only fences between."""
    if not _is_sync(stmts[index]):
        return False
    for stmt in stmts[index + 1 :]:
        if _is_sync(stmt):
            return _same_barrier(stmt, stmts[index])
        if not _is_barrier(stmt):  # a fence is one too; anything else ends the search
            return False
    return False


class _Deferrer(Mutator):
    def visit_For(self, node: S.For) -> S.Stmt:
        loop: S.For = self.generic_visit(node)
        return _defer(loop)

    def visit_SeqStmt(self, node: S.SeqStmt) -> S.Stmt:
        flat: list[S.Stmt] = []
        for stmt in node.stmts:
            new = self.visit(stmt)
            # a deferred loop's statements join the run; a sequence of the input stays whole
            # (its bindings are its own)
            flat += _statements(new) if new is not stmt else [stmt]
        kept = _merge_runs(flat)
        if len(kept) == len(node.stmts) and all(
            new is old for new, old in zip(kept, node.stmts, strict=True)
        ):
            return node
        return S.seq(*kept)


@dataclass(frozen=True)
class DeferWgmmaWait(FunctionPass):
    name = "defer-wgmma-wait"
    expects = Dialect.TIR
    leaves = Dialect.TIR

    def run_function(self, func: PrimFunc) -> PrimFunc:
        if len(_shapes(func)) != 1:  # no wgmma, or accumulators that may not chain
            return func
        body = _Deferrer().visit(func.body)
        return func if body is func.body else dataclasses.replace(func, body=body)

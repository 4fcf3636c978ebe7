"""storage-rewrite: allocations of one statement list whose lifetimes do not overlap share
storage, so that a kernel asks for less local and shared memory.

Expects flat tir; leaves flat tir. Conservative: only one-dimensional allocations of constant
size, of one scope (`local`, or `shared` where a `tvm_storage_sync` separates the last use of
one from the first use of the next, so no thread still reads what another overwrites), made
in the same statement list and used only through loads and stores. A later allocation takes
over the storage of an earlier one whose last use comes before its first; the kept
allocation grows to the larger size in bytes. In shared memory, one of another dtype whose
element size divides the kept one's reaches it through a view of its data (`T.decl_buffer(...,
data=A.data)`); registers share within one dtype (`_scope_reuse.can_share`).

    A = T.alloc_local((4,))                   A = T.alloc_local((8,))
    A[0] = ...                                A[0] = ...
    x = A[0]                        ->        x = A[0]
    B = T.alloc_local((8,))                   A[7] = ...
    B[7] = ...

Global and tagged local allocations (`local.L0A`) share storage across the whole allocation
scope instead (the function, a thread launch, a parallel loop's body; `_scope_reuse`): by
lifetime, across loops and nesting levels, the shared allocation made at the top of the scope;
in place, where one loop reads the earlier last and writes the later first, each iteration at
its own element; an unused one goes.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from tirc.ir import expr as E
from tirc.ir import stmt as S
from tirc.ir.buffer import Buffer
from tirc.ir.function import PrimFunc
from tirc.ir.functor import Mutator, Visitor
from tirc.transform.pass_base import Dialect, FunctionPass
from tirc.transform.passes._scope_reuse import (
    can_share,
    grown_to_hold,
    reuse_storage,
    target_in,
)

SCOPES = ("local", "shared")


class Handles(Visitor):
    """Data handles a statement uses: through accesses (`accessed`) and otherwise (`other`)."""

    def __init__(self) -> None:
        self.accessed: set[E.Var] = set()
        self.other: set[E.Var] = set()

    def visit_Var(self, node: E.Var) -> None:
        self.other.add(node)

    def visit_BufferLoad(self, node: E.BufferLoad) -> None:
        self.accessed.add(node.buffer.data)
        self.generic_visit(node)

    def visit_BufferStore(self, node: S.BufferStore) -> None:
        self.accessed.add(node.buffer.data)
        self.generic_visit(node)

    def visit_AllocBuffer(self, node: S.AllocBuffer) -> None:
        pass


def handles(node: object) -> Handles:
    found = Handles()
    found.visit(node)
    return found


def _is_sync(stmt: S.Stmt) -> bool:
    return (
        isinstance(stmt, S.Evaluate)
        and isinstance(stmt.value, E.Call)
        and stmt.value.op == "tvm_storage_sync"
    )


def _candidate(buffer: Buffer) -> bool:
    return (
        buffer.scope in SCOPES
        and len(buffer.shape) == 1
        and isinstance(buffer.shape[0], E.IntImm)
        and not buffer.strides
        and buffer.elem_offset is None
    )


class _Redirect(Mutator):
    def __init__(self, targets: dict[E.Var, Buffer]) -> None:
        self.targets = targets

    def visit_BufferLoad(self, node: E.BufferLoad) -> E.PrimExpr:
        node = self.generic_visit(node)
        target = self.targets.get(node.buffer.data)
        return node if target is None else dataclasses.replace(node, buffer=target)

    def visit_BufferStore(self, node: S.BufferStore) -> S.Stmt:
        node = self.generic_visit(node)
        target = self.targets.get(node.buffer.data)
        return node if target is None else dataclasses.replace(node, buffer=target)


def plan(stmts: tuple[S.Stmt, ...]) -> dict[E.Var, Buffer]:
    """For each allocation of `stmts` that takes over another's storage: its data handle ->
    the allocation it joins (by that one's data handle, in the returned buffer)."""
    uses = [handles(stmt) for stmt in stmts]
    escaping = set().union(*(u.other for u in uses)) if uses else set()
    syncs = [k for k, stmt in enumerate(stmts) if _is_sync(stmt)]
    lives: list[tuple[int, int, int, Buffer]] = []  # first use, last use, position, buffer
    for position, stmt in enumerate(stmts):
        if not isinstance(stmt, S.AllocBuffer) or not _candidate(stmt.buffer):
            continue
        buffer = stmt.buffer
        if buffer.data in escaping:
            continue
        touched = [k for k in range(position + 1, len(stmts)) if buffer.data in uses[k].accessed]
        if touched:
            lives.append((touched[0], touched[-1], position, buffer))
    # groups of buffers sharing one storage: (owner, last use of the group)
    groups: list[list[object]] = []
    joined: dict[E.Var, Buffer] = {}
    for first, last, _, buffer in sorted(lives, key=lambda item: (item[0], item[2])):
        for group in groups:
            owner, group_last = group[0], group[1]
            assert isinstance(owner, Buffer) and isinstance(group_last, int)
            if not can_share(owner, buffer) or group_last >= first:
                continue
            if buffer.scope == "shared" and not any(group_last < s < first for s in syncs):
                continue
            joined[buffer.data] = owner
            group[1] = last
            break
        else:
            groups.append([buffer, last])
    return joined


class _Rewriter(Mutator):
    def visit_SeqStmt(self, node: S.SeqStmt) -> S.Stmt:
        visited: S.SeqStmt = self.generic_visit(node)
        stmts = visited.stmts if isinstance(visited, S.SeqStmt) else (visited,)
        joined = plan(stmts)
        if not joined:
            return visited
        allocated = {s.buffer.data: s.buffer for s in stmts if isinstance(s, S.AllocBuffer)}
        members: dict[E.Var, list[Buffer]] = {}
        for data, owner in joined.items():
            members.setdefault(owner.data, []).append(allocated[data])
        grown = {data: grown_to_hold(allocated[data], group) for data, group in members.items()}
        targets = {
            data: target_in(grown[owner.data], allocated[data]) for data, owner in joined.items()
        }
        targets.update(grown)
        kept: list[S.Stmt] = []
        for stmt in stmts:
            if isinstance(stmt, S.AllocBuffer):
                if stmt.buffer.data in joined:
                    continue
                if stmt.buffer.data in grown:
                    kept.append(dataclasses.replace(stmt, buffer=grown[stmt.buffer.data]))
                    # the views of another dtype, right after the allocation they view
                    kept += [
                        S.DeclBuffer(target, target.data)
                        for data, target in targets.items()
                        if data in joined
                        and target is not grown[stmt.buffer.data]
                        and target.data is stmt.buffer.data
                    ]
                    continue
            kept.append(stmt)
        result: S.Stmt = _Redirect(targets).visit(S.seq(*kept))
        return result


@dataclass(frozen=True)
class StorageRewrite(FunctionPass):
    name = "storage-rewrite"
    expects = Dialect.FLAT
    leaves = Dialect.FLAT

    def run_function(self, func: PrimFunc) -> PrimFunc:
        body = reuse_storage(_Rewriter().visit(func.body))
        return func if body is func.body else dataclasses.replace(func, body=body)

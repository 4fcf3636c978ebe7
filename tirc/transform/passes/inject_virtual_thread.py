"""inject-virtual-thread: a virtual thread (`vthread`, `vthread.x/y/z`, `cthread`) becomes
interleaved copies of the statements that depend on it, in the one real thread.

Expects flat tir; leaves flat tir without virtual threads. The statements that depend on the
virtual thread are those that mention it, or a variable, loop or buffer whose value does
(found to a fixed point); a buffer allocated inside and so dependent is widened to one slice
per virtual thread. Copies are made as deep as possible: loops, conditions and thread launches
that do not depend on the thread are kept once, with the copies inside them; a statement that
depends on nothing runs once for all virtual threads (as TVM does for `vthread`; for
`cthread` every allocation is widened and every store copied), except a store that also reads
the buffer it writes. Up to 16 virtual threads are unrolled; more become a serial loop. Where a
widened buffer's data is used other than by loads and stores, the virtual thread is left as it
was (the backends run it as a loop).

    with T.launch_thread("vthread.x", 2) as v:       tx = T.launch_thread("threadIdx.x", 8)
        tx = T.launch_thread("threadIdx.x", 8)       C = T.alloc_local((8,))
        C = T.alloc_local((4,))                 ->   for i in range(4):
        for i in range(4):                               C[i] = A[tx * 4 + i]
            C[i] = A[v * 32 + tx * 4 + i]                C[4 + i] = A[32 + tx * 4 + i]
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from tirc.analysis.arith.analyzer import Analyzer
from tirc.ir import expr as E
from tirc.ir import stmt as S
from tirc.ir.buffer import Buffer
from tirc.ir.function import PrimFunc
from tirc.ir.functor import Mutator, Visitor
from tirc.transform.flat_offset import FlatOffsetRewriter
from tirc.transform.fresh_copy import fresh_copy
from tirc.transform.pass_base import Dialect, FunctionPass

VIRTUAL_THREAD_KEYS = ("virtual_thread", "thread_extent")
MAX_UNROLL = 16


def is_virtual_thread(stmt: S.Stmt) -> bool:
    if not isinstance(stmt, S.AttrStmt) or stmt.key not in VIRTUAL_THREAD_KEYS:
        return False
    if not isinstance(stmt.node, S.IterVar):
        return False
    tag = stmt.node.thread_tag
    return tag.startswith("vthread") or tag == "cthread"


class _Mentions(Visitor):
    """Whether a tree mentions one of `vars` (buffer data handles included)."""

    def __init__(self, vars: set[E.Var]) -> None:
        self.vars = vars
        self.found = False

    def visit(self, node: object) -> None:
        if not self.found:
            super().visit(node)

    def visit_Var(self, node: E.Var) -> None:
        if node in self.vars:
            self.found = True

    def visit_BufferLoad(self, node: E.BufferLoad) -> None:
        if node.buffer.data in self.vars:
            self.found = True
        self.generic_visit(node)

    def visit_BufferStore(self, node: S.BufferStore) -> None:
        if node.buffer.data in self.vars:
            self.found = True
        self.generic_visit(node)


def mentions(node: object, vars: set[E.Var]) -> bool:
    finder = _Mentions(vars)
    finder.visit(node)
    return finder.found


class _Dependence(Visitor):
    """One round of the fixed point: variables and buffers whose value depends on `touched`,
    directly or through the loops and conditions around their definition."""

    def __init__(self, touched: set[E.Var], share: bool) -> None:
        self.touched = touched
        self.share = share
        self.context = 0  # enclosing loops and conditions that depend on the thread

    def add(self, var: E.Var) -> None:
        self.touched.add(var)

    def visit_Bind(self, node: S.Bind) -> None:
        if self.context or mentions(node.value, self.touched):
            self.add(node.var)
        self.generic_visit(node)

    def visit_For(self, node: S.For) -> None:
        dependent = mentions((node.min, node.extent), self.touched)
        if dependent or self.context:
            self.add(node.loop_var)
        self.context += dependent
        self.visit(node.body)
        self.context -= dependent

    def visit_While(self, node: S.While) -> None:
        dependent = mentions(node.condition, self.touched)
        self.context += dependent
        self.visit(node.body)
        self.context -= dependent

    def visit_IfThenElse(self, node: S.IfThenElse) -> None:
        dependent = mentions(node.condition, self.touched)
        self.context += dependent
        self.visit(node.then_case)
        self.visit(node.else_case)
        self.context -= dependent

    def visit_BufferStore(self, node: S.BufferStore) -> None:
        if self.context or mentions((node.value, node.indices, node.predicate), self.touched):
            self.add(node.buffer.data)

    def visit_AllocBuffer(self, node: S.AllocBuffer) -> None:
        if not self.share:
            self.add(node.buffer.data)


def dependent_vars(var: E.Var, body: S.Stmt, share: bool) -> set[E.Var]:
    touched = {var}
    while True:
        size = len(touched)
        _Dependence(touched, share).visit(body)
        if len(touched) == size:
            return touched


class _Allocations(Visitor):
    def __init__(self) -> None:
        self.buffers: list[Buffer] = []

    def visit_AllocBuffer(self, node: S.AllocBuffer) -> None:
        self.buffers.append(node.buffer)


class _OtherUses(Visitor):
    """Uses of data handles other than as the buffer of a load or store."""

    def __init__(self, handles: set[E.Var]) -> None:
        self.handles = handles
        self.found = False

    def visit_Var(self, node: E.Var) -> None:
        self.found = self.found or node in self.handles


def _widened(buffer: Buffer, count: int) -> Buffer | None:
    if len(buffer.shape) != 1 or buffer.strides or buffer.elem_offset is not None:
        return None
    data = E.Var(buffer.data.name, buffer.data.dtype, buffer.data.pointer, span=buffer.data.span)
    extent = buffer.shape[0]
    dtype = extent.dtype
    if isinstance(extent, E.IntImm):
        size: PrimExpr = E.IntImm(extent.value * count, dtype)
    else:
        size = E.Mul(extent, E.IntImm(count, dtype))
    return dataclasses.replace(buffer, data=data, shape=(size,))


class _Widen(FlatOffsetRewriter):
    """Allocations of widened buffers, and their accesses offset by thread * size."""

    offset_first = True

    def visit_AllocBuffer(self, node: S.AllocBuffer) -> S.Stmt:
        found = self.moves.get(node.buffer.data)
        return node if found is None else dataclasses.replace(node, buffer=found[0])


PrimExpr = E.PrimExpr


@dataclass
class _Injector:
    """Copies of the dependent statements of one virtual thread's body."""

    var: E.Var
    count: PrimExpr
    touched: set[E.Var]

    def depends(self, stmt: S.Stmt) -> bool:
        return mentions(stmt, self.touched) or _rewrites_itself(stmt)

    def inject(self, stmt: S.Stmt) -> S.Stmt:
        if not self.depends(stmt):
            return stmt
        if isinstance(stmt, S.SeqStmt):
            items: list[S.Stmt] = []
            for position, child in enumerate(stmt.stmts):
                if isinstance(child, (S.Bind, S.DeclBuffer)) and mentions(child, self.touched):
                    items.append(self.copies(S.seq(*stmt.stmts[position:])))
                    break
                items.append(self.inject(child))
            return S.seq(*items)
        if isinstance(stmt, S.AllocBuffer):
            return stmt
        if isinstance(stmt, S.For) and not mentions((stmt.min, stmt.extent), self.touched):
            if stmt.kind in (S.ForKind.SERIAL, S.ForKind.UNROLLED, S.ForKind.THREAD_BINDING):
                return dataclasses.replace(stmt, body=self.inject(stmt.body))
        if isinstance(stmt, S.AttrStmt) and not mentions(stmt.value, self.touched):
            if not mentions(stmt.node, self.touched):
                return dataclasses.replace(stmt, body=self.inject(stmt.body))
        if isinstance(stmt, S.IfThenElse) and not mentions(stmt.condition, self.touched):
            else_case = self.inject(stmt.else_case) if stmt.else_case is not None else None
            return dataclasses.replace(
                stmt, then_case=self.inject(stmt.then_case), else_case=else_case
            )
        return self.copies(stmt)

    def copies(self, stmt: S.Stmt) -> S.Stmt:
        dtype = self.var.dtype
        if isinstance(self.count, E.IntImm) and self.count.value <= MAX_UNROLL:
            return S.seq(
                *(
                    _IndexSimplifier().visit(fresh_copy(stmt, {self.var: E.IntImm(i, dtype)}))
                    for i in range(self.count.value)
                )
            )
        var = E.Var(self.var.name, dtype)
        body = fresh_copy(stmt, {self.var: var})
        return S.For(var, E.IntImm(0, dtype), self.count, S.ForKind.SERIAL, body, span=stmt.span)


class _IndexSimplifier(Mutator):
    """Folds the constant offsets the copies leave in buffer indices."""

    def __init__(self) -> None:
        self.analyzer = Analyzer()

    def visit_BufferLoad(self, node: E.BufferLoad) -> E.PrimExpr:
        node = self.generic_visit(node)
        indices = tuple(self.analyzer.simplify(index) for index in node.indices)
        return dataclasses.replace(node, indices=indices)

    def visit_BufferStore(self, node: S.BufferStore) -> S.Stmt:
        node = self.generic_visit(node)
        indices = tuple(self.analyzer.simplify(index) for index in node.indices)
        return dataclasses.replace(node, indices=indices)


class _ReadsOwnBuffer(Visitor):
    def __init__(self) -> None:
        self.found = False

    def visit_BufferStore(self, node: S.BufferStore) -> None:
        self.found = self.found or mentions(node.value, {node.buffer.data})
        self.generic_visit(node)


def _rewrites_itself(stmt: S.Stmt) -> bool:
    """A store that reads what it writes: running it once is not running it n times."""
    finder = _ReadsOwnBuffer()
    finder.visit(stmt)
    return finder.found


def inject(node: S.AttrStmt) -> S.Stmt:
    """The virtual thread `node` (its body already free of inner ones) made explicit."""
    assert isinstance(node.node, S.IterVar)
    var, count, body = node.node.var, node.value, node.body
    share = node.node.thread_tag != "cthread"
    touched = dependent_vars(var, body, share)
    allocations = _Allocations()
    allocations.visit(body)
    widened: dict[E.Var, tuple[Buffer, PrimExpr]] = {}
    if not isinstance(count, E.IntImm):
        return node
    for buffer in allocations.buffers:
        if buffer.data not in touched:
            continue
        new = _widened(buffer, count.value)
        if new is None:
            return node
        size = buffer.shape[0]
        size_dtype = size.dtype
        offset = E.Mul(var if var.dtype == size_dtype else E.Cast(size_dtype, var), size)
        widened[buffer.data] = (new, offset)
    others = _OtherUses(set(widened))
    _scan_other_uses(body, others)
    if others.found:
        return node
    if widened:
        body = _Widen(widened).visit(body)
        touched |= {new.data for new, _ in widened.values()}
    return _Injector(var, count, touched).inject(body)


def _scan_other_uses(body: S.Stmt, others: _OtherUses) -> None:
    class _Scan(Visitor):
        def visit_BufferLoad(self, node: E.BufferLoad) -> None:
            self.visit(node.indices)
            self.visit(node.predicate)

        def visit_BufferStore(self, node: S.BufferStore) -> None:
            self.visit(node.value)
            self.visit(node.indices)
            self.visit(node.predicate)

        def visit_AllocBuffer(self, node: S.AllocBuffer) -> None:
            pass

        def visit_Var(self, node: E.Var) -> None:
            others.visit_Var(node)

    _Scan().visit(body)


class _Pass(Mutator):
    def visit_AttrStmt(self, node: S.AttrStmt) -> S.Stmt:
        visited: S.AttrStmt = self.generic_visit(node)
        return inject(visited) if is_virtual_thread(visited) else visited


@dataclass(frozen=True)
class InjectVirtualThread(FunctionPass):
    name = "inject-virtual-thread"
    expects = Dialect.FLAT
    leaves = Dialect.FLAT

    def run_function(self, func: PrimFunc) -> PrimFunc:
        body = _Pass().visit(func.body)
        return func if body is func.body else dataclasses.replace(func, body=body)

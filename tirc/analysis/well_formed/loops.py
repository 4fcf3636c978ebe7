"""Loops: bounds typed like the loop variable, vectorized loops of constant extent, and what
may run inside the iterations of a parallel or vectorized loop.

Those iterations run at once, so nothing in them may depend on another: no loop-carried
reduction (a reduction or ordered iteration variable bound to the loop), no barrier, no GPU
thread launch. Only threads of one block (threadIdx) may share a reduction: tirc lowers that
to a cross-thread all-reduce.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from tirc.analysis.well_formed.checker import Checker
from tirc.analysis.well_formed.threads import THREAD_KEYS
from tirc.diagnostics import Diagnostic, Note
from tirc.ir.expr import Call, PrimExpr
from tirc.ir.function import PrimFunc
from tirc.ir.functor import vars_in
from tirc.ir.node import Node
from tirc.ir.stmt import AttrStmt, For, ForKind, IterType, IterVar, SBlockRealize

# The loop kinds whose iterations run concurrently.
_CONCURRENT = (ForKind.PARALLEL, ForKind.VECTORIZED, ForKind.THREAD_BINDING)
# A thread index that may carry a reduction: threads of one GPU block can combine results.
_REDUCING_THREADS = ("threadIdx.",)


class LoopChecker(Checker):
    def __init__(self) -> None:
        super().__init__()
        self.concurrent: list[For] = []  # enclosing parallel, vectorized and thread loops

    @contextmanager
    def inside(self, stmt: For) -> Iterator[None]:
        self.concurrent.append(stmt)
        try:
            yield
        finally:
            self.concurrent.pop()

    def enclosing(self, *kinds: ForKind) -> For | None:
        for loop in reversed(self.concurrent):
            if loop.kind in kinds:
                return loop
        return None

    def visit_For(self, stmt: For) -> None:
        self.check_bounds(stmt)
        if stmt.kind is ForKind.THREAD_BINDING:
            self.check_launch(stmt, f"thread-binding loop '{stmt.loop_var.name}'")
        elif stmt.kind is ForKind.PARALLEL:
            outer = self.enclosing(ForKind.VECTORIZED)
            if outer is not None:
                self.error(
                    f"parallel loop '{stmt.loop_var.name}' inside vectorized loop "
                    f"'{outer.loop_var.name}'",
                    stmt,
                    Note("the vectorized loop", outer.span),
                )
        if stmt.kind in _CONCURRENT:
            with self.inside(stmt):
                self.generic_visit(stmt)
        else:
            self.generic_visit(stmt)

    def check_bounds(self, stmt: For) -> None:
        var = stmt.loop_var
        if not var.dtype.is_integer:
            message = f"loop variable '{var.name}' has type {var.dtype}; loops count in integers"
            self.error(message, stmt)
            return
        for role, expr in (("start", stmt.min), ("extent", stmt.extent), ("step", stmt.step)):
            if expr is not None and expr.dtype != var.dtype:
                self.error(
                    f"{role} of loop '{var.name}' has type {expr.dtype}, "
                    f"the loop variable {var.dtype}",
                    expr,
                )
        # A vectorized loop may have any extent (`n`, `T.vscale() * 4`), as in TVM: the kind
        # asks for vector code, and lowering says in a remark where it runs the loop serially.

    def visit_AttrStmt(self, stmt: AttrStmt) -> None:
        if stmt.key in THREAD_KEYS and isinstance(stmt.node, IterVar):
            self.check_launch(stmt, f"thread '{stmt.node.thread_tag or stmt.node.var.name}'")
        self.generic_visit(stmt)

    def check_launch(self, stmt: Node, what: str) -> None:
        outer = self.enclosing(ForKind.PARALLEL, ForKind.VECTORIZED)
        if outer is not None:
            self.error(
                f"{what} is launched inside {outer.kind.value} loop '{outer.loop_var.name}'",
                stmt,
                Note(f"the {outer.kind.value} loop", outer.span),
            )

    def visit_Call(self, call: Call) -> None:
        if call.op == "tvm_storage_sync":
            outer = self.enclosing(ForKind.PARALLEL, ForKind.VECTORIZED)
            if outer is not None:
                self.error(
                    f"T.tvm_storage_sync inside {outer.kind.value} loop '{outer.loop_var.name}': "
                    "a barrier synchronises GPU threads, not loop iterations",
                    call,
                    Note(f"the {outer.kind.value} loop", outer.span),
                )
        self.generic_visit(call)

    def visit_SBlockRealize(self, stmt: SBlockRealize) -> None:
        for iter_var, value in zip(stmt.block.iter_vars, stmt.iter_values, strict=True):
            if iter_var.iter_type is not IterType.SPATIAL:
                self.check_carried(stmt, iter_var, value)
        self.generic_visit(stmt)

    def check_carried(self, stmt: SBlockRealize, iter_var: IterVar, value: PrimExpr) -> None:
        used = vars_in(value)
        for loop in self.concurrent:
            if loop.loop_var not in used or may_carry(loop, iter_var):
                continue
            kind = describe(loop)
            self.error(
                f"{kind} '{loop.loop_var.name}' is bound to {iter_var.iter_type.name.lower()} "
                f"iteration variable '{iter_var.var.name}' of block '{stmt.block.name}': "
                "its iterations would race on the block's result",
                self.first_located(value, iter_var),
                Note(f"the {kind}", loop.span),
            )


def may_carry(loop: For, iter_var: IterVar) -> bool:
    """Whether `loop` may be bound to a non-spatial iteration variable (cross-thread reduce)."""
    tag = loop.thread_binding.thread_tag if loop.thread_binding is not None else ""
    return iter_var.iter_type is IterType.REDUCE and tag.startswith(_REDUCING_THREADS)


def describe(loop: For) -> str:
    if loop.thread_binding is not None:
        return f"loop bound to {loop.thread_binding.thread_tag}"
    return f"{loop.kind.value} loop"


def check_loops(func: PrimFunc) -> list[Diagnostic]:
    checker = LoopChecker()
    checker.visit(func)
    return checker.diagnostics

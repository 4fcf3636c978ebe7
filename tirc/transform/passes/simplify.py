"""simplify: every expression through the Analyzer, with loop, block and thread variables
bounded by their ranges, what is known in scope (an `if`'s condition in its branches, an
assert after it, a loop's extent positive in its body, a binding's value, buffer parameters'
shapes non-negative), as TVM 0.27's StmtSimplify; conditions it decides pick their branch,
and a store of a value loaded from the same place is dropped.

Expects any dialect; leaves the same one:

    for i in range(4):                   for i in range(4):
        if i < 8:                  ->        A[i] = B[i]
            A[i + 0] = B[i // 1]
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Self

from tirc.analysis.arith.analyzer import Analyzer
from tirc.analysis.arith.bound import Bound
from tirc.analysis.arith.conditions import is_pure
from tirc.ir import expr as E
from tirc.ir import stmt as S
from tirc.ir.buffer import BufferRegion, Range
from tirc.ir.function import PrimFunc
from tirc.ir.functor import Mutator
from tirc.ir.structural import structural_equal
from tirc.transform.parsed_regions import parsed_region
from tirc.transform.pass_base import Dialect, FunctionPass

NO_OP = S.Evaluate(E.IntImm(0))
THREAD_KEYS = ("thread_extent", "virtual_thread")


def is_no_op(stmt: S.Stmt) -> bool:
    return isinstance(stmt, S.Evaluate) and isinstance(stmt.value, (E.IntImm, E.FloatImm))


def without_no_ops(node: S.SeqStmt, stmts: list[S.Stmt]) -> S.Stmt:
    """`node` with its statements rewritten to `stmts`, nested sequences flattened and no-ops
    dropped (NO_OP if nothing is left); `node` itself when nothing changed."""
    if all(new is old for new, old in zip(stmts, node.stmts, strict=False)) and not any(
        isinstance(stmt, S.SeqStmt) for stmt in stmts
    ):
        return node
    kept = [stmt for stmt in stmts if not is_no_op(stmt)]
    return S.seq(*kept) if kept else NO_OP


class StatementSimplifier(Mutator):
    """Simplifies each expression under what is known where it stands; remove-no-op walks
    programs the same way."""

    @classmethod
    def over(cls, func: PrimFunc, boolean_branches: bool = False, and_of_ors: bool = False) -> Self:
        """A simplifier for `func`'s body, knowing its buffer parameters' shapes non-negative;
        with `boolean_branches`, each side of an `and` / `or` knows the other; with
        `and_of_ors`, conditions become a simplified `and` of `or`s."""
        simplifier = cls()
        context = simplifier.analyzer.context
        simplifier.analyzer.context = dataclasses.replace(
            context, boolean_branches=boolean_branches, and_of_ors=and_of_ors
        )
        for _, buffer in func.buffer_map:
            for extent in buffer.shape:
                simplifier.analyzer.mark_global_non_negative(extent)
        return simplifier

    def __init__(self) -> None:
        self.analyzer = Analyzer(remember=True)  # an unrolled body repeats its expressions

    def bound(self, var: E.Var, domain: Range) -> Bound | None:
        previous = self.analyzer.ranges.get(var)
        self.analyzer.bind(var, domain)
        return previous

    def restore(self, var: E.Var, previous: Bound | None) -> None:
        if previous is None:
            self.analyzer.ranges.pop(var, None)
        else:
            self.analyzer.ranges[var] = previous

    def visit_PrimExpr(self, node: E.PrimExpr) -> E.PrimExpr:
        return self.analyzer.simplify(node)

    def visit_IterVar(self, node: S.IterVar) -> S.IterVar:
        return node  # a definition, not a use

    def visit_BufferRegion(self, node: BufferRegion) -> BufferRegion:
        return parsed_region(self.generic_visit(node))

    def visit_Bind(self, node: S.Bind) -> S.Stmt:
        value = self.visit(node.value)
        if is_pure(value):
            self.analyzer.bind_value(node.var, value)  # for the rest of the enclosing scope
        return node if value is node.value else dataclasses.replace(node, value=value)

    def visit_AssertStmt(self, node: S.AssertStmt) -> S.Stmt:
        condition = self.visit(node.condition)
        self.analyzer.assume(condition)  # for the rest of the enclosing scope
        return (
            node if condition is node.condition else dataclasses.replace(node, condition=condition)
        )

    def visit_AttrStmt(self, node: S.AttrStmt) -> S.Stmt:
        value = self.visit(node.value)
        previous: Bound | None = None
        thread = node.node if node.key in THREAD_KEYS else None
        if isinstance(thread, S.IterVar):
            previous = self.bound(thread.var, Range(E.IntImm(0, value.dtype), value))
        with self.scope():
            body = self.visit(node.body)
        if isinstance(thread, S.IterVar):
            self.restore(thread.var, previous)
        if value is node.value and body is node.body:
            return node
        return dataclasses.replace(node, value=value, body=body)

    def visit_For(self, node: S.For) -> S.Stmt:
        low, extent = self.visit(node.min), self.visit(node.extent)
        previous = self.bound(node.loop_var, Range(low, extent))
        var, dtype = node.loop_var, extent.dtype
        forget = self.analyzer.assume(
            E.And(
                E.And(E.GE(var, low), E.LT(var, E.Add(low, extent))),
                E.GT(extent, E.IntImm(0, dtype)),
            )
        )
        body = self.visit(node.body)
        forget()
        self.restore(node.loop_var, previous)
        result = node
        if low is not node.min or extent is not node.extent or body is not node.body:
            result = dataclasses.replace(node, min=low, extent=extent, body=body)
        if E.is_const_int(result.extent, 0) or is_no_op(result.body):
            return NO_OP
        return result

    def visit_SBlock(self, node: S.SBlock) -> S.SBlock:
        saved = [
            (iv.var, self.bound(iv.var, iv.dom)) for iv in node.iter_vars if iv.dom is not None
        ]
        with self.scope():
            result: S.SBlock = self.generic_visit(node)
        for var, previous in reversed(saved):
            self.restore(var, previous)
        return result

    def visit_IfThenElse(self, node: S.IfThenElse) -> S.Stmt:
        condition = self.visit(node.condition)
        if isinstance(condition, E.IntImm):
            taken = node.then_case if condition.value else node.else_case
            return NO_OP if taken is None else self.visit(taken)
        known = condition
        if isinstance(known, E.Call) and known.op == "likely":
            known = known.expr_arg(0)
        then_case = self.in_scope(node.then_case, known)
        else_case = None
        if node.else_case is not None:
            else_case = self.in_scope(node.else_case, E.Not(known))
            if is_no_op(else_case):
                else_case = None
        if (condition, then_case, else_case) == (node.condition, node.then_case, node.else_case):
            return node
        return dataclasses.replace(
            node, condition=condition, then_case=then_case, else_case=else_case
        )

    def in_scope(self, stmt: S.Stmt, condition: E.PrimExpr) -> S.Stmt:
        forget = self.analyzer.assume(condition)
        result: S.Stmt = self.visit(stmt)
        forget()
        return result

    def visit_SeqStmt(self, node: S.SeqStmt) -> S.Stmt:
        # what a binding or an assert adds holds for the statements after it, to the end of
        # the sequence
        with self.scope():
            stmts = [self.visit(stmt) for stmt in node.stmts]
        return without_no_ops(node, stmts)

    def visit_While(self, node: S.While) -> S.Stmt:
        with self.scope():  # an assert in a body that may never run proves nothing after it
            result: S.Stmt = self.generic_visit(node)
        return result

    @contextmanager
    def scope(self) -> Iterator[None]:
        """What is learnt inside is forgotten after."""
        context, ranges = self.analyzer.context, dict(self.analyzer.ranges)
        try:
            yield
        finally:
            self.analyzer.context, self.analyzer.ranges = context, ranges

    def visit_BufferStore(self, node: S.BufferStore) -> S.Stmt:
        store: S.BufferStore = self.generic_visit(node)
        load = store.value
        if (
            isinstance(load, E.BufferLoad)
            and load.buffer is store.buffer
            and store.predicate is None
            and getattr(load, "predicate", None) is None
            and structural_equal(load.indices, store.indices)
        ):
            return NO_OP  # a store of what is already there
        return store


@dataclass(frozen=True)
class Simplify(FunctionPass):
    name = "simplify"
    expects = Dialect.S_TIR
    leaves = Dialect.S_TIR
    # each side of an `and` / `or` simplified knowing the other, as TVM's option of that name
    apply_constraints_to_boolean_branches: bool = False
    # conditions as a simplified `and` of `or`s, as TVM's option of that name
    convert_boolean_to_and_of_ors: bool = False

    def run_function(self, func: PrimFunc) -> PrimFunc:
        simplifier = StatementSimplifier.over(
            func, self.apply_constraints_to_boolean_branches, self.convert_boolean_to_and_of_ors
        )
        body = simplifier.visit(func.body)
        return func if body is func.body else dataclasses.replace(func, body=body)

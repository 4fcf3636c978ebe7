"""simplify: every expression through the Analyzer, with loop and block variables bounded by
their ranges; conditions it decides pick their branch.

Expects any dialect; leaves the same one:

    for i in range(4):                   for i in range(4):
        if i < 8:                  ->        A[i] = B[i]
            A[i + 0] = B[i // 1]
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from tirc.analysis.arith.analyzer import Analyzer
from tirc.analysis.arith.bound import Bound
from tirc.ir import expr as E
from tirc.ir import stmt as S
from tirc.ir.buffer import BufferRegion, Range
from tirc.ir.function import PrimFunc
from tirc.ir.functor import Mutator
from tirc.transform.parsed_regions import parsed_region
from tirc.transform.pass_base import Dialect, FunctionPass

NO_OP = S.Evaluate(E.IntImm(0))


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


class _Simplifier(Mutator):
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
        return node if value is node.value else dataclasses.replace(node, value=value)

    def visit_AttrStmt(self, node: S.AttrStmt) -> S.Stmt:
        value, body = self.visit(node.value), self.visit(node.body)
        if value is node.value and body is node.body:
            return node
        return dataclasses.replace(node, value=value, body=body)

    def visit_For(self, node: S.For) -> S.Stmt:
        low, extent = self.visit(node.min), self.visit(node.extent)
        previous = self.bound(node.loop_var, Range(low, extent))
        body = self.visit(node.body)
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
        result: S.SBlock = self.generic_visit(node)
        for var, previous in reversed(saved):
            self.restore(var, previous)
        return result

    def visit_IfThenElse(self, node: S.IfThenElse) -> S.Stmt:
        condition = self.visit(node.condition)
        if isinstance(condition, E.IntImm):
            taken = node.then_case if condition.value else node.else_case
            return NO_OP if taken is None else self.visit(taken)
        result: S.IfThenElse = self.generic_visit(node)
        if result.else_case is not None and is_no_op(result.else_case):
            result = dataclasses.replace(result, else_case=None)
        return result

    def visit_SeqStmt(self, node: S.SeqStmt) -> S.Stmt:
        return without_no_ops(node, [self.visit(stmt) for stmt in node.stmts])


@dataclass(frozen=True)
class Simplify(FunctionPass):
    name = "simplify"
    expects = Dialect.S_TIR
    leaves = Dialect.S_TIR

    def run_function(self, func: PrimFunc) -> PrimFunc:
        body = _Simplifier().visit(func.body)
        return func if body is func.body else dataclasses.replace(func, body=body)

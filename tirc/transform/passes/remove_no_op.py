"""remove-no-op: statements that do nothing are dropped: constant `T.evaluate`s, loops and
`if`s whose bodies do nothing, loops that never run (`range(i - 20)` for i below 16),
attributes around nothing, and stores of a value to the place it was loaded from, the indices
compared under what is known there (an `if`'s condition, a binding's value), as TVM 0.27's
RemoveNoOp does:

    if i != 0:                          if i != 0:
        A[i] = A[i - 1]          ->         A[i] = A[i - 1]
    else:
        A[i] = A[0]

Expects any dialect; leaves the same one:

    for i in range(4):                  A[0] = B[0]
        T.evaluate(0)            ->
    A[0] = B[0]
    A[1] = A[1]
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from tirc.ir import expr as E
from tirc.ir import stmt as S
from tirc.ir.function import PrimFunc
from tirc.ir.structural import structural_equal
from tirc.transform.pass_base import Dialect, FunctionPass
from tirc.transform.passes.simplify import NO_OP, StatementSimplifier, is_no_op


class _Remover(StatementSimplifier):
    """The simplifier's walk, which keeps what is known in each scope, with its expressions
    left as written."""

    def visit_PrimExpr(self, node: E.PrimExpr) -> E.PrimExpr:
        return node

    def visit_Evaluate(self, node: S.Evaluate) -> S.Stmt:
        return NO_OP if is_no_op(node) else node

    def visit_BufferStore(self, node: S.BufferStore) -> S.Stmt:
        value = node.value
        if (
            isinstance(value, E.BufferLoad)
            and value.buffer is node.buffer
            and value.predicate is None
            and node.predicate is None
            and len(value.indices) == len(node.indices)
            and all(
                self.is_same_index(a, b) for a, b in zip(value.indices, node.indices, strict=True)
            )
        ):
            return NO_OP
        return node

    def is_same_index(self, a: E.PrimExpr, b: E.PrimExpr) -> bool:
        if structural_equal(a, b):
            return True
        if not (a.dtype.is_integer and a.dtype.is_scalar and a.dtype == b.dtype):
            return False
        return self.analyzer.can_prove(E.EQ(a, b))

    def visit_For(self, node: S.For) -> S.Stmt:
        result = super().visit_For(node)
        if isinstance(result, S.For) and self.analyzer.can_prove(
            E.LE(result.extent, E.IntImm(0, result.extent.dtype))
        ):
            return NO_OP  # it never runs
        return result

    def visit_AttrStmt(self, node: S.AttrStmt) -> S.Stmt:
        attr = super().visit_AttrStmt(node)
        return NO_OP if isinstance(attr, S.AttrStmt) and is_no_op(attr.body) else attr

    def visit_IfThenElse(self, node: S.IfThenElse) -> S.Stmt:
        branch = super().visit_IfThenElse(node)
        if not isinstance(branch, S.IfThenElse):
            return branch
        other = branch.else_case
        if other is not None and is_no_op(other):
            branch = dataclasses.replace(branch, else_case=None)
            other = None
        if is_no_op(branch.then_case):
            if other is None:
                return NO_OP
            return S.IfThenElse(E.Not(branch.condition), other, span=branch.span)
        return branch


@dataclass(frozen=True)
class RemoveNoOp(FunctionPass):
    name = "remove-no-op"
    expects = Dialect.S_TIR
    leaves = Dialect.S_TIR

    def run_function(self, func: PrimFunc) -> PrimFunc:
        body = _Remover.over(func).visit(func.body)
        return func if body is func.body else dataclasses.replace(func, body=body)

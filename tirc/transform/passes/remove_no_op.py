"""remove-no-op: statements that do nothing are dropped: constant `T.evaluate`s, loops and
`if`s whose bodies do nothing, attributes around nothing, and stores of a value to the place
it was loaded from.

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
from tirc.ir.functor import Mutator
from tirc.ir.structural import structural_equal
from tirc.transform.pass_base import Dialect, FunctionPass
from tirc.transform.passes.simplify import NO_OP, is_no_op, without_no_ops


class _Remover(Mutator):
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
                structural_equal(a, b) for a, b in zip(value.indices, node.indices, strict=False)
            )
        ):
            return NO_OP
        return node

    def visit_For(self, node: S.For) -> S.Stmt:
        loop: S.For = self.generic_visit(node)
        return NO_OP if is_no_op(loop.body) or E.is_const_int(loop.extent, 0) else loop

    def visit_While(self, node: S.While) -> S.Stmt:
        return self.generic_visit(node)

    def visit_AttrStmt(self, node: S.AttrStmt) -> S.Stmt:
        attr: S.AttrStmt = self.generic_visit(node)
        return NO_OP if is_no_op(attr.body) else attr

    def visit_IfThenElse(self, node: S.IfThenElse) -> S.Stmt:
        branch: S.IfThenElse = self.generic_visit(node)
        other = branch.else_case
        if other is not None and is_no_op(other):
            branch = dataclasses.replace(branch, else_case=None)
            other = None
        if is_no_op(branch.then_case):
            if other is None:
                return NO_OP
            return S.IfThenElse(E.Not(branch.condition), other, span=branch.span)
        return branch

    def visit_SeqStmt(self, node: S.SeqStmt) -> S.Stmt:
        return without_no_ops(node, [self.visit(stmt) for stmt in node.stmts])


@dataclass(frozen=True)
class RemoveNoOp(FunctionPass):
    name = "remove-no-op"
    expects = Dialect.S_TIR
    leaves = Dialect.S_TIR

    def run_function(self, func: PrimFunc) -> PrimFunc:
        body = _Remover().visit(func.body)
        return func if body is func.body else dataclasses.replace(func, body=body)

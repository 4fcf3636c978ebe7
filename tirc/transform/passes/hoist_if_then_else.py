"""hoist-if-then-else: a loop whose whole body is an `if` on a condition that does not change
across the loop becomes an `if` around two loops, so the condition is tested once.

A condition stays where it is when it reads a variable the loop binds or defines, or reads
memory (the loop may write it), or calls anything impure. Loops are visited innermost first,
so a condition climbs as far as it stays invariant. Thread-bound loops are left alone (their
threads would diverge around barriers), and so is a condition on a variable an attribute
binds (`T.launch_thread`), as TVM 0.27 does unless `support_block_scope_hoisting`. The
condition is kept as written (TVM 0.27 also normalizes `i > 2` to `2 < i`).

Expects tir; leaves tir:

    for i in range(8):                     for i in range(8):
        for j in range(8):                     if i > 2:
            if i > 2:               ->             for j in range(8):
                B[i * 8 + j] = A[j]                    B[i * 8 + j] = A[j]
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from tirc.ir import expr as E
from tirc.ir import intrinsics
from tirc.ir import stmt as S
from tirc.ir.function import PrimFunc
from tirc.ir.functor import Mutator, uses_var, walk
from tirc.transform.fresh_copy import fresh_copy
from tirc.transform.pass_base import Dialect, FunctionPass


def is_invariant(condition: E.PrimExpr, var: E.Var) -> bool:
    """Whether `condition` has the same value in every iteration of a loop over `var`."""
    found = True

    def visit(node: object) -> None:
        nonlocal found
        if node is var or isinstance(node, E.BufferLoad | E.Let):
            found = False
        elif isinstance(node, E.Call):
            intrinsic = intrinsics.lookup(node.op)
            if intrinsic is None or intrinsic.effect is not intrinsics.Effect.PURE:
                found = False

    walk(condition, visit)
    return found


class _Hoister(Mutator):
    def __init__(self, block_scope: bool) -> None:
        self.block_scope = block_scope
        self.block_vars: set[E.Var] = set()  # bound by an attribute around here

    def visit_AttrStmt(self, node: S.AttrStmt) -> S.Stmt:
        var = node.node.var if isinstance(node.node, S.IterVar) else node.node
        if not isinstance(var, E.Var) or var in self.block_vars:
            return self.generic_visit(node)
        self.block_vars.add(var)
        try:
            result: S.Stmt = self.generic_visit(node)
        finally:
            self.block_vars.discard(var)
        return result

    def visit_For(self, node: S.For) -> S.Stmt:
        loop: S.For = self.generic_visit(node)
        branch = loop.body
        if loop.kind is S.ForKind.THREAD_BINDING or not isinstance(branch, S.IfThenElse):
            return loop
        if not is_invariant(branch.condition, loop.loop_var):
            return loop
        if not self.block_scope and uses_var(branch.condition, self.block_vars):
            return loop
        then = self.visit_For(dataclasses.replace(loop, body=branch.then_case))
        other = None
        if branch.else_case is not None:
            # the else loop is a copy: no variable or buffer is defined twice
            other = self.visit_For(fresh_copy(dataclasses.replace(loop, body=branch.else_case), {}))
        return dataclasses.replace(branch, then_case=then, else_case=other)


@dataclass(frozen=True)
class HoistIfThenElse(FunctionPass):
    name = "hoist-if-then-else"
    expects = Dialect.TIR
    leaves = Dialect.TIR
    support_block_scope_hoisting: bool = False

    def run_function(self, func: PrimFunc) -> PrimFunc:
        body = _Hoister(self.support_block_scope_hoisting).visit(func.body)
        return func if body is func.body else dataclasses.replace(func, body=body)

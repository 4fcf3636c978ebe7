"""canonicalize-loop: every loop starts at 0 and steps by 1; the old loop variable becomes
`var * step + min` in the body.

Expects any dialect and a step it can prove positive (as TVM 0.27, it refuses `-3` or a
step variable); leaves the same one, with `min == 0` and no `step` on every loop
(thread-bound loops included). The new extent is `ceildiv(extent, step)`, simplified:

    for k in range(3, 20, 4):          for k in range(5):
        B[k] = 0.0               ->        B[k * 4 + 3] = 0.0
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from tirc.analysis.arith.analyzer import Analyzer
from tirc.diagnostics import DiagnosticError
from tirc.ir import expr as E
from tirc.ir import stmt as S
from tirc.ir.buffer import Range
from tirc.ir.function import PrimFunc
from tirc.ir.functor import Mutator
from tirc.ir.substitute import substitute
from tirc.transform.pass_base import Dialect, FunctionPass


def _is_one(expr: E.PrimExpr | None) -> bool:
    return expr is None or E.is_const_int(expr, 1)


class _Canonicalizer(Mutator):
    def visit_For(self, node: S.For) -> S.Stmt:
        loop: S.For = self.generic_visit(node)
        if E.is_const_int(loop.min, 0) and _is_one(loop.step):
            return dataclasses.replace(loop, step=None) if loop.step is not None else loop
        var, dtype = loop.loop_var, loop.loop_var.dtype
        value: E.PrimExpr = var
        extent = loop.extent
        if not _is_one(loop.step):
            step = loop.step
            assert step is not None
            if not Analyzer().can_prove(E.GT(step, E.IntImm(0, step.dtype))):
                raise DiagnosticError.at(
                    loop.span,
                    f"the step of loop {var.name} may not be positive: the loop cannot be "
                    "canonicalized",
                )
            value = E.Mul(var, step)
            extent = Analyzer().simplify(
                E.FloorDiv(E.Sub(E.Add(extent, step), E.IntImm(1, dtype)), step)
            )
        if not E.is_const_int(loop.min, 0):
            value = E.Add(value, loop.min)
        binding = loop.thread_binding
        if binding is not None and binding.dom is not None:
            binding = dataclasses.replace(binding, dom=Range(E.IntImm(0, dtype), extent))
        return dataclasses.replace(
            loop,
            min=E.IntImm(0, dtype),
            extent=extent,
            step=None,
            thread_binding=binding,
            body=substitute(loop.body, {var: value}),
        )


@dataclass(frozen=True)
class CanonicalizeLoop(FunctionPass):
    name = "canonicalize-loop"
    expects = Dialect.S_TIR
    leaves = Dialect.S_TIR

    def run_function(self, func: PrimFunc) -> PrimFunc:
        body = _Canonicalizer().visit(func.body)
        return func if body is func.body else dataclasses.replace(func, body=body)

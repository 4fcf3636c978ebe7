"""lower-init-block: a block's reduction init becomes an `if` on its reduce variables.

Expects s-tir; leaves s-tir without `T.init()`:

    with T.sblock("C"):                  with T.sblock("C"):
        vk = T.axis.reduce(K, k)             vk = T.axis.reduce(K, k)
        with T.init():              ->       if vk == 0:
            C[vi] = 0.0                          C[vi] = 0.0
        C[vi] = C[vi] + A[vi, vk]            C[vi] = C[vi] + A[vi, vk]
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from tirc.ir import expr as E
from tirc.ir import stmt as S
from tirc.ir.function import PrimFunc
from tirc.ir.functor import Mutator
from tirc.transform.pass_base import Dialect, FunctionPass


class _InitLowerer(Mutator):
    def visit_SBlock(self, block: S.SBlock) -> S.SBlock:
        block = self.generic_visit(block)
        if block.init is None:
            return block
        condition: E.PrimExpr | None = None
        for iter_var in block.iter_vars:
            if iter_var.iter_type is not S.IterType.REDUCE or iter_var.dom is None:
                continue
            at_min = E.EQ(iter_var.var, iter_var.dom.min)
            condition = at_min if condition is None else E.And(condition, at_min)
        init = block.init if condition is None else S.IfThenElse(condition, block.init)
        return dataclasses.replace(block, init=None, body=S.seq(init, block.body))


@dataclass(frozen=True)
class LowerInitBlock(FunctionPass):
    name = "lower-init-block"
    expects = Dialect.S_TIR
    leaves = Dialect.S_TIR

    def run_function(self, func: PrimFunc) -> PrimFunc:
        body = _InitLowerer().visit(func.body)
        return func if body is func.body else dataclasses.replace(func, body=body)

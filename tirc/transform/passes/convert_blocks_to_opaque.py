"""convert-blocks-to-opaque: each block's iteration variables are replaced by their bindings.

Expects s-tir without init (after lower-init-block); leaves opaque blocks, which keep their
predicate, regions, allocations and match_buffers:

    with T.sblock("B"):                      with T.sblock("B"):
        vi = T.axis.spatial(8, i * 2 + j)  ->    B[i * 2 + j] = A[i * 2 + j]
        B[vi] = A[vi]
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from tirc.diagnostics import DiagnosticError
from tirc.ir import expr as E
from tirc.ir import stmt as S
from tirc.ir.function import PrimFunc
from tirc.ir.functor import Mutator
from tirc.ir.substitute import substitute
from tirc.transform.pass_base import Dialect, FunctionPass


class _Opaquer(Mutator):
    def visit_SBlockRealize(self, realize: S.SBlockRealize) -> S.SBlockRealize:
        realize = self.generic_visit(realize)
        block = realize.block
        if block.init is not None:
            raise DiagnosticError.at(
                block.span, f"block '{block.name}' still has an init; run lower-init-block first"
            )
        if not block.iter_vars:
            return realize
        # A binding may have another integer type than its variable (TVM builds
        # `T.axis.spatial(T.int64(16), i)` over an int32 `i`): it is cast, so that the
        # expressions the variable appeared in keep their types.
        mapping = {
            iv.var: value if value.dtype == iv.var.dtype else E.Cast(iv.var.dtype, value)
            for iv, value in zip(block.iter_vars, realize.iter_values, strict=False)
        }
        opaque = substitute(dataclasses.replace(block, iter_vars=()), mapping)
        return dataclasses.replace(realize, iter_values=(), block=opaque)


@dataclass(frozen=True)
class ConvertBlocksToOpaque(FunctionPass):
    name = "convert-blocks-to-opaque"
    expects = Dialect.S_TIR
    leaves = Dialect.OPAQUE_BLOCKS

    def run_function(self, func: PrimFunc) -> PrimFunc:
        body = _Opaquer().visit(func.body)
        return func if body is func.body else dataclasses.replace(func, body=body)

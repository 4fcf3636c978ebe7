"""Dialects: blocks belong to s-tir. A function not marked `s_tir=True` has none; lowering has
turned them into loops. (An s-tir function need not keep its root block: TVM's lowering
leaves the mark on functions it has lowered, and such a function is valid tir.)"""

from __future__ import annotations

from tirc.analysis.well_formed.checker import Checker
from tirc.diagnostics import Diagnostic
from tirc.ir.function import PrimFunc
from tirc.ir.stmt import SBlock


class DialectChecker(Checker):
    def visit_PrimFunc(self, func: PrimFunc) -> None:
        if not func.is_s_tir:
            self.visit(func.body)

    def visit_SBlock(self, block: SBlock) -> None:
        self.error(
            f"block '{block.name}' in a function that is not s_tir; "
            "mark it @T.prim_func(s_tir=True) or lower its blocks",
            block,
        )


def check_dialect(func: PrimFunc) -> list[Diagnostic]:
    checker = DialectChecker()
    checker.visit(func)
    return checker.diagnostics

"""No aliasing: two distinct buffers that own memory (parameters, `T.alloc_buffer`, a block's
`alloc_buffers`) never share a data handle. Views of memory (`match_buffer`,
`T.decl_buffer(data=...)`) are the only sanctioned way for two buffers to see the same bytes,
which is what lets every analysis treat distinct buffers as disjoint.
"""

from __future__ import annotations

from tirc.analysis.well_formed.checker import Checker
from tirc.diagnostics import Diagnostic, Note, Span
from tirc.ir.buffer import Buffer
from tirc.ir.expr import Var
from tirc.ir.function import PrimFunc
from tirc.ir.stmt import AllocBuffer, SBlock


class AliasingChecker(Checker):
    def __init__(self) -> None:
        super().__init__()
        self.owners: dict[Var, tuple[Buffer, Span | None]] = {}

    def own(self, buffer: Buffer, site: object) -> None:
        owner = self.owners.get(buffer.data)
        if owner is None:
            self.owners[buffer.data] = (buffer, buffer.span or self.span_of(site))
            return
        first, span = owner
        if first is buffer:
            return  # the same buffer allocated twice: a scoping error, reported there
        self.error(
            f"buffers '{first.name}' and '{buffer.name}' share the data handle "
            f"'{buffer.data.name}'; only match_buffer and decl_buffer(data=...) may alias",
            site,
            Note(f"'{first.name}' is allocated here", span),
        )

    def visit_PrimFunc(self, func: PrimFunc) -> None:
        for _, buffer in func.buffer_map:
            self.own(buffer, func)
        self.visit(func.body)

    def visit_AllocBuffer(self, stmt: AllocBuffer) -> None:
        self.own(stmt.buffer, stmt)

    def visit_SBlock(self, block: SBlock) -> None:
        for buffer in block.alloc_buffers:
            self.own(buffer, block)
        self.generic_visit(block)


def check_aliasing(func: PrimFunc) -> list[Diagnostic]:
    checker = AliasingChecker()
    checker.visit(func)
    return checker.diagnostics

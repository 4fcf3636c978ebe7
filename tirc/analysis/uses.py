"""The variables a statement defines and those it uses: what a kernel outlined from a host
function must be passed (split-host-device), and what the CUDA backends declare."""

from __future__ import annotations

from tirc.ir import expr as E
from tirc.ir import stmt as S
from tirc.ir.buffer import Buffer
from tirc.ir.functor import Visitor


class Uses(Visitor):
    """Variables a statement defines, and those it uses, in order of first use."""

    def __init__(self) -> None:
        self.defined: set[E.Var] = set()
        self.used: dict[E.Var, None] = {}
        self.buffers: dict[E.Var, Buffer] = {}  # data handle -> a buffer over it

    def use(self, var: E.Var) -> None:
        self.used.setdefault(var, None)

    def visit_Var(self, node: E.Var) -> None:
        self.use(node)

    def visit_Buffer(self, node: Buffer) -> None:
        self.use(node.data)
        self.buffers.setdefault(node.data, node)

    def visit_For(self, node: S.For) -> None:
        self.defined.add(node.loop_var)
        self.visit((node.min, node.extent, node.body))

    def visit_Bind(self, node: S.Bind) -> None:
        self.defined.add(node.var)
        self.visit(node.value)

    def visit_Let(self, node: E.Let) -> None:
        self.defined.add(node.var)
        self.visit((node.value, node.body))

    def visit_AttrStmt(self, node: S.AttrStmt) -> None:
        if isinstance(node.node, S.IterVar):
            self.defined.add(node.node.var)
        elif not isinstance(node.node, Buffer):
            self.visit(node.node)
        self.visit((node.value, node.body))

    def visit_CommReducer(self, node: E.CommReducer) -> None:
        self.defined.update(node.lhs + node.rhs)  # the combiner's parameters
        self.visit((node.result, node.identity))

    def visit_AllocBuffer(self, node: S.AllocBuffer) -> None:
        self.defined.add(node.buffer.data)
        self.buffers[node.buffer.data] = node.buffer
        self.visit(node.buffer.shape)

    def visit_DeclBuffer(self, node: S.DeclBuffer) -> None:
        if node.data is not None and node.data is not node.buffer.data:
            self.defined.add(node.buffer.data)
            self.visit(node.data)
        else:
            self.visit_Buffer(node.buffer)

    def visit_BufferStore(self, node: S.BufferStore) -> None:
        self.visit_Buffer(node.buffer)
        self.visit((node.value, node.indices, node.predicate))

    def visit_BufferLoad(self, node: E.BufferLoad) -> None:
        self.visit_Buffer(node.buffer)
        self.visit((node.indices, node.predicate))

    def free(self) -> list[E.Var]:
        return [var for var in self.used if var not in self.defined]


def uses_of(node: object) -> Uses:
    uses = Uses()
    uses.visit(node)
    return uses

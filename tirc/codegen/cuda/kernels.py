"""Where a lowered function's host part ends and its kernels begin.

A kernel is a statement under `T.launch_thread` attributes (or, for device work outside any
launch, a one-thread kernel); its parameters are the variables it uses and does not define.
Global-scope allocations become host allocations passed to kernels; other allocations outside
kernels move into the one kernel that uses them. The CUDA C and NVPTX backends share this.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tirc.diagnostics import DiagnosticError
from tirc.ir import expr as E
from tirc.ir import stmt as S
from tirc.ir.buffer import Buffer
from tirc.ir.function import PrimFunc
from tirc.ir.functor import Visitor
from tirc.ir.structural import structural_equal

LAUNCH_KEYS = ("thread_extent", "virtual_thread")
THREAD_TAGS = tuple(f"{kind}.{axis}" for kind in ("blockIdx", "threadIdx") for axis in "xyz")


@dataclass(frozen=True, slots=True, eq=False)
class KernelLaunch(S.Stmt):
    """A host statement: launch kernel number `index` of the function."""

    index: int


@dataclass(eq=False)
class Kernel:
    name: str
    body: S.Stmt
    dims: dict[str, E.PrimExpr]  # launch extent per thread tag; missing tags are 1
    params: list[E.Var] = field(default_factory=list)  # handles and scalars, in order


@dataclass(eq=False)
class DeviceProgram:
    """A function split for a GPU: host statements with KernelLaunch steps, and kernels."""

    func: PrimFunc
    host: S.Stmt
    kernels: list[Kernel]
    host_allocations: list[Buffer]


def contains_launch(stmt: object) -> bool:
    found = False

    class _Finder(Visitor):
        def visit_AttrStmt(self, node: S.AttrStmt) -> None:
            nonlocal found
            if node.key in LAUNCH_KEYS:
                found = True
            else:
                self.generic_visit(node)

        def visit_PrimExpr(self, node: E.PrimExpr) -> None:
            pass

    _Finder().visit(stmt)
    return found


class _Uses(Visitor):
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


def uses_of(node: object) -> _Uses:
    uses = _Uses()
    uses.visit(node)
    return uses


def split_function(name: str, func: PrimFunc) -> DeviceProgram:
    """The host part and the kernels of a lowered function."""
    splitter = _Splitter(name)
    host = splitter.host(func.body)
    program = DeviceProgram(func, host, splitter.kernels, [])
    single = len(program.kernels) == 1
    for index, kernel in enumerate(program.kernels):
        kernel.name = f"{name}_kernel" if single else f"{name}_kernel_{index}"
    _place_allocations(program, splitter.pending)
    order = _parameter_order(func)
    for kernel in program.kernels:
        kernel.dims = _launch_dims(kernel.body)
        free = uses_of(kernel.body).free()
        kernel.params = sorted(free, key=lambda v: order.get(v, len(order)))
    return program


class _Splitter:
    def __init__(self, name: str) -> None:
        self.name = name
        self.kernels: list[Kernel] = []
        self.pending: list[S.AllocBuffer] = []  # allocations outside kernels

    def host(self, stmt: S.Stmt) -> S.Stmt:
        if isinstance(stmt, S.SeqStmt):
            return S.seq(*(self.host(child) for child in stmt.stmts))
        if isinstance(stmt, S.AllocBuffer):
            self.pending.append(stmt)
            return stmt
        if isinstance(stmt, (S.Bind, S.AssertStmt, S.DeclBuffer)):
            return stmt
        if isinstance(stmt, S.Evaluate) and isinstance(stmt.value, (E.IntImm, E.FloatImm)):
            return stmt
        if not contains_launch(stmt) or (isinstance(stmt, S.AttrStmt) and stmt.key in LAUNCH_KEYS):
            return self.launch(stmt)
        if isinstance(stmt, S.For) and stmt.kind is not S.ForKind.THREAD_BINDING:
            return S.For(
                stmt.loop_var, stmt.min, stmt.extent, S.ForKind.SERIAL, self.host(stmt.body)
            )
        if isinstance(stmt, S.IfThenElse):
            otherwise = self.host(stmt.else_case) if stmt.else_case is not None else None
            return S.IfThenElse(stmt.condition, self.host(stmt.then_case), otherwise)
        if isinstance(stmt, S.AttrStmt):
            return S.AttrStmt(stmt.node, stmt.key, stmt.value, self.host(stmt.body))
        raise DiagnosticError.at(
            stmt.span, f"CUDA codegen: a {type(stmt).__name__} around kernel launches"
        )

    def launch(self, body: S.Stmt) -> S.Stmt:
        index = len(self.kernels)
        self.kernels.append(Kernel("", body, {}))
        return KernelLaunch(index)


def _place_allocations(program: DeviceProgram, pending: list[S.AllocBuffer]) -> None:
    """Global allocations go to the host; others into the single kernel that uses them (and
    to the host, as global memory, when kernels share them: their values outlive a kernel)."""
    users: dict[E.Var, list[Kernel]] = {}
    for kernel in program.kernels:
        for var in uses_of(kernel.body).free():
            users.setdefault(var, []).append(kernel)
    for alloc in pending:
        buffer = alloc.buffer
        kernels = users.get(buffer.data, [])
        if buffer.scope != "global" and len(kernels) == 1:
            kernels[0].body = S.seq(alloc, kernels[0].body)
        else:
            program.host_allocations.append(buffer)


def _launch_dims(body: S.Stmt) -> dict[str, E.PrimExpr]:
    """Each thread tag's extent; where a kernel binds one tag at several extents, the
    largest (constant) one, and the smaller bindings are guarded by the emitters."""
    extents: dict[str, list[E.PrimExpr]] = {}

    class _Collector(Visitor):
        def visit_AttrStmt(self, node: S.AttrStmt) -> None:
            if node.key == "thread_extent" and isinstance(node.node, S.IterVar):
                extents.setdefault(node.node.thread_tag, []).append(node.value)
            self.visit(node.body)

        def visit_PrimExpr(self, node: E.PrimExpr) -> None:
            pass

    _Collector().visit(body)
    dims: dict[str, E.PrimExpr] = {}
    for tag, values in extents.items():
        if tag not in THREAD_TAGS:
            raise DiagnosticError.at(values[0].span, f"CUDA codegen: unknown thread tag '{tag}'")
        first = values[0]
        if all(structural_equal(v, first) for v in values):
            dims[tag] = first
        elif all(isinstance(v, E.IntImm) for v in values):
            dims[tag] = max(values, key=lambda v: v.value)  # type: ignore[attr-defined]
        else:
            dims[tag] = _max_of(values)
    return dims


def _max_of(values: list[E.PrimExpr]) -> E.PrimExpr:
    result = values[0]
    for value in values[1:]:
        if value.dtype != result.dtype:  # type: ignore[attr-defined]
            value = E.Cast(result.dtype, value)  # type: ignore[attr-defined]
        result = E.Max(result, value)
    return result


def _parameter_order(func: PrimFunc) -> dict[E.Var, int]:
    """Kernel parameters follow the function's: buffers' data handles and scalars first."""
    order: dict[E.Var, int] = {}
    for param in func.params:
        buffer = func.buffer_of(param)
        order.setdefault(buffer.data if buffer is not None else param, len(order))
    return order

"""split-host-device: each function's device work becomes kernel functions of the module, and
the function itself the host code that launches them, as TVM 0.27's SplitHostDevice splits.

Expects flat tir (the end of the cuda pipeline); leaves flat tir. A kernel is a statement under
`T.launch_thread` (or, for device work outside any launch, a one-thread kernel). It becomes a
function `f_kernel` (`f_kernel_0`, `f_kernel_1`, ... when f has several) marked
`"tirc.kernel": True` (with f's `"tirx.noalias"` and `"cluster_dims"`, tirc.ir.cluster),
whose parameters are the variables it uses and does not define (data handles first, in the
order of f's parameters, then scalars) and which declares, at its top,
each buffer it reads or writes over those handles; the launches stay inside it, so its grid
and block follow from its own `T.launch_thread` extents. The host calls it with
`T.call_extern("int32", "f_kernel", args...)`, one argument per kernel parameter, which the
interpreter and the CUDA backends read as a launch. Host code is what computes launch
arguments: Bind, assert, DeclBuffer, loops and conditions around launches. Global-scope
allocations stay on the host (device memory the kernels share); other allocations outside
kernels move into the one kernel that uses them, or stay on the host when several do.

    @T.prim_func                                  @T.prim_func
    def f(A: T.Buffer((n,)), B: ..., n: T.int32):  def f(A: T.Buffer((n,)), B: ..., n: T.int32):
        bx = T.launch_thread("blockIdx.x", n)         T.call_extern("int32", "f_kernel", A.data,
        B[bx] = A[bx]                         ->                     B.data, n)
                                                  @T.prim_func
                                                  def f_kernel(A: T.handle("float32", "global"),
                                                               B: ..., n: T.int32):
                                                      T.func_attr({"tirc.kernel": True})
                                                      A_1 = T.decl_buffer((n,), data=A)
                                                      B_1 = T.decl_buffer((n,), data=B)
                                                      bx = T.launch_thread("blockIdx.x", n)
                                                      B_1[bx] = A_1[bx]
"""

from __future__ import annotations

from collections.abc import Container
from dataclasses import dataclass

from tirc.analysis.uses import uses_of
from tirc.diagnostics import DiagnosticError
from tirc.ir import dtype as dt
from tirc.ir import expr as E
from tirc.ir import stmt as S
from tirc.ir.abi import (
    EXTERN_CALL,
    KERNEL_ATTR,
    LAUNCH_KEYS,
    is_kernel,
    launched_kernel,
    layout_vars,
)
from tirc.ir.buffer import Buffer
from tirc.ir.cluster import CLUSTER_ATTR
from tirc.ir.function import IRModule, PrimFunc
from tirc.ir.functor import Visitor, walk
from tirc.ir.node import Node
from tirc.ir.substitute import rebind
from tirc.transform.pass_base import Dialect, ModulePass


def contains_launch(stmt: object, kernels: Container[str] = ()) -> bool:
    """Whether `stmt` launches threads, or calls one of `kernels` (split already)."""
    found = False

    class _Finder(Visitor):
        def visit_AttrStmt(self, node: S.AttrStmt) -> None:
            nonlocal found
            if node.key in LAUNCH_KEYS:
                found = True
            else:
                self.generic_visit(node)

        def visit_Evaluate(self, node: S.Evaluate) -> None:
            nonlocal found
            found = found or launched_kernel(node, kernels) is not None

        def visit_PrimExpr(self, node: E.PrimExpr) -> None:
            pass

    _Finder().visit(stmt)
    return found


@dataclass(frozen=True)
class SplitHostDevice(ModulePass):
    name = "split-host-device"
    expects = Dialect.FLAT
    leaves = Dialect.FLAT

    def run(self, module: IRModule) -> IRModule:
        kernel_names = {name for name, func in module.functions if is_kernel(func)}
        taken = set(module.names())
        functions: list[tuple[str, PrimFunc]] = []
        changed = False
        for name, func in module.functions:
            if is_kernel(func):
                functions.append((name, func))
                continue
            host, kernels = split_function(name, func, kernel_names, taken)
            functions.append((name, host))
            functions += kernels
            changed |= bool(kernels)
        if not changed:
            return module
        return IRModule(tuple(functions), module.attrs, module.is_bare, span=module.span)


def split_function(
    name: str, func: PrimFunc, kernel_names: set[str], taken: set[str]
) -> tuple[PrimFunc, list[tuple[str, PrimFunc]]]:
    """The host function and its kernels; `func` itself when it launches nothing new."""
    splitter = _Splitter(kernel_names)
    host_body = splitter.host(func.body)
    if not splitter.kernels:
        return func, []
    names = _kernel_names(name, len(splitter.kernels), taken)
    moved = _place_allocations(splitter)
    order = _parameter_order(func)
    kernels: list[tuple[str, PrimFunc]] = []
    calls: dict[int, S.Stmt] = {}
    attrs = S.EMPTY_ATTRS.set(KERNEL_ATTR, True)
    for key in ("tirx.noalias", CLUSTER_ATTR):  # each kernel runs in the function's clusters
        if key in func.attrs:
            attrs = attrs.set(key, func.attrs.get(key))
    for index, (kernel_name, body) in enumerate(zip(names, splitter.kernels, strict=True)):
        body, outer = _declare_outer_buffers(body)
        free = list(
            dict.fromkeys(uses_of(body).free() + [v for b in outer for v in layout_vars(b)])
        )
        args = sorted(free, key=lambda v: order.get(v, len(order)))
        # the kernel's own parameters: a function binds its variables, shares none
        fresh = {var: E.Var(var.name, var.dtype, var.pointer, var.is_size_var) for var in args}
        kernel = PrimFunc(
            tuple(fresh.values()),
            (),
            rebind(body, fresh),
            attrs=attrs,
            is_s_tir=func.is_s_tir,
            span=func.span,  # where its errors point: the function it was split from
        )
        kernels.append((kernel_name, kernel))
        launch = E.Call(dt.INT32, EXTERN_CALL, (E.StringImm(kernel_name), *args))
        calls[index] = S.Evaluate(launch, span=body.span)
    host_body = _LaunchFiller(calls, moved).fill(host_body) or S.Evaluate(E.IntImm(0))
    host = PrimFunc(
        func.params,
        func.buffer_map,
        host_body,
        func.ret_type,
        func.attrs,
        func.is_s_tir,
        func.is_private,
        span=func.span,
    )
    return host, kernels


def _kernel_names(name: str, count: int, taken: set[str]) -> list[str]:
    wanted = [f"{name}_kernel"] if count == 1 else [f"{name}_kernel_{i}" for i in range(count)]
    names = []
    for base in wanted:
        candidate, suffix = base, 1
        while candidate in taken:
            candidate, suffix = f"{base}_{suffix}", suffix + 1
        taken.add(candidate)
        names.append(candidate)
    return names


@dataclass(frozen=True, slots=True, eq=False)
class _Launch(S.Stmt):
    """A placeholder, while splitting, for the launch of kernel number `index`."""

    index: int


class _Splitter:
    def __init__(self, kernel_names: set[str]) -> None:
        self.kernel_names = kernel_names
        self.kernels: list[S.Stmt] = []
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
        if launched_kernel(stmt, self.kernel_names) is not None:
            return stmt  # split already
        if not contains_launch(stmt, self.kernel_names) or (
            isinstance(stmt, S.AttrStmt) and stmt.key in LAUNCH_KEYS
        ):
            return self.launch(stmt)
        if isinstance(stmt, S.For) and stmt.kind is not S.ForKind.THREAD_BINDING:
            body = self.host(stmt.body)
            return S.For(stmt.loop_var, stmt.min, stmt.extent, S.ForKind.SERIAL, body)
        if isinstance(stmt, S.IfThenElse):
            otherwise = self.host(stmt.else_case) if stmt.else_case is not None else None
            return S.IfThenElse(stmt.condition, self.host(stmt.then_case), otherwise)
        if isinstance(stmt, S.AttrStmt):
            return S.AttrStmt(stmt.node, stmt.key, stmt.value, self.host(stmt.body))
        raise DiagnosticError.at(
            stmt.span, f"split-host-device: a {type(stmt).__name__} around kernel launches"
        )

    def launch(self, body: S.Stmt) -> S.Stmt:
        self.kernels.append(body)
        return _Launch(len(self.kernels) - 1)


def _place_allocations(splitter: _Splitter) -> set[S.AllocBuffer]:
    """Global allocations stay on the host; others move into the single kernel that uses
    them (and stay on the host, as device memory, when kernels share them: their values
    outlive a kernel)."""
    users: dict[E.Var, list[int]] = {}
    for index, body in enumerate(splitter.kernels):
        for var in uses_of(body).free():
            users.setdefault(var, []).append(index)
    moved: set[S.AllocBuffer] = set()
    for alloc in splitter.pending:
        buffer = alloc.buffer
        kernels = users.get(buffer.data, [])
        if buffer.scope != "global" and len(kernels) == 1:
            splitter.kernels[kernels[0]] = S.seq(alloc, splitter.kernels[kernels[0]])
            moved.add(alloc)
    return moved


def _declare_outer_buffers(body: S.Stmt) -> tuple[S.Stmt, list[Buffer]]:
    """`body` after a DeclBuffer for each buffer it uses but does not declare itself, and
    those buffers."""
    declared: set[Buffer] = set()
    used: dict[Buffer, None] = {}

    def visit(node: Node) -> None:
        if isinstance(node, (S.AllocBuffer, S.DeclBuffer)):
            declared.add(node.buffer)
        elif isinstance(node, Buffer):
            used.setdefault(node, None)

    walk(body, visit)
    outer = [buffer for buffer in used if buffer not in declared]
    if not outer:
        return body, outer
    return S.seq(*(S.DeclBuffer(buffer, buffer.data) for buffer in outer), body), outer


class _LaunchFiller:
    """The host statement with each placeholder replaced by its kernel's call, and the
    allocations moved into kernels removed."""

    def __init__(self, calls: dict[int, S.Stmt], moved: set[S.AllocBuffer]) -> None:
        self.calls = calls
        self.moved = moved

    def fill(self, stmt: S.Stmt) -> S.Stmt | None:
        if isinstance(stmt, _Launch):
            return self.calls[stmt.index]
        if isinstance(stmt, S.AllocBuffer) and stmt in self.moved:
            return None
        if isinstance(stmt, S.SeqStmt):
            kept = [new for new in map(self.fill, stmt.stmts) if new is not None]
            return S.seq(*kept) if kept else None
        if isinstance(stmt, S.For):
            body = self.fill(stmt.body)
            return S.For(stmt.loop_var, stmt.min, stmt.extent, stmt.kind, body) if body else None
        if isinstance(stmt, S.IfThenElse):
            then = self.fill(stmt.then_case) or S.Evaluate(E.IntImm(0))
            otherwise = self.fill(stmt.else_case) if stmt.else_case is not None else None
            return S.IfThenElse(stmt.condition, then, otherwise)
        if isinstance(stmt, S.AttrStmt):
            body = self.fill(stmt.body)
            return S.AttrStmt(stmt.node, stmt.key, stmt.value, body) if body else None
        return stmt


def _parameter_order(func: PrimFunc) -> dict[E.Var, int]:
    """Kernel parameters follow the function's: buffers' data handles and scalars first."""
    order: dict[E.Var, int] = {}
    for param in func.params:
        buffer = func.buffer_of(param)
        order.setdefault(buffer.data if buffer is not None else param, len(order))
    return order

"""The CUDA backends' view of a module split by split-host-device (and given its C signature
by make-c-abi): per host function, its statements with a KernelLaunch where it calls a
kernel, and each kernel with the grid and block its `T.launch_thread` extents ask for.

The backends run no pass: the pipeline leaves this form (Dialect.HOST_DEVICE, which the
driver checks), and `require_split` refuses anything else with the reason.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass

from tirc.analysis.arith.analyzer import Analyzer
from tirc.analysis.uses import Uses, uses_of
from tirc.codegen.abi import ParamKind, function_abi
from tirc.diagnostics import DiagnosticError, Note, Span
from tirc.ir import dtype as dt
from tirc.ir import expr as E
from tirc.ir import stmt as S
from tirc.ir.abi import is_kernel, launched_kernel
from tirc.ir.buffer import Buffer
from tirc.ir.cluster import Dims, cluster_dims, function_span, grid_remainder
from tirc.ir.function import IRModule, PrimFunc
from tirc.ir.functor import Mutator, Visitor, walk
from tirc.ir.node import Node
from tirc.ir.structural import structural_equal
from tirc.ir.substitute import substitute
from tirc.transform.dialects import require_dialect
from tirc.transform.pass_base import Dialect
from tirc.transform.passes.inject_warp_specialization import SCOPE as SPLIT_SCOPE

__all__ = [
    "DeviceProgram",
    "Kernel",
    "KernelLaunch",
    "Uses",
    "device_programs",
    "require_split",
    "uses_of",
]

THREAD_TAGS = tuple(f"{kind}.{axis}" for kind in ("blockIdx", "threadIdx") for axis in "xyz")


@dataclass(frozen=True, slots=True, eq=False)
class KernelLaunch(S.Stmt):
    """A host statement: launch kernel number `index` of the program with `args`."""

    index: int
    args: tuple[E.PrimExpr, ...]


@dataclass(eq=False)
class Kernel:
    name: str
    body: S.Stmt
    dims: dict[str, E.PrimExpr]  # launch extent per thread tag, over params; missing tags are 1
    params: list[E.Var]  # handles and scalars, in order
    cluster: Dims | None = None  # blocks a cluster (tirc.ir.cluster), None: no clusters

    def threads_per_block(self) -> int | None:
        """The block's thread count when its extents are constants, else None."""
        threads = 1
        for axis in "xyz":
            extent = self.dims.get(f"threadIdx.{axis}")
            if extent is None:
                continue
            if not isinstance(extent, E.IntImm):
                return None
            threads *= extent.value
        return threads

    def blocks_per_sm(self) -> int | None:
        """The blocks an SM must hold, said beside the thread count: one for a kernel that
        moves registers between its warpgroups (setmaxnreg), since ptxas needs the registers
        a thread starts with (64K / threads at one block an SM) and otherwise ignores
        setmaxnreg (warning C7508); None for no bound."""
        ops: set[str] = set()
        walk(self.body, lambda node: ops.add(node.op) if isinstance(node, E.Call) else None)
        return 1 if "ptx_setmaxnreg" in ops else None

    def at_launch(self, expr: E.PrimExpr, launch: KernelLaunch) -> E.PrimExpr:
        """`expr`, over the kernel's parameters, in terms of the host's launch arguments."""
        return substitute(expr, dict(zip(self.params, launch.args, strict=True)))


@dataclass(eq=False)
class DeviceProgram:
    """A host function (C signature) with KernelLaunch steps, and the kernels it launches."""

    func: PrimFunc
    host: S.Stmt
    kernels: list[Kernel]
    host_allocations: list[Buffer]  # device memory the launcher allocates at its start


def require_split(module: IRModule) -> IRModule:
    """`module`, when it is split into host and kernel functions with C signatures (what the
    cuda pipeline leaves); else a DiagnosticError at the first thing that is not."""
    require_dialect(
        module,
        Dialect.HOST_DEVICE,
        "the CUDA backend reads a module lowered for cuda",
        Note("lower it with the cuda pipeline, which ends with split-host-device and make-c-abi"),
    )
    return module


def kernel_of(name: str, func: PrimFunc) -> Kernel:
    body = hoist_dynamic_allocations(func.body, frozenset(func.params))
    kernel = Kernel(name, body, _launch_dims(func.body), list(func.params), cluster_dims(func))
    check_whole_warps(kernel)
    check_whole_clusters(kernel, function_span(func))
    check_split_barriers(kernel)
    return kernel


def check_split_barriers(kernel: Kernel) -> None:
    """A located error at a `__syncthreads` inside a warp-specialized split (the attribute
    `warp_specialize_scope` that inject-warp-specialization puts around its producer and
    consumer branches): only one branch's threads reach it, so on the GPU the block would
    hang there. thread-sync gives the consumers a named barrier instead; a pass after it that
    puts a block barrier in a branch (an all-reduce's) is what this catches."""
    found: list[tuple[E.Call, S.AttrStmt]] = []

    class _Find(Visitor):
        split: S.AttrStmt | None = None

        def visit_AttrStmt(self, node: S.AttrStmt) -> None:
            if node.key != SPLIT_SCOPE:
                self.generic_visit(node)
                return
            outer, self.split = self.split, node
            self.generic_visit(node)
            self.split = outer

        def visit_Call(self, node: E.Call) -> None:
            if self.split is not None and node.op == "tvm_storage_sync" and not found:
                scope = node.args[0] if node.args else None
                if not (isinstance(scope, E.StringImm) and scope.value == "warp"):
                    found.append((node, self.split))  # __syncwarp involves one warp only
            self.generic_visit(node)

    _Find().visit(kernel.body)
    if found:
        call, split = found[0]
        raise DiagnosticError.at(
            call.span or split.span,
            f"{kernel.name} has a __syncthreads (T.tvm_storage_sync) inside a warp-specialized "
            "split: only one branch's threads reach it, and the block would hang there on the GPU",
            Note("the split (inject-warp-specialization's)", split.span),
            Note("its consumers synchronize among themselves with T.ptx_bar_sync(1, count)"),
        )


def check_whole_clusters(kernel: Kernel, where: Span | None) -> None:
    """A located error when the grid's extents are constants that no whole number of clusters
    fills (the launcher checks the others when it launches)."""
    if kernel.cluster is None:
        return
    extents = [kernel.dims.get(f"blockIdx.{axis}", E.IntImm(1)) for axis in "xyz"]
    grid = [E.int_value(extent) if isinstance(extent, E.IntImm) else None for extent in extents]
    if any(size is None for size in grid):
        return
    x, y, z = (int(size) for size in grid if size is not None)
    reason = grid_remainder((x, y, z), kernel.cluster)
    if reason is not None:
        axis = next(a for a, s, c in zip("xyz", (x, y, z), kernel.cluster, strict=True) if s % c)
        extent = kernel.dims.get(f"blockIdx.{axis}")
        raise DiagnosticError.at(
            extent.span if extent is not None and extent.span is not None else where,
            f"{kernel.name} runs in clusters of {' x '.join(map(str, kernel.cluster))} blocks, "
            f"but {reason}",
            Note("make each blockIdx extent a multiple of the cluster's"),
        )


# Tensor-core operations that the 32 threads of a warp perform together, each thread holding
# a part of the operands: with fewer threads in a block, part of every fragment is missing.
WARP_WIDE = frozenset(("ptx_mma", "ptx_ldmatrix", "ptx_mma_sp"))
FRAGMENT_OPS = frozenset(
    (
        "tvm_fill_fragment",
        "tvm_load_matrix_sync",
        "tvm_store_matrix_sync",
        "tvm_mma_sync",
        "tvm_bmma_sync",
    )
)


def check_whole_warps(kernel: Kernel) -> None:
    """A located error when the kernel performs a warp-wide tensor-core operation (mma.sync,
    ldmatrix, or a wmma call on fragments) but its blocks have a constant number of threads
    that is not a multiple of 32: such an operation then runs with part of its warp missing,
    and its result is undefined. (wmma calls on ordinary memory run one thread at a time.)"""
    threads = kernel.threads_per_block()
    if threads is None or threads % 32 == 0:
        return  # only the launch knows, or whole warps
    fragments: set[E.Var] = set()
    found: list[E.Call] = []

    def visit(node: Node) -> None:
        if isinstance(node, S.AllocBuffer) and node.buffer.scope.startswith("wmma."):
            fragments.add(node.buffer.data)
        elif isinstance(node, E.Call) and not found:
            if node.op in WARP_WIDE or (
                node.op in FRAGMENT_OPS and node.args and node.args[0] in fragments
            ):
                found.append(node)

    walk(kernel.body, visit)
    if found:
        call = found[0]
        shape = " x ".join(
            str(E.int_value(kernel.dims[f"threadIdx.{axis}"]))
            for axis in "xyz"
            if f"threadIdx.{axis}" in kernel.dims
        )
        raise DiagnosticError.at(
            call.span,
            f"{kernel.name} calls T.{call.op}, which the 32 threads of a warp perform together, "
            f"but its blocks have {threads} threads ({shape}), not a multiple of 32",
            Note("bind the warp's lanes to a thread axis of extent 32 (e.g. threadIdx.x)"),
        )


def allocation_size(buffer: Buffer) -> E.PrimExpr:
    """The number of elements of an allocation, in int64, simplified."""
    size: E.PrimExpr = E.IntImm(1, dt.INT64)
    for extent in buffer.shape:
        value = extent if extent.dtype == dt.INT64 else E.Cast(dt.INT64, extent)
        size = value if E.is_const_int(size, 1) else E.Mul(size, value)
    return Analyzer().simplify(size)


def hoist_dynamic_allocations(body: S.Stmt, params: frozenset[E.Var]) -> S.Stmt:
    """`body` with its per-thread arrays whose size only the launch knows allocated at the
    kernel's start. Such an array is a stack allocation (an alloca) that lives until the
    kernel returns: left in a loop body, every iteration would take new stack, and a long
    loop overflows it (an illegal address on the GPU). Only arrays whose size is a function
    of the kernel's parameters move; the others stay where they are.

        for k in range(K):              alloc A[n]
            alloc A[n]          ->      for k in range(K):
            ...                             ...
    """
    hoisted: list[S.Stmt] = []

    def is_hoistable(stmt: S.Stmt) -> bool:
        if not isinstance(stmt, S.AllocBuffer) or stmt.buffer.scope != "local":
            return False
        size = allocation_size(stmt.buffer)
        if isinstance(size, E.IntImm):
            return False
        used: set[E.Var] = set()
        walk(size, lambda node: used.add(node) if isinstance(node, E.Var) else None)
        return used <= params

    class Hoist(Mutator):
        def visit_SeqStmt(self, node: S.SeqStmt) -> S.Stmt:
            kept: list[S.Stmt] = []
            for stmt in node.stmts:
                if is_hoistable(stmt):
                    hoisted.append(stmt)
                else:
                    kept.append(self.visit(stmt))
            if not kept:
                return S.Evaluate(E.IntImm(0), span=node.span)
            if len(kept) == len(node.stmts) and all(
                a is b for a, b in zip(kept, node.stmts, strict=True)
            ):
                return node
            return S.SeqStmt(tuple(kept), span=node.span) if len(kept) > 1 else kept[0]

    rewritten = Hoist().visit(body)
    if not hoisted:
        return body
    return S.SeqStmt((*hoisted, rewritten), span=body.span)


def module_kernels(module: IRModule) -> list[Kernel]:
    """Every kernel function of a split module, in module order."""
    return [kernel_of(name, func) for name, func in module.functions if is_kernel(func)]


def device_programs(module: IRModule) -> list[tuple[str, DeviceProgram]]:
    """The host functions of a split module, each with the kernels it launches."""
    kernels = {name: func for name, func in module.functions if is_kernel(func)}
    return [
        (name, device_program(func, kernels))
        for name, func in module.functions
        if not is_kernel(func)
    ]


def device_program(func: PrimFunc, kernels: dict[str, PrimFunc]) -> DeviceProgram:
    program = DeviceProgram(func, func.body, [], [])
    indices: dict[str, int] = {}

    def launch(stmt: S.Stmt) -> S.Stmt:
        call = launched_kernel(stmt, kernels)
        if call is None:
            return stmt
        first = call.args[0]
        assert isinstance(first, E.StringImm)  # launched_kernel names the kernel by a string
        name = first.value
        if name not in indices:
            indices[name] = len(program.kernels)
            program.kernels.append(kernel_of(name, kernels[name]))
        kernel = program.kernels[indices[name]]
        args = tuple(call.args[1:])
        if not E.are_exprs(args):
            raise DiagnosticError.at(call.span, f"{name} is launched with a non-expression")
        if len(args) != len(kernel.params):
            raise DiagnosticError.at(
                call.span,
                f"{name} takes {len(kernel.params)} arguments, but the call gives {len(args)}",
            )
        return KernelLaunch(indices[name], args, span=stmt.span)

    program.host = _map_host(func.body, launch)

    def allocation(node: Node) -> None:
        if isinstance(node, S.AllocBuffer):
            program.host_allocations.append(node.buffer)

    walk(func.body, allocation)
    return program


def size_params(programs: list[tuple[str, DeviceProgram]]) -> frozenset[E.Var]:
    """The kernel parameters that some launch passes a shape variable of the host: known
    non-negative, as the shape is."""
    found: set[E.Var] = set()
    for _, program in programs:
        shapes = {p.var for p in function_abi(program.func) if p.kind is ParamKind.SHAPE}

        def visit(node: Node, program: DeviceProgram = program, shapes: set = shapes) -> None:
            if isinstance(node, KernelLaunch):
                kernel = program.kernels[node.index]
                found.update(
                    p for p, a in zip(kernel.params, node.args, strict=True) if a in shapes
                )

        walk(program.host, visit)
    return frozenset(found)


def _map_host(stmt: S.Stmt, launch: Callable[[S.Stmt], S.Stmt]) -> S.Stmt:
    """The host statement with each kernel call replaced by `launch(call)`."""
    if isinstance(stmt, S.SeqStmt):
        return S.SeqStmt(tuple(_map_host(child, launch) for child in stmt.stmts))
    if isinstance(stmt, (S.For, S.AttrStmt)):
        return dataclasses.replace(stmt, body=_map_host(stmt.body, launch))
    if isinstance(stmt, S.IfThenElse):
        otherwise = _map_host(stmt.else_case, launch) if stmt.else_case is not None else None
        return S.IfThenElse(stmt.condition, _map_host(stmt.then_case, launch), otherwise)
    return launch(stmt)


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
            dims[tag] = max(values, key=E.int_value)
        else:
            dims[tag] = _max_of(values)
    return dims


def _max_of(values: list[E.PrimExpr]) -> E.PrimExpr:
    result = values[0]
    for value in values[1:]:
        if value.dtype != result.dtype:
            value = E.Cast(result.dtype, value)
        result = E.Max(result, value)
    return result

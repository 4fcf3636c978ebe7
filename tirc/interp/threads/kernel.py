"""GPU kernels: the outermost thread-bound statement becomes a generator function run once per
thread of every block (see scheduler), and each thread binding inside it reads the thread's
coordinate.

The launch extents of a tag are those of its bindings (the largest, if they differ: a binding
with a smaller extent runs its body only on the threads below it). Memory: shared allocations
are one per block, local ones per thread; local memory allocated before the kernel is copied
into each thread; shared memory allocated before it is the same memory for every block.
"""

from __future__ import annotations

from tirc.diagnostics import DiagnosticError
from tirc.interp.memory.storage import SHARED_SCOPES
from tirc.interp.threads.access import add_terms
from tirc.interp.threads.cluster import launch_cluster
from tirc.interp.threads.compilers import Stmts
from tirc.interp.threads.context import Code, KernelState
from tirc.ir.buffer import Buffer
from tirc.ir.cluster import BARRIER_OPS, MAP_SHARED, MULTICAST, cluster_calls
from tirc.ir.expr import PrimExpr, Var
from tirc.ir.functor import walk
from tirc.ir.node import Node
from tirc.ir.stmt import AttrStmt, For, ForKind, IterVar, Stmt

COORDINATES = {
    "blockIdx.x": "_bx",
    "blockIdx.y": "_by",
    "blockIdx.z": "_bz",
    "threadIdx.x": "_tx",
    "threadIdx.y": "_ty",
    "threadIdx.z": "_tz",
}
GRID = ("blockIdx.x", "blockIdx.y", "blockIdx.z")
BLOCK = ("threadIdx.x", "threadIdx.y", "threadIdx.z")


def compile_launch(compiler: Stmts, stmt: AttrStmt) -> None:
    """`T.launch_thread` (an AttrStmt "thread_extent" over an IterVar)."""
    assert isinstance(stmt.node, IterVar)
    _thread_binding(
        compiler, stmt, stmt.node.var, stmt.node.thread_tag, None, stmt.value, stmt.body
    )


def compile_thread_loop(compiler: Stmts, stmt: For) -> None:
    """`for tx in T.thread_binding(...)` in a tir (not s-tir) function."""
    assert stmt.thread_binding is not None
    tag = stmt.thread_binding.thread_tag
    _thread_binding(compiler, stmt, stmt.loop_var, tag, stmt.min, stmt.extent, stmt.body)


def _thread_binding(
    compiler: Stmts,
    stmt: Stmt,
    var: Var,
    tag: str,
    start: PrimExpr | None,
    extent: PrimExpr,
    body: Stmt,
) -> None:
    if tag not in COORDINATES:
        raise DiagnosticError.at(stmt.span, f"unknown thread tag '{tag}'")
    if compiler.ctx.kernel is None:
        _launch_kernel(compiler, stmt)
        return
    ctx = compiler.ctx
    kernel = ctx.kernel
    assert kernel is not None
    size = compiler.expr(extent)
    launched = kernel.extents[tag]
    coordinate = COORDINATES[tag]
    low = compiler.expr(start) if start is not None else Code("0", 0, 0)
    high = None if size.constant is None or low.high is None else low.high + size.constant - 1
    name = ctx.bind(var, low.low, high)
    kernel.thread_vars[var] = tag
    ctx.emit(f"{name} = {add_terms([low, Code(coordinate, 0, None)]).text}")
    ctx.define(var)
    ctx.affine.pop(var, None)
    if size.text == launched.text:
        compiler.compile(body)
        return
    ctx.emit(f"if {coordinate} < {size.text}:")
    with ctx.indented():
        compiler.compile(body)


def _launch_kernel(compiler: Stmts, stmt: Stmt) -> None:
    ctx = compiler.ctx
    extents = launch_extents(compiler, stmt)
    name = ctx.fresh("_kernel")
    site = ctx.site(stmt, "kernel launch")
    saved = (
        dict(ctx.names),
        dict(ctx.bounds),
        dict(ctx.views),
        dict(ctx.layouts),
        set(ctx.storages),
    )
    saved_affine = dict(ctx.affine)
    ctx.emit(f"def {name}(_bx, _by, _bz, _tx, _ty, _tz, _tid, _block):")
    with ctx.function_body(), ctx.indented(loop=True):
        ctx.kernel = KernelState(COORDINATES, extents)
        try:
            _private_memory(compiler, stmt)
            compiler.compile(stmt)
            ctx.emit("return")
            ctx.emit("yield")  # makes the function a generator even without collectives
        finally:
            ctx.kernel = None
            ctx.names, ctx.bounds, ctx.views, ctx.layouts, ctx.storages = (
                saved[0],
                saved[1],
                saved[2],
                saved[3],
                saved[4],
            )
            ctx.affine = saved_affine
    grid = ", ".join(extents[tag].text for tag in GRID)
    block = ", ".join(extents[tag].text for tag in BLOCK)
    cluster = _cluster_shape(compiler, stmt)
    if cluster is not None:  # the blocks of a cluster run together: the thread model's way
        launch = ctx.constant(launch_cluster, "launch_cluster")
        ctx.emit(f"{launch}({name}, ({grid}), ({block}), {site}, {cluster})")
    elif ctx.launch_line is not None:  # the lockstep model's, where it can run the kernel
        ctx.emit(ctx.launch_line(compiler, stmt, name, grid, block, site))
    else:
        ctx.emit(f"_launch({name}, ({grid}), ({block}), {site})")


def _cluster_shape(compiler: Stmts, stmt: Stmt) -> tuple[int, int, int] | None:
    """The function's cluster shape; a cluster of one block where it has none but the kernel
    uses the cluster barrier or a peer's shared memory (1 x 1 x 1, as on sm_90)."""
    if compiler.ctx.cluster is not None:
        return compiler.ctx.cluster
    if any(call.op in (*BARRIER_OPS, MAP_SHARED, MULTICAST) for call in cluster_calls(stmt)):
        return (1, 1, 1)
    return None


def launch_extents(compiler: Stmts, stmt: Stmt) -> dict[str, Code]:
    """Each tag's extent: the (largest) extent of its bindings, evaluated before the launch."""
    found: dict[str, list[PrimExpr]] = {}

    def collect(node: Node) -> None:
        if (
            isinstance(node, AttrStmt)
            and node.key == "thread_extent"
            and isinstance(node.node, IterVar)
        ):
            found.setdefault(node.node.thread_tag, []).append(node.value)
        elif (
            isinstance(node, For)
            and node.kind is ForKind.THREAD_BINDING
            and node.thread_binding is not None
        ):
            found.setdefault(node.thread_binding.thread_tag, []).append(node.extent)

    walk(stmt, collect)
    extents: dict[str, Code] = {}
    for tag in GRID + BLOCK:
        codes: list[Code] = []
        for extent in found.get(tag, []):
            try:
                codes.append(compiler.expr(extent))
            except DiagnosticError:
                raise DiagnosticError.at(
                    extent.span or stmt.span,
                    f"the extent of {tag} must be known when the kernel starts",
                ) from None
        texts = list(dict.fromkeys(code.text for code in codes))
        if not texts:
            extents[tag] = Code("1", 1, 1)
        elif len(texts) == 1:
            extents[tag] = codes[0]
        else:
            extents[tag] = Code(f"max({', '.join(texts)})")
    return extents


def _private_memory(compiler: Stmts, stmt: Stmt) -> None:
    """Local memory from before the kernel is per thread; shared memory per block."""
    ctx = compiler.ctx
    used: set[Var] = set()

    def collect(node: Node) -> None:
        if isinstance(node, Buffer):
            used.add(node.data)
        elif isinstance(node, Var):
            used.add(node)

    walk(stmt, collect)
    for var in list(ctx.names):
        scope = ctx.scopes.get(var)
        if var not in used or scope is None or scope == "global":
            continue
        old = ctx.names[var]
        is_storage = var in ctx.storages
        if scope in SHARED_SCOPES:
            value = f"_block.outer_shared({ctx.site(stmt, 'shared memory')}, {old})"
        else:
            value = f"_fresh_copy({old})"
        del ctx.names[var]
        for key in [key for key in ctx.views if key[0] is var]:
            del ctx.views[key]
        compiler.bind_handle(var, value, scope, is_storage)

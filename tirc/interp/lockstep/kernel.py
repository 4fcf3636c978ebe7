"""The lockstep GPU model: every thread of a chunk of blocks is a numpy lane, and statements
run for all lanes at once. For a race-free kernel this is a legal schedule (barriers become
no-ops; blocks never communicate), and it is orders of magnitude faster than the thread model
(tirc.interp.threads.scheduler), which stays the default because it catches data races.

Which model runs a launch is chosen at run time (`gpu_model`: "threads", "lockstep", or
"auto": lockstep from AUTO_THREADS threads on); whether a kernel can run in lockstep at all is
decided when it is compiled (lockstep.stmt.compile_kernel): one that uses anything without a
lane rule (ptx, all-reduce, pointers...) always runs in the thread model.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

import numpy as np

from tirc.interp.fault import Fault, fault_in
from tirc.interp.lockstep.stmt import compile_kernel
from tirc.interp.memory.lanes import Frame, Lanes, outer_memory
from tirc.interp.memory.storage import Pointer, Storage
from tirc.interp.threads.scheduler import Kernel, launch
from tirc.interp.threads.stmt import StmtCompiler
from tirc.ir.buffer import Buffer
from tirc.ir.expr import Var
from tirc.ir.functor import walk
from tirc.ir.node import Node
from tirc.ir.stmt import Stmt

GPU_MODELS = ("threads", "lockstep", "auto")
AUTO_THREADS = 4096  # "auto" runs launches of at least this many threads in lockstep
CHUNK_LANES = 1 << 15  # lanes per chunk of blocks, to bound memory

_MODEL: ContextVar[str] = ContextVar("tirc_gpu_model", default="threads")


@contextmanager
def gpu_model(model: str) -> Iterator[None]:
    """Runs the GPU kernels launched inside in the given model."""
    if model not in GPU_MODELS:
        raise ValueError(f"unknown GPU model {model!r}: expected one of {', '.join(GPU_MODELS)}")
    token = _MODEL.set(model)
    try:
        yield
    finally:
        _MODEL.reset(token)


@dataclass(frozen=True)
class LockstepKernel:
    free: tuple[Var, ...]  # variables from outside the kernel, in the order of their values
    scopes: tuple[str | None, ...]  # for handles, the scope of their memory

    def launch(
        self,
        body: Callable[[Frame], None],
        grid: tuple[int, int, int],
        dims: tuple[int, int, int],
        values: tuple,
    ) -> None:
        per_block = dims[0] * dims[1] * dims[2]
        blocks = grid[0] * grid[1] * grid[2]
        if per_block == 0 or blocks == 0:
            return
        per_chunk = max(1, CHUNK_LANES // per_block)
        with np.errstate(all="ignore"):
            for first in range(0, blocks, per_chunk):
                lanes = Lanes(first, min(per_chunk, blocks - first), grid, dims)
                frame = Frame(lanes)
                for var, scope, value in zip(self.free, self.scopes, values, strict=True):
                    if scope is not None:  # scalars the generated code reads from outside
                        frame.memory[var] = outer_memory(value, scope, lanes)
                try:
                    body(frame)
                except Fault as fault:
                    raise in_first_lane(fault, lanes) from None

    def accepts(self, values: tuple) -> bool:
        """Whether every handle argument is memory the lockstep mode can reach."""
        return all(
            scope is None or isinstance(value, Storage | Pointer)
            for scope, value in zip(self.scopes, values, strict=True)
        )


def in_first_lane(fault: Fault, lanes: Lanes) -> Fault:
    """A fault of code every lane runs alike (the thread model's rules) names the first lane
    executing it (where the innermost generated frame's `_mask` says), as a lane rule's does."""
    if fault.message.endswith(")") and "(in thread " in fault.message:
        return fault
    mask = None
    trace = fault.__traceback__
    while trace is not None:
        if trace.tb_frame.f_code.co_filename.startswith("<tirc-interp"):
            mask = trace.tb_frame.f_locals.get("_mask", mask)
        trace = trace.tb_next
    lane = 0 if mask is None else int(np.argmax(mask))
    return fault_in(fault, lanes.describe(lane))


def _free_variables(compiler: StmtCompiler, stmt: Stmt) -> tuple[Var, ...]:
    free: list[Var] = []

    def collect(node: Node) -> None:
        if isinstance(node, Var) and node in compiler.ctx.names and node not in free:
            free.append(node)
        elif isinstance(node, Buffer):
            collect(node.data)
            for part in (*node.shape, *node.strides, node.elem_offset):
                if part is not None:
                    walk(part, collect)

    walk(stmt, collect)
    return tuple(free)


def launch_line(
    compiler: StmtCompiler, stmt: Stmt, kernel: str, grid: str, block: str, site: int
) -> str:
    """The generated line that launches a kernel: in either model when it can run in
    lockstep (its lane function emitted just before), else always in the thread model."""
    ctx = compiler.ctx
    free = _free_variables(compiler, stmt)
    body = compile_kernel(compiler, stmt, free)
    if body is None:
        return f"_launch({kernel}, ({grid}), ({block}), {site})"
    scopes = tuple(ctx.scopes.get(var, "global") if var.dtype.is_handle else None for var in free)
    lockstep = ctx.constant(LockstepKernel(free, scopes), "lockstep")
    launcher = ctx.constant(launch_gpu, "launch_gpu")
    values = "".join(f"{ctx.names[var]}, " for var in free)
    return f"{launcher}({kernel}, {lockstep}, {body}, ({grid}), ({block}), {site}, ({values}))"


def launch_gpu(
    kernel: Kernel,
    lockstep: LockstepKernel,
    body: Callable[[Frame], None],
    grid: tuple[int, int, int],
    dims: tuple[int, int, int],
    site: int,
    values: tuple,
) -> None:
    model = _MODEL.get()
    threads = grid[0] * grid[1] * grid[2] * dims[0] * dims[1] * dims[2]
    wanted = model == "lockstep" or (model == "auto" and threads >= AUTO_THREADS)
    if min(grid) < 0 or min(dims) < 0 or not wanted or not lockstep.accepts(values):
        launch(kernel, grid, dims, site)
        return
    lockstep.launch(body, grid, dims, values)

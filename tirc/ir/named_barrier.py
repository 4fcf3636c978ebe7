"""Named barriers (`bar.sync id, count` / `bar.arrive id, count`): what their arguments mean,
read by the CUDA C and NVPTX backends, the interpreter and thread-sync alike.

A block has 16 hardware barriers. Barrier 0 is `__syncthreads` (T.tvm_storage_sync("shared"),
every thread of the block); T.ptx_bar_sync(id, count) and T.ptx_bar_arrive(id, count) use
barrier `id` of 1 to 15 among `count` threads, a multiple of the warp size: an instance of the
barrier completes when `count` threads have arrived at it. `sync` waits for that (and orders
the shared memory accesses of every arriving thread before its own later ones), `arrive` does
not wait (it only releases its earlier accesses to the threads that sync). So a subset of the
block (a warp-specialized kernel's consumer warpgroups) synchronizes without the others:

    T.ptx_bar_sync(1, 128)    ->  asm volatile("bar.sync %0, %1;" :: "r"(1), "r"(128))

The id may be any int32 expression (checked here when it is a constant, else where it runs);
the count is a constant. Both instructions exist on every architecture tirc targets.
"""

from __future__ import annotations

from tirc.diagnostics import DiagnosticError, Note
from tirc.ir import expr as E

SYNC, ARRIVE = "ptx_bar_sync", "ptx_bar_arrive"
OPS = (SYNC, ARRIVE)
FIRST_ID, LAST_ID = 1, 15  # 0 is __syncthreads'
MAX_COUNT = 1024  # the most threads a block has
WARP = 32


def id_problem(value: int) -> str | None:
    """Why `value` cannot name a named barrier, or None."""
    if value == 0:
        return (
            'barrier 0 is __syncthreads\' (T.tvm_storage_sync("shared")): a named barrier '
            f"is {FIRST_ID} to {LAST_ID}"
        )
    if not FIRST_ID <= value <= LAST_ID:
        return f"a named barrier is {FIRST_ID} to {LAST_ID}, not {value}"
    return None


def barrier_operands(call: E.Call) -> tuple[E.PrimExpr, int]:
    """(the barrier's id, the thread count) of a T.ptx_bar_sync / T.ptx_bar_arrive call; a
    located error where the id is a constant out of range or the count is not a constant
    multiple of 32 from 32 to 1024."""
    barrier, count = call.args
    if not isinstance(barrier, E.PrimExpr) or not barrier.dtype.is_integer:
        raise DiagnosticError.at(call.span, f"T.{call.op}: the barrier id must be an integer")
    if isinstance(barrier, E.IntImm):
        problem = id_problem(barrier.value)
        if problem is not None:
            raise DiagnosticError.at(call.span, f"T.{call.op}: {problem}")
    if (
        not isinstance(count, E.IntImm)
        or not WARP <= count.value <= MAX_COUNT
        or count.value % WARP
    ):
        raise DiagnosticError.at(
            call.span,
            f"T.{call.op}: the thread count must be a constant multiple of {WARP} from {WARP} "
            f"to {MAX_COUNT}",
            Note("a barrier counts whole warps: every thread of a warp arrives together"),
        )
    return barrier, count.value

"""bind: run a loop's iterations on the GPU threads or blocks of one thread axis.

Besides the conditions of parallel (reductions allowed on threadIdx.* only), the thread must
be a known one. As in TVM, a loop already bound is rebound, and a loop may be bound to the
thread of a loop around or inside it (a cooperative fetch under the compute's threadIdx.x
loop): both then name one thread index, so their extents must be the same (TVM accepts
other extents at this step and fails when it lowers them; tirc refuses here).
`for i in range(128):` → `for i in T.thread_binding(128, thread="threadIdx.x"):`
"""

from __future__ import annotations

import difflib

from tirc.analysis.arith import Analyzer
from tirc.ir.arith import cast
from tirc.ir.expr import PrimExpr
from tirc.ir.functor import walk
from tirc.ir.stmt import For, ForKind
from tirc.schedule.errors import ScheduleError
from tirc.schedule.loop_kind import check_parallelizable, set_kind
from tirc.schedule.primitives import primitive
from tirc.schedule.schedule import Schedule, describe
from tirc.schedule.signature import Kind, Param, Signature
from tirc.schedule.sref import SRef
from tirc.text import script

THREADS = tuple(
    f"{axis}.{dim}" for axis in ("blockIdx", "threadIdx", "vthread") for dim in "xyz"
) + ("vthread",)


@primitive(
    Signature(
        "bind", "Bind", inputs=(Param("loop", Kind.LOOP),), attrs=(Param("thread", Kind.STR),)
    )
)
def bind(sch: Schedule, loop: SRef, thread: str) -> None:
    if thread not in THREADS:
        close = difflib.get_close_matches(thread, THREADS, n=1)
        hint = f"; did you mean '{close[0]}'?" if close else ""
        raise ScheduleError(
            f"unknown thread '{thread}'{hint} (the threads: blockIdx.x/y/z, threadIdx.x/y/z, "
            "vthread, vthread.x/y/z)",
            loop,
        )
    _check_one_extent(sch, loop, thread)
    check_parallelizable(sch, loop, ForKind.THREAD_BINDING, thread)
    set_kind(sch, loop, ForKind.THREAD_BINDING, thread)


def _thread_of(loop: For) -> str | None:
    return loop.thread_binding.thread_tag if loop.thread_binding is not None else None


def _check_one_extent(sch: Schedule, loop: SRef, thread: str) -> None:
    """Nested loops on one thread share its index: two extents for it would contradict."""
    extent = loop.loop.extent
    for outer in loop.ancestors():
        if outer.is_loop and _thread_of(outer.loop) == thread:
            if not _same_extent(outer.loop.extent, extent):
                raise ScheduleError(
                    f"{describe(outer)} around {describe(loop)} is already bound to {thread} "
                    f"with extent {_text(outer.loop.extent)}, not {_text(extent)}; nested loops "
                    "on one thread axis must have one extent",
                    loop,
                    outer,
                )
    inner: list[For] = []
    walk(loop.loop.body, lambda n: inner.append(n) if isinstance(n, For) else None)
    for node in inner:
        if _thread_of(node) == thread and not _same_extent(node.extent, extent):
            raise ScheduleError(
                f"loop {node.loop_var.name} inside {describe(loop)} is already bound to "
                f"{thread} with extent {_text(node.extent)}, not {_text(extent)}; nested "
                "loops on one thread axis must have one extent",
                loop,
                sch.state_owning(loop).get_sref(node),
            )


def _same_extent(a: PrimExpr, b: PrimExpr) -> bool:
    # Loops of an int64 and an int32 extent share a thread when the values agree (TVM binds
    # `T.int64(4)` and `4` to one threadIdx.x); compare in the wider type.
    if a.dtype != b.dtype:
        wide = a.dtype if a.dtype.bits >= b.dtype.bits else b.dtype
        a, b = cast(wide, a), cast(wide, b)
    return Analyzer().can_prove_equal(a, b)


def _text(expr: PrimExpr) -> str:
    return script(expr)

"""bind: run a loop's iterations on the GPU threads or blocks of one thread axis.

Besides the conditions of parallel (reductions allowed on threadIdx.* only), the thread must
be a known one, the loop not bound to another thread, and no loop around it or inside it
bound to the same thread. `for i in range(128):` →
`for i in T.thread_binding(128, thread="threadIdx.x"):`
"""

from __future__ import annotations

from tirc.ir.functor import walk
from tirc.ir.stmt import For, ForKind
from tirc.schedule.errors import ScheduleError
from tirc.schedule.loop_kind import check_parallelizable, set_kind
from tirc.schedule.primitives import primitive
from tirc.schedule.schedule import Schedule, describe
from tirc.schedule.signature import Kind, Param, Signature
from tirc.schedule.sref import SRef

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
        import difflib

        close = difflib.get_close_matches(thread, THREADS, n=1)
        hint = f"; did you mean '{close[0]}'?" if close else ""
        raise ScheduleError(
            f"unknown thread '{thread}'{hint} (the threads: blockIdx.x/y/z, threadIdx.x/y/z, "
            "vthread, vthread.x/y/z)",
            loop,
        )
    bound = _thread_of(loop.loop)
    if bound is not None and bound != thread:
        raise ScheduleError(
            f"{describe(loop)} is already bound to {bound}; a loop runs on one thread axis", loop
        )
    _check_no_duplicate(sch, loop, thread)
    check_parallelizable(sch, loop, ForKind.THREAD_BINDING, thread)
    set_kind(sch, loop, ForKind.THREAD_BINDING, thread)


def _thread_of(loop: For) -> str | None:
    return loop.thread_binding.thread_tag if loop.thread_binding is not None else None


def _check_no_duplicate(sch: Schedule, loop: SRef, thread: str) -> None:
    """A thread index nested in itself would mean two extents for one index of a kernel."""
    for outer in loop.ancestors():
        if outer.is_loop and _thread_of(outer.loop) == thread:
            raise ScheduleError(
                f"{describe(outer)} around {describe(loop)} is already bound to {thread}; "
                "a thread axis can be bound once on a path of nested loops",
                loop,
                outer,
            )
    inner: list[For] = []
    walk(loop.loop.body, lambda n: inner.append(n) if isinstance(n, For) else None)
    for node in inner:
        if _thread_of(node) == thread:
            raise ScheduleError(
                f"loop {node.loop_var.name} inside {describe(loop)} is already bound to "
                f"{thread}; a thread axis can be bound once on a path of nested loops",
                loop,
                sch.state_owning(loop).get_sref(node),
            )

"""Calls of the warp-level PTX intrinsics (semantics in tirc.interp.threads.ptx) and of the
Hopper warpgroup MMA (tirc.interp.threads.wgmma).

ptx_mma, ptx_ldmatrix and mma_store become warp collectives, a `yield` the thread model
resolves once every lane of the warp has arrived:

    T.ptx_ldmatrix("float16", False, 4, ".b16", A.data, 0, p, off)
    -> (yield (4, site, _ldmatrix, (False, 4, A, 0, p, off)))

ptx_cp_async, ptx_commit_group and ptx_wait_group act on the thread's copies in flight,
kept with its block (tirc.interp.threads.ptx.CopiesInFlight); ptx_wgmma and its commit and
wait act on the thread's wgmmas in flight the same way (their results land at the wait):

    T.ptx_wgmma("m64n8k16", "fp16", "fp16", "fp32", A.data, 0, ..., C.data, 0, 1)
    -> wgmma(shape, (A, 0, lbo, sbo, swizzle, trans), (B, ...), C, 0, 1, _tid, _block, site)

The wgmma fences are no-ops in the thread model. ptx_bar_sync and ptx_bar_arrive are the
named barriers of tirc.interp.threads.named_barrier (warp collectives; a sync then waits).
"""

from __future__ import annotations

from tirc.diagnostics import DiagnosticError
from tirc.interp.threads import mbarrier, named_barrier, ptx, wgmma
from tirc.interp.threads.compilers import CallRule, Calls
from tirc.interp.threads.context import Code
from tirc.interp.threads.scheduler import WARP_OP
from tirc.ir.expr import Call, IntImm, StringImm
from tirc.ir.named_barrier import SYNC, barrier_operands
from tirc.ir.ptx import mma_shape
from tirc.ir.wgmma import A_POINTER, B_POINTER, C_POINTER, setmaxnreg_operands, wgmma_shape


def _in_kernel(compiler: Calls, call: Call, unit: str = "warp") -> None:
    if compiler.ctx.kernel is None:
        raise DiagnosticError.at(
            call.span, f"T.{call.op} is a {unit} instruction: it runs only inside a GPU kernel"
        )


def _collective(compiler: Calls, call: Call, function: object, parts: list[str]) -> Code:
    _in_kernel(compiler, call)
    site = compiler.ctx.site(call, call.op)
    name = compiler.ctx.constant(function, call.op)
    payload = ", ".join(parts) + ("," if len(parts) == 1 else "")
    return Code(f"(yield ({WARP_OP}, {site}, {name}, ({payload})))")


def _texts(compiler: Calls, args: tuple) -> list[str]:
    return [compiler.argument(arg).text for arg in args]


def _constant(call: Call, index: int, what: str) -> int:
    arg = call.args[index]
    if not isinstance(arg, IntImm):
        raise DiagnosticError.at(call.span, f"T.{call.op}: the {what} must be a constant")
    return arg.value


def _mma(compiler: Calls, call: Call) -> Code:
    shape = compiler.ctx.constant(mma_shape(call), "mma_shape")
    parts = [shape, *_texts(compiler, call.args[6:13])]
    return _collective(compiler, call, ptx.mma, parts)


def _ldmatrix(compiler: Calls, call: Call) -> Code:
    num = _constant(call, 1, "matrix count")
    kind = call.args[2]
    if num not in (1, 2, 4) or not (isinstance(kind, StringImm) and kind.value == ".b16"):
        raise DiagnosticError.at(call.span, "T.ptx_ldmatrix loads .x1, .x2 or .x4 of .b16")
    if call.dtype.element.bits != 16:
        raise DiagnosticError.at(call.span, "T.ptx_ldmatrix moves 16-bit elements")
    trans = f"bool({compiler.argument(call.args[0]).text})"
    parts = [trans, str(num), *_texts(compiler, call.args[3:7])]
    return _collective(compiler, call, ptx.ldmatrix, parts)


def _mma_store(compiler: Calls, call: Call) -> Code:
    m, n = _constant(call, 0, "row count"), _constant(call, 1, "column count")
    if m != 16 or n % 8:
        raise DiagnosticError.at(
            call.span, f"T.mma_store stores 16 x 8k accumulator tiles, not {m} x {n}"
        )
    dtype = f"_dtype({str(call.dtype.element)!r})"
    parts = [str(n), *_texts(compiler, call.args[2:6]), dtype]
    return _collective(compiler, call, ptx.mma_store, parts)


def _mma_fill(compiler: Calls, call: Call) -> Code:
    size = _constant(call, 0, "register count")
    site = compiler.ctx.site(call, call.op)
    function = compiler.ctx.constant(ptx.mma_fill, "mma_fill")
    local, offset = _texts(compiler, call.args[1:3])
    dtype = f"_dtype({str(call.dtype.element)!r})"
    return Code(f"{function}({size}, {local}, {offset}, {dtype}, {site})")


def _cp_async(compiler: Calls, call: Call) -> Code:
    size = _constant(call, 4, "byte count")
    element = call.dtype.element
    if size not in (4, 8, 16) or size % max(1, element.bits // 8):
        raise DiagnosticError.at(
            call.span, f"T.ptx_cp_async copies 4, 8 or 16 bytes of {element}, not {size}"
        )
    site = compiler.ctx.site(call, call.op)
    function = compiler.ctx.constant(ptx.cp_async, "cp_async")
    shared, shared_off, source, source_off = _texts(compiler, call.args[:4])
    predicate = compiler.argument(call.args[5]).text if len(call.args) > 5 else "True"
    return Code(
        f"{function}({shared}, {shared_off}, {source}, {source_off}, {size}, {predicate}, "
        f"_dtype({str(element)!r}), {_thread(compiler)}, {site})"
    )


def _thread(compiler: Calls) -> str:
    """The running thread and its block, or none outside a kernel."""
    return "_tid, _block" if compiler.ctx.kernel is not None else "-1, None"


def _group(kind: type[ptx.CopiesInFlight], wait: bool) -> CallRule:
    """commit_group or wait_group(n) of the thread's copies (or wgmmas: kind) in flight."""

    def rule(compiler: Calls, call: Call) -> Code:
        function = ptx.wait_group if wait else ptx.commit_group
        name = compiler.ctx.constant(function, function.__name__)
        count = f"{compiler.argument(call.args[0]).text}, " if wait else ""
        return Code(
            f"{name}({compiler.ctx.constant(kind, kind.__name__)}, {count}{_thread(compiler)})"
        )

    return rule


def _wgmma(compiler: Calls, call: Call) -> Code:
    _in_kernel(compiler, call, "warpgroup")
    shape = compiler.ctx.constant(wgmma_shape(call), "wgmma_shape")
    function = compiler.ctx.constant(wgmma.wgmma, "wgmma")
    site = compiler.ctx.site(call, call.op)
    a, b = (", ".join(_texts(compiler, call.args[at : at + 6])) for at in (A_POINTER, B_POINTER))
    c = ", ".join(_texts(compiler, call.args[C_POINTER : C_POINTER + 3]))
    return Code(f"{function}({shape}, ({a}), ({b}), {c}, _tid, _block, {site})")


def _arrive_on_copies(compiler: Calls, call: Call) -> Code:
    """cp.async.mbarrier.arrive.noinc (tirc.interp.threads.mbarrier.arrive_on_copies)."""
    _in_kernel(compiler, call, "thread")
    site = compiler.ctx.site(call, call.op)
    function = compiler.ctx.constant(mbarrier.arrive_on_copies, "arrive_on_copies")
    handle, index = _texts(compiler, call.args[:2])
    return Code(f"{function}({handle}, {index}, {_thread(compiler)}, {site})")


def _nothing(compiler: Calls, call: Call) -> Code:
    return Code("None")


def _setmaxnreg(compiler: Calls, call: Call) -> Code:
    """Registers are not modelled: the call only has to be one the instruction takes, in a
    kernel."""
    _in_kernel(compiler, call, "warpgroup")
    setmaxnreg_operands(call)
    return Code("None")


def _named_barrier(compiler: Calls, call: Call) -> Code:
    """bar.sync or bar.arrive, warp collectives (tirc.interp.threads.named_barrier)."""
    _in_kernel(compiler, call, "thread block")
    barrier, count = barrier_operands(call)
    site = compiler.ctx.site(call, call.op)
    function = named_barrier.sync if call.op == SYNC else named_barrier.arrive
    name = compiler.ctx.constant(function, function.__name__)
    return Code(
        f"(yield from {name}({compiler.argument(barrier).text}, {count}, _tid, _block, {site}))"
    )


RULES: dict[str, CallRule] = {
    "ptx_mma": _mma,
    "ptx_ldmatrix": _ldmatrix,
    "mma_store": _mma_store,
    "mma_fill": _mma_fill,
    "ptx_cp_async": _cp_async,
    "ptx_commit_group": _group(ptx.CopiesInFlight, wait=False),
    "ptx_wait_group": _group(ptx.CopiesInFlight, wait=True),
    "ptx_mbarrier_arrive_cp_async": _arrive_on_copies,
    "ptx_wgmma": _wgmma,
    "ptx_wgmma_fence": _nothing,
    "ptx_wgmma_commit_group": _group(wgmma.PendingWgmma, wait=False),
    "ptx_wgmma_wait_group": _group(wgmma.PendingWgmma, wait=True),
    "ptx_fence_proxy_async": _nothing,
    "ptx_setmaxnreg": _setmaxnreg,
    "ptx_bar_sync": _named_barrier,
    "ptx_bar_arrive": _named_barrier,
}

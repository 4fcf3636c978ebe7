"""Calls of the Hopper warpgroup MMA intrinsics (semantics in tirc.interp.threads.wgmma).

    T.ptx_wgmma("m64n8k16", "fp16", "fp16", "fp32", A.data, 0, ..., C.data, 0, 1)
    -> wgmma(shape, (A, 0, lbo, sbo, swizzle, trans), (B, ...), C, 0, 1, _tid, _block, site)

commit_group and wait_group act on the thread's wgmmas in flight (their results land at the
wait); the fences are no-ops in the thread model.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tirc.diagnostics import DiagnosticError
from tirc.interp.threads import wgmma
from tirc.interp.threads.context import Code
from tirc.ir.expr import Call
from tirc.ir.wgmma import A_POINTER, B_POINTER, C_POINTER, wgmma_shape

if TYPE_CHECKING:
    from tirc.interp.threads.call import CallCompiler, CallRule


def _texts(compiler: CallCompiler, call: Call, first: int, count: int) -> str:
    return ", ".join(compiler.argument(arg).text for arg in call.args[first : first + count])


def _mma(compiler: CallCompiler, call: Call) -> Code:
    if compiler.ctx.kernel is None:
        raise DiagnosticError.at(
            call.span, "T.ptx_wgmma is a warpgroup instruction: it runs only inside a GPU kernel"
        )
    shape = compiler.ctx.constant(wgmma_shape(call), "wgmma_shape")
    function = compiler.ctx.constant(wgmma.wgmma, "wgmma")
    site = compiler.ctx.site(call, call.op)
    a = _texts(compiler, call, A_POINTER, 6)
    b = _texts(compiler, call, B_POINTER, 6)
    c = _texts(compiler, call, C_POINTER, 3)
    return Code(f"{function}({shape}, ({a}), ({b}), {c}, _tid, _block, {site})")


def _nothing(compiler: CallCompiler, call: Call) -> Code:
    return Code("None")


def _thread(compiler: CallCompiler) -> str:
    """The running thread and its block, or none outside a kernel."""
    return "_tid, _block" if compiler.ctx.kernel is not None else "-1, None"


def _commit_group(compiler: CallCompiler, call: Call) -> Code:
    function = compiler.ctx.constant(wgmma.commit_group, "wgmma_commit_group")
    return Code(f"{function}({_thread(compiler)})")


def _wait_group(compiler: CallCompiler, call: Call) -> Code:
    count = compiler.argument(call.args[0]).text
    function = compiler.ctx.constant(wgmma.wait_group, "wgmma_wait_group")
    return Code(f"{function}({count}, {_thread(compiler)})")


RULES: dict[str, CallRule] = {
    "ptx_wgmma": _mma,
    "ptx_wgmma_fence": _nothing,
    "ptx_wgmma_commit_group": _commit_group,
    "ptx_wgmma_wait_group": _wait_group,
    "ptx_fence_proxy_async": _nothing,
}

"""Calls of the wmma intrinsics (semantics in threads.wmma), race-checked in kernels.

Inside a GPU kernel the built-in implementations also get the thread's number and the call's
site, so that a tile read from (or written to) shared memory goes through the race tracker
and a fault is located at the call, as in the lockstep model; an implementation registered in
its place gets the call's arguments only.

    T.tvm_load_matrix_sync(F.data, 16, 16, 16, i, p, 16, "row_major")
    -> _wmma_load(F, 16, 16, 16, i, p, 16, 'row_major', _tid, site)

T.tvm_mma_sync also gets its (m, n, k), D's fragment shape (analysis.wmma_fragments):

    T.tvm_mma_sync(D.data, 0, A.data, 0, B.data, 0, C.data, 0)   # D m32n8k16
    -> _wmma_mma(D, 0, A, 0, B, 0, C, 0, _tid, site, (32, 8, 16))
"""

from __future__ import annotations

from collections.abc import Callable

from tirc.analysis.wmma_fragments import PLAIN_MMA_SHAPE, fragment_shapes, mma_shape
from tirc.diagnostics import DiagnosticError
from tirc.interp.semantics.extensions import INTRINSICS
from tirc.interp.threads import wmma
from tirc.interp.threads.compilers import CallRule, Calls
from tirc.interp.threads.context import Code, Context
from tirc.ir.expr import Call

_TRACKED: dict[str, Callable[..., None]] = {
    "tvm_fill_fragment": wmma.fill_fragment,
    "tvm_load_matrix_sync": wmma.load_matrix_sync,
    "tvm_store_matrix_sync": wmma.store_matrix_sync,
    "tvm_mma_sync": wmma.mma_sync,
}


def _tracked(compiler: Calls, call: Call) -> Code:
    function = INTRINSICS.get(call.op)
    if function is None:
        raise DiagnosticError.at(call.span, f"the interpreter has no implementation of T.{call.op}")
    in_kernel = compiler.ctx.kernel is not None
    if function is not _TRACKED[call.op] or not (in_kernel or call.op == "tvm_mma_sync"):
        return compiler.runtime_call(call, function, call.op)
    name = compiler.ctx.constant(function, call.op)
    where = f"_tid, {compiler.ctx.site(call, call.op)}" if in_kernel else "-1, -1"
    args = ", ".join(code.text for code in compiler.args(call))
    if call.op == "tvm_mma_sync":
        return Code(f"{name}({args}, {where}, {mma_shape_in(compiler.ctx, call)!r})")
    return Code(f"{name}({args}, {where})")


def mma_shape_in(ctx: Context, call: Call) -> tuple[int, int, int]:
    """(m, n, k) of a T.tvm_mma_sync call in the function being compiled (D's fragment shape;
    PLAIN_MMA_SHAPE on plain memory), the function's fragment shapes found once."""
    if ctx.body is None:
        return PLAIN_MMA_SHAPE
    if ctx.fragment_shapes is None:
        ctx.fragment_shapes = fragment_shapes(ctx.body)
    return mma_shape(call, ctx.fragment_shapes)


RULES: dict[str, CallRule] = {op: _tracked for op in _TRACKED}

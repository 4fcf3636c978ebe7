"""Calls of the warp-level PTX intrinsics (semantics in tirc.interp.threads.ptx).

ptx_mma, ptx_ldmatrix and mma_store become warp collectives, a `yield` the thread model
resolves once every lane of the warp has arrived:

    T.ptx_ldmatrix("float16", False, 4, ".b16", A.data, 0, p, off)
    -> (yield (4, site, _ldmatrix, (False, 4, A, 0, p, off)))

ptx_cp_async, ptx_commit_group and ptx_wait_group act on the thread's copies in flight,
kept with its block (tirc.interp.threads.ptx.CopiesInFlight).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tirc.diagnostics import DiagnosticError
from tirc.interp.threads import ptx
from tirc.interp.threads.context import Code
from tirc.interp.threads.scheduler import WARP_OP
from tirc.ir.expr import Call, IntImm, StringImm
from tirc.ir.ptx import mma_shape

if TYPE_CHECKING:
    from tirc.interp.threads.call import CallCompiler, CallRule


def _in_kernel(compiler: CallCompiler, call: Call) -> None:
    if compiler.ctx.kernel is None:
        raise DiagnosticError.at(
            call.span, f"T.{call.op} is a warp instruction: it runs only inside a GPU kernel"
        )


def _collective(compiler: CallCompiler, call: Call, function: object, parts: list[str]) -> Code:
    _in_kernel(compiler, call)
    site = compiler.ctx.site(call, call.op)
    name = compiler.ctx.constant(function, call.op)
    payload = ", ".join(parts) + ("," if len(parts) == 1 else "")
    return Code(f"(yield ({WARP_OP}, {site}, {name}, ({payload})))")


def _texts(compiler: CallCompiler, args: tuple) -> list[str]:
    return [compiler.argument(arg).text for arg in args]


def _constant(call: Call, index: int, what: str) -> int:
    arg = call.args[index]
    if not isinstance(arg, IntImm):
        raise DiagnosticError.at(call.span, f"T.{call.op}: the {what} must be a constant")
    return arg.value


def _mma(compiler: CallCompiler, call: Call) -> Code:
    shape = compiler.ctx.constant(mma_shape(call), "mma_shape")
    parts = [shape, *_texts(compiler, call.args[6:13])]
    return _collective(compiler, call, ptx.mma, parts)


def _ldmatrix(compiler: CallCompiler, call: Call) -> Code:
    num = _constant(call, 1, "matrix count")
    kind = call.args[2]
    if num not in (1, 2, 4) or not (isinstance(kind, StringImm) and kind.value == ".b16"):
        raise DiagnosticError.at(call.span, "T.ptx_ldmatrix loads .x1, .x2 or .x4 of .b16")
    if call.dtype.element.bits != 16:
        raise DiagnosticError.at(call.span, "T.ptx_ldmatrix moves 16-bit elements")
    trans = f"bool({compiler.argument(call.args[0]).text})"
    parts = [trans, str(num), *_texts(compiler, call.args[3:7])]
    return _collective(compiler, call, ptx.ldmatrix, parts)


def _mma_store(compiler: CallCompiler, call: Call) -> Code:
    m, n = _constant(call, 0, "row count"), _constant(call, 1, "column count")
    if m != 16 or n % 8:
        raise DiagnosticError.at(
            call.span, f"T.mma_store stores 16 x 8k accumulator tiles, not {m} x {n}"
        )
    dtype = f"_dtype({str(call.dtype.element)!r})"
    parts = [str(n), *_texts(compiler, call.args[2:6]), dtype]
    return _collective(compiler, call, ptx.mma_store, parts)


def _mma_fill(compiler: CallCompiler, call: Call) -> Code:
    size = _constant(call, 0, "register count")
    site = compiler.ctx.site(call, call.op)
    function = compiler.ctx.constant(ptx.mma_fill, "mma_fill")
    local, offset = _texts(compiler, call.args[1:3])
    dtype = f"_dtype({str(call.dtype.element)!r})"
    return Code(f"{function}({size}, {local}, {offset}, {dtype}, {site})")


def _cp_async(compiler: CallCompiler, call: Call) -> Code:
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


def _thread(compiler: CallCompiler) -> str:
    """The running thread and its block, or none outside a kernel."""
    return "_tid, _block" if compiler.ctx.kernel is not None else "-1, None"


def _commit_group(compiler: CallCompiler, call: Call) -> Code:
    function = compiler.ctx.constant(ptx.commit_group, "commit_group")
    return Code(f"{function}({_thread(compiler)})")


def _wait_group(compiler: CallCompiler, call: Call) -> Code:
    count = compiler.argument(call.args[0]).text
    function = compiler.ctx.constant(ptx.wait_group, "wait_group")
    return Code(f"{function}({count}, {_thread(compiler)})")


RULES: dict[str, CallRule] = {
    "ptx_mma": _mma,
    "ptx_ldmatrix": _ldmatrix,
    "mma_store": _mma_store,
    "mma_fill": _mma_fill,
    "ptx_cp_async": _cp_async,
    "ptx_commit_group": _commit_group,
    "ptx_wait_group": _wait_group,
}

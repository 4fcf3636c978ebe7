"""Calls of the mbarrier and TMA intrinsics (semantics in tirc.interp.threads.mbarrier).

T.ptx_mbarrier_wait(bar.data, 0, phase)  ->  (yield from wait(bar, 0, phase, _block, site))
T.ptx_tma_load("float16", A.data, 2, 0, M, K, 64, 64, S.data, 0, bar.data, 0, y, x)
    ->  tma_load(dtype, A, 0, (M, K), (64, 64), S, 0, bar, 0, (y, x), _block, site)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tirc.interp.threads import mbarrier
from tirc.interp.threads.context import Code
from tirc.ir.expr import Call
from tirc.ir.tma import tma_load

if TYPE_CHECKING:
    from tirc.interp.threads.call import CallCompiler, CallRule


def _call(compiler: CallCompiler, call: Call, function: object, parts: list[str]) -> str:
    name = compiler.ctx.constant(function, call.op)
    site = compiler.ctx.site(call, call.op)
    block = "_block" if compiler.ctx.kernel is not None else "None"
    return f"{name}({', '.join(parts)}, {block}, {site})"


def _texts(compiler: CallCompiler, args: tuple) -> list[str]:
    return [compiler.argument(arg).text for arg in args]


def _init(compiler: CallCompiler, call: Call) -> Code:
    return Code(_call(compiler, call, mbarrier.init, _texts(compiler, call.args)))


def _arrive(compiler: CallCompiler, call: Call) -> Code:
    parts = _texts(compiler, call.args)
    return Code(_call(compiler, call, mbarrier.arrive, parts if len(parts) == 3 else [*parts, "0"]))


def _wait(compiler: CallCompiler, call: Call) -> Code:
    return Code(f"(yield from {_call(compiler, call, mbarrier.wait, _texts(compiler, call.args))})")


def _inval(compiler: CallCompiler, call: Call) -> Code:
    return Code(_call(compiler, call, mbarrier.inval, _texts(compiler, call.args)))


def _tuple(texts: list[str]) -> str:
    return "(" + "".join(f"{text}, " for text in texts) + ")"


def _tma_load(compiler: CallCompiler, call: Call) -> Code:
    load = tma_load(call)
    dtype = f"_dtype({str(load.dtype)!r})"
    parts = [
        dtype,
        compiler.argument(load.tensor).text,
        str(load.swizzle),
        _tuple(_texts(compiler, load.shape)),
        repr(load.box),
        *_texts(compiler, (load.shared, load.shared_offset, load.barrier, load.barrier_index)),
        _tuple(_texts(compiler, load.coords)),
    ]
    return Code(_call(compiler, call, mbarrier.tma_load, parts))


RULES: dict[str, CallRule] = {
    "ptx_mbarrier_init": _init,
    "ptx_mbarrier_arrive": _arrive,
    "ptx_mbarrier_arrive_expect_tx": _arrive,
    "ptx_mbarrier_wait": _wait,
    "ptx_mbarrier_inval": _inval,
    "ptx_tma_load": _tma_load,
}

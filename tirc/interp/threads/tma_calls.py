"""Calls of the mbarrier and TMA intrinsics (semantics in tirc.interp.threads.mbarrier).

T.ptx_mbarrier_wait(bar.data, 0, phase)  ->  (yield from wait(bar, 0, phase, _block, site))
T.ptx_tma_load("float16", A.data, 2, 0, M, K, 64, 64, S.data, 0, bar.data, 0, y, x)
    ->  tma_load(Copy(dtype, A, 0, (M, K), (64, 64), S, 0, (y, x)), bar, 0, _tid, _block, site)
T.ptx_tma_load_multicast(..., bar.data, 0, mask, y, x)
    ->  tma_load_multicast(Copy(...), bar, 0, mask, _tid, _block, site)  (threads.cluster)
T.ptx_tma_store(...)  ->  tma_store(Copy(...), _tid, _block, site)
T.ptx_tma_store_commit()  ->  commit_group(BulkStores, _tid, _block)
T.ptx_tma_store_wait(n)  ->  (yield from store_wait(n, _tid, _block, site))
"""

from __future__ import annotations

from tirc.interp.threads import cluster, mbarrier, ptx
from tirc.interp.threads.compilers import CallRule, Calls
from tirc.interp.threads.context import Code
from tirc.ir.expr import Call
from tirc.ir.tma import tma_load


def _call(compiler: Calls, call: Call, function: object, parts: list[str]) -> str:
    name = compiler.ctx.constant(function, call.op)
    site = compiler.ctx.site(call, call.op)
    block = "_block" if compiler.ctx.kernel is not None else "None"
    return f"{name}({', '.join(parts)}, {block}, {site})"


def _texts(compiler: Calls, args: tuple) -> list[str]:
    return [compiler.argument(arg).text for arg in args]


def _init(compiler: Calls, call: Call) -> Code:
    return Code(_call(compiler, call, mbarrier.init, _texts(compiler, call.args)))


def _thread(compiler: Calls) -> str:
    return "_tid" if compiler.ctx.kernel is not None else "-1"


def _arrive(compiler: Calls, call: Call) -> Code:
    parts = _texts(compiler, call.args)
    parts = parts if len(parts) == 3 else [*parts, "0"]
    return Code(_call(compiler, call, mbarrier.arrive, [*parts, _thread(compiler)]))


def _wait(compiler: Calls, call: Call) -> Code:
    parts = [*_texts(compiler, call.args), _thread(compiler)]
    return Code(f"(yield from {_call(compiler, call, mbarrier.wait, parts)})")


def _inval(compiler: Calls, call: Call) -> Code:
    return Code(_call(compiler, call, mbarrier.inval, _texts(compiler, call.args)))


def _tuple(texts: list[str]) -> str:
    return "(" + "".join(f"{text}, " for text in texts) + ")"


def _tma_copy(compiler: Calls, call: Call) -> Code:
    load = tma_load(call)
    barrier = () if load.barrier is None else (load.barrier, load.barrier_index)
    copy = [
        f"_dtype({str(load.dtype)!r})",
        compiler.argument(load.tensor).text,
        str(load.swizzle),
        _tuple(_texts(compiler, load.shape)),
        repr(load.box),
        *_texts(compiler, (load.shared, load.shared_offset)),
        _tuple(_texts(compiler, load.coords)),
    ]
    operands = [f"{compiler.ctx.constant(mbarrier.Copy, 'Copy')}({', '.join(copy)})"]
    if barrier:
        operands += _texts(compiler, barrier)
    function: object = mbarrier.tma_load if barrier else mbarrier.tma_store
    if load.multicast is not None:  # into the cluster's blocks (tirc.interp.threads.cluster)
        operands.append(compiler.argument(load.multicast).text)
        function = cluster.tma_load_multicast
    return Code(_call(compiler, call, function, [*operands, _thread(compiler)]))


def _store_commit(compiler: Calls, call: Call) -> Code:
    function = compiler.ctx.constant(ptx.commit_group, "commit_group")
    kind = compiler.ctx.constant(mbarrier.BulkStores, "BulkStores")
    block = "_block" if compiler.ctx.kernel is not None else "None"
    return Code(f"{function}({kind}, {_thread(compiler)}, {block})")


def _store_wait(compiler: Calls, call: Call) -> Code:
    if compiler.ctx.kernel is None:
        return Code("None")  # outside a kernel a store completes when issued
    parts = [*_texts(compiler, call.args), _thread(compiler)]
    return Code(f"(yield from {_call(compiler, call, mbarrier.store_wait, parts)})")


RULES: dict[str, CallRule] = {
    "ptx_mbarrier_init": _init,
    "ptx_mbarrier_arrive": _arrive,
    "ptx_mbarrier_arrive_expect_tx": _arrive,
    "ptx_mbarrier_wait": _wait,
    "ptx_mbarrier_inval": _inval,
    "ptx_tma_load": _tma_copy,
    "ptx_tma_load_multicast": _tma_copy,
    "ptx_tma_store": _tma_copy,
    "ptx_tma_store_commit": _store_commit,
    "ptx_tma_store_wait": _store_wait,
}

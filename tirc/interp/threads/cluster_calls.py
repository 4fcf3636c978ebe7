"""Calls of the cluster intrinsics (semantics in tirc.interp.threads.cluster). The block's place
in its cluster follows from its coordinates and the function's cluster shape (1 x 1 x 1 where
it has none, as every sm_90 kernel runs in clusters of one block):

T.ptx_cluster_ctarank()        ->  _bx % 2 + 2 * (_by % 1 + ...)   (cluster (2, 1, 1))
T.ptx_clusterid("x")           ->  _bx // 2
T.ptx_barrier_cluster_arrive() ->  (yield from arrive(_block, _tid, site))
T.ptx_map_shared_cluster(S, r) ->  map_shared(S, r, _block, site)
"""

from __future__ import annotations

from tirc.diagnostics import DiagnosticError
from tirc.interp.threads import cluster
from tirc.interp.threads.compilers import CallRule, Calls
from tirc.interp.threads.context import Code
from tirc.ir.cluster import AXES, call_axis
from tirc.ir.expr import Call

_BLOCK = {"x": "_bx", "y": "_by", "z": "_bz"}


def _shape(compiler: Calls, call: Call) -> tuple[int, int, int]:
    if compiler.ctx.kernel is None:
        raise DiagnosticError.at(call.span, f"T.{call.op} runs only in a GPU kernel")
    return compiler.ctx.cluster or (1, 1, 1)


def _axis(call: Call) -> int:
    return AXES.index(call_axis(call))


def _rank(compiler: Calls, call: Call) -> Code:
    shape = _shape(compiler, call)
    size = shape[0] * shape[1] * shape[2]
    if call.op == "ptx_cluster_nctarank":
        return Code(str(size), size, size)
    terms = []
    stride = 1
    for axis, extent in zip(AXES, shape, strict=True):
        if extent > 1:
            terms.append(f"{_BLOCK[axis]} % {extent}" + (f" * {stride}" if stride > 1 else ""))
        stride *= extent
    return Code(f"({' + '.join(terms)})" if terms else "0", 0, size - 1)


def _coordinate(compiler: Calls, call: Call) -> Code:
    shape = _shape(compiler, call)
    index = _axis(call)
    extent = shape[index]
    block = _BLOCK[AXES[index]]
    if call.op == "ptx_cluster_nctaid":
        return Code(str(extent), extent, extent)
    if call.op == "ptx_cluster_ctaid":
        return Code(f"({block} % {extent})", 0, extent - 1) if extent > 1 else Code("0", 0, 0)
    if call.op == "ptx_clusterid":
        return Code(f"({block} // {extent})", 0, None) if extent > 1 else Code(block, 0, None)
    kernel = compiler.ctx.kernel
    assert kernel is not None  # _shape checked it
    grid = kernel.extents[f"blockIdx.{AXES[index]}"].text
    return Code(f"(({grid}) // {extent})", 0, None)


def _site(compiler: Calls, call: Call) -> str:
    return str(compiler.ctx.site(call, call.op))


def _barrier(compiler: Calls, call: Call) -> Code:
    _shape(compiler, call)
    half = cluster.arrive if call.op.endswith("arrive") else cluster.wait
    name = compiler.ctx.constant(half, f"cluster_{half.__name__}")
    return Code(f"(yield from {name}(_block, _tid, {_site(compiler, call)}))")


def _map_shared(compiler: Calls, call: Call) -> Code:
    _shape(compiler, call)
    name = compiler.ctx.constant(cluster.map_shared, "map_shared")
    handle, rank = (compiler.argument(arg).text for arg in call.args)
    return Code(f"{name}({handle}, {rank}, _block, {_site(compiler, call)})")


RULES: dict[str, CallRule] = {
    "ptx_cluster_ctarank": _rank,
    "ptx_cluster_nctarank": _rank,
    "ptx_cluster_ctaid": _coordinate,
    "ptx_cluster_nctaid": _coordinate,
    "ptx_clusterid": _coordinate,
    "ptx_nclusterid": _coordinate,
    "ptx_barrier_cluster_arrive": _barrier,
    "ptx_barrier_cluster_wait": _barrier,
    "ptx_map_shared_cluster": _map_shared,
}

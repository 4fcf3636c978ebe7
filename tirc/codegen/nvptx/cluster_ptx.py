"""Thread-block clusters for --ptx-via llvm (tirc.ir.cluster; CUDA C's spelling is
tirc/codegen/cuda/cluster.py): the kernel's shape as `.explicitcluster` and
`.reqnctapercluster x, y, z` (CUDA C's `__cluster_dims__`), the special registers through
`llvm.nvvm.read.ptx.sreg.*`, and the barrier's halves and mapa as the same inline PTX.

    T.ptx_cluster_ctaid("y")        ->  call i32 @llvm.nvvm.read.ptx.sreg.cluster.ctaid.y()
    T.ptx_map_shared_cluster(S, r)  ->  asm sideeffect "mapa.u64 $0, $1, $2;", "=l,l,r"
"""

from __future__ import annotations

import llvmlite.ir as ir

from tirc.codegen.nvptx import types
from tirc.codegen.nvptx.annotations import annotate
from tirc.codegen.nvptx.ptx import _asm, instruction
from tirc.codegen.nvptx.values import ValueBuilder
from tirc.ir import expr as E
from tirc.ir.cluster import AXES, REGISTERS, Dims, special_register
from tirc.ir.dtype import parse_dtype

_I32 = parse_dtype("int32")


def annotate_cluster(function: ir.Function, cluster: Dims | None) -> None:
    """The kernel's cluster shape, which LLVM writes as `.explicitcluster` and
    `.reqnctapercluster x, y, z`."""
    if cluster is not None:
        for axis, count in zip(AXES, cluster, strict=True):
            annotate(function, f"cluster_dim_{axis}", count)


def lower_register(v: ValueBuilder, call: E.Call) -> ir.Value:
    # PTX's %cluster_ctaid.x is LLVM's llvm.nvvm.read.ptx.sreg.cluster.ctaid.x
    register = special_register(call).replace("cluster_", "cluster.")
    function = v.function(f"llvm.nvvm.read.ptx.sreg.{register}", types.I32, [])
    return v.b.call(function, [])


def lower_map_shared(v: ValueBuilder, call: E.Call) -> ir.Value:
    """mapa on the generic address: the peer block's copy, read and written as any pointer."""
    pointer, rank = call.args
    assert isinstance(rank, E.PrimExpr)
    address = v.b.ptrtoint(v(pointer), types.I64)
    peer_rank = v.cast(v(rank), rank.dtype, _I32)
    (peer,) = _asm(v, "mapa.u64 $0, $1, $2;", "=l,l,r", [types.I64], [address, peer_rank])
    return v.b.inttoptr(peer, types.POINTER)


# arrive releases and wait acquires (the defaults), as in CUDA C
LOWERINGS = {
    **{op: lower_register for op in REGISTERS},
    "ptx_barrier_cluster_arrive": instruction("barrier.cluster.arrive;"),
    "ptx_barrier_cluster_wait": instruction("barrier.cluster.wait;"),
    "ptx_map_shared_cluster": lower_map_shared,
}

"""Thread-block clusters as CUDA C (tirc.ir.cluster): the kernel's `__cluster_dims__`, the
special registers and the cluster barrier as inline PTX, and mapa for distributed shared memory.

    T.ptx_cluster_ctarank()          ->  tirc_cluster_ctarank()   (mov.u32 %0, %cluster_ctarank)
    T.ptx_cluster_ctaid("y")         ->  tirc_cluster_ctaid_y()
    T.ptx_barrier_cluster_arrive()   ->  asm volatile("barrier.cluster.arrive;" ::: "memory")
    T.ptx_map_shared_cluster(S, r)   ->  tirc_map_shared_cluster(S, r)  (mapa.u64: a generic
                                          address of the peer's S, read and written as any other)

Because the dims are compiled into the kernel, the launch needs nothing more: `<<<...>>>` or
cuLaunchKernel runs a grid of whole clusters (a grid that is not is the launcher's error).
"""

from __future__ import annotations

from tirc.codegen.cuda.expr import PRIMARY, Code, ExprPrinter
from tirc.ir import expr as E
from tirc.ir.cluster import (
    AXES,
    AXIS_OPS,
    RANK_OPS,
    REGISTERS,
    Dims,
    check_cluster_arch,
    cluster_dims,
    special_register,
)
from tirc.ir.function import IRModule


def cluster_attribute(cluster: Dims | None) -> str:
    """The kernel's ` __cluster_dims__(x, y, z)`, or nothing."""
    return "" if cluster is None else f" __cluster_dims__({', '.join(map(str, cluster))})"


def _register_function(register: str) -> str:
    return f'TIRC_CLUSTER_REGISTER({register.replace(".", "_")}, "{register}")\n'


DEVICE_HELPERS = (
    "// Thread-block clusters: the special registers, and a peer block's address of a shared\n"
    "// array (mapa on a generic address: the result is read and written as any pointer).\n"
    "#define TIRC_CLUSTER_REGISTER(name, reg) __device__ __forceinline__ int tirc_##name() { \\\n"
    '    unsigned value; asm("mov.u32 %0, %%" reg ";" : "=r"(value)); return (int)value; }\n'
    + "".join(_register_function(REGISTERS[op]) for op in RANK_OPS)
    + "".join(_register_function(f"{REGISTERS[op]}.{axis}") for op in AXIS_OPS for axis in AXES)
    + """\
template <typename T>
__device__ __forceinline__ T* tirc_map_shared_cluster(T* address, int rank) {
    unsigned long long peer;
    asm volatile("mapa.u64 %0, %1, %2;" : "=l"(peer) : "l"((unsigned long long)address), "r"(rank));
    return (T*)peer;
}
"""
)
HELPER_PATTERN = r"tirc_(n?cluster\w*|map_shared_cluster)\("


def print_register(p: ExprPrinter, call: E.Call, lane: int | None) -> Code:
    return f"tirc_{special_register(call).replace('.', '_')}()", PRIMARY


def print_barrier(p: ExprPrinter, call: E.Call, lane: int | None) -> Code:
    half = "arrive" if call.op.endswith("arrive") else "wait"
    # arrive releases and wait acquires (the defaults): writes before the arrive are seen
    # after the wait, in any block of the cluster
    return f'asm volatile("barrier.cluster.{half};\\n" ::: "memory")', PRIMARY


def print_map_shared(p: ExprPrinter, call: E.Call, lane: int | None) -> Code:
    pointer, rank = call.args
    return f"tirc_map_shared_cluster({p(pointer)}, (int)({p(rank)}))", PRIMARY


HANDLERS = {
    **{op: print_register for op in REGISTERS},
    "ptx_barrier_cluster_arrive": print_barrier,
    "ptx_barrier_cluster_wait": print_barrier,
    "ptx_map_shared_cluster": print_map_shared,
}


def check_cluster_module(module: IRModule, arch: str) -> None:
    """A located error at the first function that asks for clusters (or calls a cluster
    intrinsic) when `arch` predates them, or whose cluster shape is not one a GPU runs."""
    for _, func in module.functions:
        check_cluster_arch(func, arch)
        cluster_dims(func)

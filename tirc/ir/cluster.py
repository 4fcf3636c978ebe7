"""Thread-block clusters (sm_90 and later): a kernel's cluster shape and the calls that use it.

A program asks for clusters with the function attribute `"cluster_dims"`, three positive
integers (x, y, z): `T.func_attr({"cluster_dims": [2, 1, 1]})` on a hand-written function, or
a plan's `annotate` of the blockIdx-bound loop with the same key, which lower-opaque-block lifts
onto the function. split-host-device gives the attribute to every kernel the function launches,
and every reader (the CUDA C and NVPTX backends, the CUDA runtime, the interpreter) asks
`cluster_dims` for it. The blocks of a cluster are consecutive in the grid: block (bx, by, bz)
is in cluster (bx // x, by // y, bz // z), at rank `bx % x + x * (by % y + y * (bz % z))`.
"""

from __future__ import annotations

from tirc.diagnostics import DiagnosticError, Note, Span
from tirc.ir import expr as E
from tirc.ir.function import PrimFunc
from tirc.ir.functor import walk
from tirc.ir.node import Node
from tirc.ir.target import arch_number

CLUSTER_ATTR = "cluster_dims"
FIRST_ARCH = 90  # sm_90: the first with clusters
# The most blocks a cluster may hold on every GPU that has clusters (CUDA's "portable" size);
# sm_90 allows 16 only after the kernel opts in with cudaFuncAttributeNonPortableClusterSizeAllowed,
# which tirc does not do.
PORTABLE_CLUSTER_SIZE = 8

# The cluster intrinsics (registered in tirc.ir.intrinsics): the block's rank in its cluster and
# the cluster's size, the block's coordinates in its cluster and the cluster's in the grid
# (axis "x", "y" or "z"), the two halves of the cluster barrier, and distributed shared memory.
RANK_OPS = ("ptx_cluster_ctarank", "ptx_cluster_nctarank")
AXIS_OPS = ("ptx_cluster_ctaid", "ptx_cluster_nctaid", "ptx_clusterid", "ptx_nclusterid")
BARRIER_OPS = ("ptx_barrier_cluster_arrive", "ptx_barrier_cluster_wait")
MAP_SHARED = "ptx_map_shared_cluster"
MULTICAST = "ptx_tma_load_multicast"  # a TMA load into several blocks (tirc.ir.tma)
CLUSTER_OPS = frozenset((*RANK_OPS, *AXIS_OPS, *BARRIER_OPS, MAP_SHARED, MULTICAST))
AXES = ("x", "y", "z")
# each register call's PTX special register (an axis op's takes ".x", ".y" or ".z")
REGISTERS = {
    "ptx_cluster_ctarank": "cluster_ctarank",
    "ptx_cluster_nctarank": "cluster_nctarank",
    "ptx_cluster_ctaid": "cluster_ctaid",
    "ptx_cluster_nctaid": "cluster_nctaid",
    "ptx_clusterid": "clusterid",
    "ptx_nclusterid": "nclusterid",
}

Dims = tuple[int, int, int]


def cluster_dims(func: PrimFunc) -> Dims | None:
    """The function's cluster shape, or None without one; a located error when the attribute
    is not three positive integers or asks for more blocks than a cluster may hold."""
    value = func.attrs.get(CLUSTER_ATTR)
    return None if value is None else parse_dims(value, function_span(func))


def parse_dims(value: object, where: Span | None) -> Dims:
    """A cluster shape written as an attribute or annotation value; a located error when it is
    not three positive integers or asks for more blocks than a cluster may hold."""
    items = value if isinstance(value, (tuple, list)) else (value,)
    dims = [_integer(item) for item in items]
    if len(dims) != 3 or any(d is None or d < 1 for d in dims):
        raise DiagnosticError.at(
            where,
            f'"{CLUSTER_ATTR}" must be three positive integers (x, y, z), not {value!r}',
            Note('for example T.func_attr({"cluster_dims": [2, 1, 1]})'),
        )
    x, y, z = (int(d) for d in dims if d is not None)
    if x * y * z > PORTABLE_CLUSTER_SIZE:
        raise DiagnosticError.at(
            where,
            f"a cluster of {x} x {y} x {z} = {x * y * z} blocks is more than the "
            f"{PORTABLE_CLUSTER_SIZE} that every GPU with clusters runs (the portable size)",
            Note("use at most 8 blocks a cluster"),
        )
    return (x, y, z)


def _integer(item: object) -> int | None:
    if isinstance(item, bool):
        return None
    if isinstance(item, int):
        return item
    if isinstance(item, E.IntImm):
        return item.value
    return None


def function_span(func: PrimFunc) -> Span | None:
    """Where to point at a function's cluster: its definition, or (a kernel split from one)
    its first launch."""
    return func.span if func.span is not None else func.body.span


def cluster_calls(body: Node) -> list[E.Call]:
    """The cluster intrinsic calls of some code, in order."""
    found: list[E.Call] = []

    def visit(node: Node) -> None:
        if isinstance(node, E.Call) and node.op in CLUSTER_OPS:
            found.append(node)

    walk(body, visit)
    return found


def check_cluster_arch(func: PrimFunc, arch: str) -> None:
    """A located error when `arch` predates clusters and the function has a cluster shape or
    calls a cluster intrinsic."""
    if arch_number(arch) >= FIRST_ARCH:
        return
    note = Note("compile with --target 'cuda -arch=sm_90a' (or sm_90)")
    if cluster_dims(func) is not None:
        raise DiagnosticError.at(
            function_span(func),
            f'thread-block clusters ("{CLUSTER_ATTR}") need sm_90 or later, but the target '
            f"is {arch}",
            note,
        )
    calls = cluster_calls(func.body)
    if calls:
        raise DiagnosticError.at(
            calls[0].span,
            f"T.{calls[0].op} needs sm_90 or later (thread-block clusters), but the target "
            f"is {arch}",
            note,
        )


def grid_remainder(grid: Dims, cluster: Dims) -> str | None:
    """Why a grid cannot be cut into clusters of this shape, or None when it can."""
    bad = [
        f"{axis} {size} is not a multiple of {step}"
        for axis, size, step in zip(AXES, grid, cluster, strict=True)
        if size % step
    ]
    if not bad:
        return None
    return (
        f"the grid {' x '.join(map(str, grid))} is not a whole number of "
        f"{' x '.join(map(str, cluster))} clusters ({', '.join(bad)})"
    )


def rank_in_cluster(block: Dims, cluster: Dims) -> int:
    """The rank of block (bx, by, bz) in its cluster (%cluster_ctarank)."""
    x, y, z = (index % size for index, size in zip(block, cluster, strict=True))
    return x + cluster[0] * (y + cluster[1] * z)


def call_axis(call: E.Call) -> str:
    """The axis ("x", "y" or "z") an axis register call names; a located error otherwise."""
    axis = call.args[0] if call.args else None
    if not (isinstance(axis, E.StringImm) and axis.value in AXES):
        raise DiagnosticError.at(
            call.span,
            f'T.{call.op} takes the axis "x", "y" or "z"',
            Note(f'for example T.{call.op}("x")'),
        )
    return axis.value


def special_register(call: E.Call) -> str:
    """The PTX special register a register call reads: `cluster_ctarank`, `clusterid.y`."""
    register = REGISTERS[call.op]
    return f"{register}.{call_axis(call)}" if call.op in AXIS_OPS else register

"""The intrinsic registry: every callable `T.name(...)` that is a Call in the IR.

The parser, printer, interpreter and backends all consult this one table: the name, how many
arguments, how the result dtype follows from them, whether the call has side effects, and,
for the few that print as operators (`<<`, `&`, ...), their infix spelling.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from tirc.ir import dtype as dt


class Effect(enum.Enum):
    PURE = "pure"  # a function of its arguments
    READ = "read"  # reads memory
    UPDATE = "update"  # writes memory or synchronizes
    OPAQUE = "opaque"  # anything: extern calls


class Result(enum.Enum):
    """How a call's dtype is decided when the text does not spell it."""

    FIRST_ARG = "first_arg"  # dtype of the first argument (math functions)
    BOOL = "bool"  # bool with the first argument's lanes (isnan, ...)
    EXPLICIT = "explicit"  # written as the call's first argument (call_extern("int32", ...))
    INT32 = "int32"  # builtins returning a status or nothing useful
    HANDLE = "handle"  # pointers (tvm_access_ptr, address_of)
    SECOND_ARG = "second_arg"  # if_then_else: the value's dtype


@dataclass(frozen=True, slots=True)
class Intrinsic:
    name: str
    min_args: int
    max_args: int | None  # None: variadic
    result: Result
    effect: Effect = Effect.PURE
    infix: str | None = None  # printed as `a <infix> b` (or prefix for one operand)
    doc: str = ""


_REGISTRY: dict[str, Intrinsic] = {}

# Result types of the explicit-result intrinsics that take no dtype argument (the parser
# fills them in, the printer leaves them out, the checker does not ask for them).
FIXED_RESULTS = {
    "tvm_warp_activemask": dt.UINT32,
    "ptx_commit_group": dt.VOID,
    "ptx_wait_group": dt.VOID,
}


def register(intrinsic: Intrinsic) -> Intrinsic:
    _REGISTRY[intrinsic.name] = intrinsic
    return intrinsic


def lookup(name: str) -> Intrinsic | None:
    return _REGISTRY.get(name)


def all_names() -> list[str]:
    return sorted(_REGISTRY)


def _math(names: str, arity: int = 1, result: Result = Result.FIRST_ARG) -> None:
    for name in names.split():
        register(Intrinsic(name, arity, arity, result, doc=f"elementwise {name}"))


_math(
    "exp exp2 exp10 log log2 log10 log1p expm1 sqrt rsqrt sin cos tan sinh cosh tanh "
    "asin acos atan asinh acosh atanh fabs floor ceil round nearbyint trunc erf sigmoid "
    "popcount clz"
)
_math("atan2 pow fmod hypot copysign nextafter ldexp", arity=2)
_math("isnan isinf isfinite", result=Result.BOOL)

for _name, _infix, _arity in (
    ("shift_left", "<<", 2),
    ("shift_right", ">>", 2),
    ("bitwise_and", "&", 2),
    ("bitwise_or", "|", 2),
    ("bitwise_xor", "^", 2),
    ("bitwise_not", "~", 1),
):
    register(Intrinsic(_name, _arity, _arity, Result.FIRST_ARG, infix=_infix))

register(Intrinsic("if_then_else", 3, 3, Result.SECOND_ARG, doc="evaluates one branch only"))
register(Intrinsic("likely", 1, 1, Result.FIRST_ARG))
register(Intrinsic("reinterpret", 2, 2, Result.EXPLICIT, doc="bit cast to the named dtype"))
register(Intrinsic("q_multiply_shift", 4, 4, Result.FIRST_ARG))
register(Intrinsic("q_multiply_shift_per_axis", 7, 7, Result.FIRST_ARG))
register(Intrinsic("assume", 1, 1, Result.BOOL))
register(Intrinsic("undef", 0, 0, Result.INT32))
# the hardware's vector length in units of 128 bits (SVE, RVV): lanes of a scalable vector
register(Intrinsic("vscale", 0, 0, Result.INT32, doc="scalable vector length / 128 bits"))

for _name, _effect in (
    ("call_extern", Effect.OPAQUE),
    ("call_pure_extern", Effect.PURE),
    ("call_llvm_intrin", Effect.OPAQUE),
    ("call_llvm_pure_intrin", Effect.PURE),
    ("call_intrin", Effect.OPAQUE),
):
    register(Intrinsic(_name, 2, None, Result.EXPLICIT, _effect))

for _name in ("vectorlow", "vectorhigh", "vectorcombine"):
    register(Intrinsic(_name, 2, 3, Result.EXPLICIT, doc="halves and joins of vectors"))
register(Intrinsic("type_annotation", 1, 1, Result.EXPLICIT, doc="a dtype as a value"))
register(Intrinsic("tvm_access_ptr", 5, 5, Result.HANDLE, Effect.READ))
register(Intrinsic("address_of", 1, 1, Result.HANDLE))
register(Intrinsic("tvm_storage_sync", 1, 3, Result.INT32, Effect.UPDATE))
register(Intrinsic("tvm_fill_fragment", 6, 6, Result.HANDLE, Effect.UPDATE))
register(Intrinsic("tvm_load_matrix_sync", 8, 8, Result.HANDLE, Effect.UPDATE))
register(Intrinsic("tvm_store_matrix_sync", 8, 8, Result.HANDLE, Effect.UPDATE))
register(Intrinsic("tvm_mma_sync", 8, 8, Result.HANDLE, Effect.UPDATE))
register(Intrinsic("tvm_bmma_sync", 8, 8, Result.HANDLE, Effect.UPDATE))
register(Intrinsic("tvm_thread_allreduce", 3, None, Result.HANDLE, Effect.UPDATE))
register(Intrinsic("tvm_warp_shuffle", 5, 5, Result.SECOND_ARG, Effect.READ))
register(Intrinsic("tvm_warp_shuffle_up", 5, 5, Result.SECOND_ARG, Effect.READ))
register(Intrinsic("tvm_warp_shuffle_down", 5, 5, Result.SECOND_ARG, Effect.READ))
register(Intrinsic("tvm_warp_activemask", 0, 0, Result.EXPLICIT, Effect.READ))
register(Intrinsic("ptx_mma", 14, None, Result.EXPLICIT, Effect.UPDATE))
register(Intrinsic("ptx_ldmatrix", 8, 8, Result.EXPLICIT, Effect.UPDATE))
register(Intrinsic("ptx_cp_async", 6, 7, Result.EXPLICIT, Effect.UPDATE))  # dtype first
register(Intrinsic("ptx_commit_group", 0, 0, Result.EXPLICIT, Effect.UPDATE))
register(Intrinsic("ptx_wait_group", 1, 1, Result.EXPLICIT, Effect.UPDATE))
register(Intrinsic("mma_store", 7, 7, Result.EXPLICIT, Effect.UPDATE))
register(Intrinsic("mma_fill", 4, 4, Result.EXPLICIT, Effect.UPDATE))
register(Intrinsic("ret", 1, 1, Result.FIRST_ARG, Effect.OPAQUE))

# Hopper warpgroup MMA (sm_90a; tirc.ir.wgmma says what the arguments mean)
register(Intrinsic("ptx_wgmma", 19, 19, Result.EXPLICIT, Effect.UPDATE, doc="wgmma.mma_async"))
for _name in (
    "ptx_wgmma_fence",
    "ptx_wgmma_commit_group",
    "ptx_wgmma_wait_group",
    "ptx_fence_proxy_async",
):
    _arity = int(_name.endswith("wait_group"))
    register(Intrinsic(_name, _arity, _arity, Result.EXPLICIT, Effect.UPDATE))
    FIXED_RESULTS[_name] = dt.VOID
FIXED_RESULTS["ptx_wgmma"] = dt.VOID
register(Intrinsic("ptx_setmaxnreg", 2, 2, Result.EXPLICIT, Effect.UPDATE, doc="setmaxnreg"))
FIXED_RESULTS["ptx_setmaxnreg"] = dt.VOID

# Named barriers (tirc.ir.named_barrier): bar.sync / bar.arrive of barrier `id` (1..15) among
# `count` threads, so that part of a block synchronizes without the rest.
for _name in ("ptx_bar_sync", "ptx_bar_arrive"):
    register(Intrinsic(_name, 2, 2, Result.EXPLICIT, Effect.UPDATE))
    FIXED_RESULTS[_name] = dt.VOID

# Hopper's mbarriers and TMA loads (tirc.ir.tma): a barrier is an element of a uint64 shared
# buffer, named by its data handle and index. (ptx_fence_proxy_async is registered above.)
for _name, _arity in (
    ("ptx_mbarrier_init", 3),  # bar, index, arrival count
    ("ptx_mbarrier_arrive", 2),
    ("ptx_mbarrier_arrive_expect_tx", 3),  # bar, index, transaction bytes
    ("ptx_mbarrier_wait", 3),  # bar, index, phase parity
    ("ptx_mbarrier_inval", 2),
    # cp.async.mbarrier.arrive.noinc: bar, index; arrives once the thread's cp.asyncs land
    ("ptx_mbarrier_arrive_cp_async", 2),
):
    register(Intrinsic(_name, _arity, _arity, Result.EXPLICIT, Effect.UPDATE))
    FIXED_RESULTS[_name] = dt.VOID
register(Intrinsic("ptx_tma_load", 11, 23, Result.EXPLICIT, Effect.UPDATE))  # dtype first
# a load into the shared memory of the cluster's blocks in a mask (after the barrier's index)
register(Intrinsic("ptx_tma_load_multicast", 12, 24, Result.EXPLICIT, Effect.UPDATE))
register(Intrinsic("ptx_tma_store", 9, 21, Result.EXPLICIT, Effect.UPDATE))  # dtype first
for _name, _arity in (("ptx_tma_store_commit", 0), ("ptx_tma_store_wait", 1)):
    register(Intrinsic(_name, _arity, _arity, Result.EXPLICIT, Effect.UPDATE))
    FIXED_RESULTS[_name] = dt.VOID

# Thread-block clusters (sm_90; tirc.ir.cluster): the block's rank in its cluster and the
# cluster's size; a block's coordinate in its cluster, the cluster's shape, the cluster's
# coordinate in the grid and the grid's shape in clusters, each along one axis ("x", "y", "z");
# the cluster barrier's two halves; and a peer block's address of a shared array.
for _name, _arity in (
    ("ptx_cluster_ctarank", 0),
    ("ptx_cluster_nctarank", 0),
    ("ptx_cluster_ctaid", 1),
    ("ptx_cluster_nctaid", 1),
    ("ptx_clusterid", 1),
    ("ptx_nclusterid", 1),
):
    register(Intrinsic(_name, _arity, _arity, Result.INT32, Effect.READ))
for _name in ("ptx_barrier_cluster_arrive", "ptx_barrier_cluster_wait"):
    register(Intrinsic(_name, 0, 0, Result.EXPLICIT, Effect.UPDATE))
    FIXED_RESULTS[_name] = dt.VOID
register(
    Intrinsic("ptx_map_shared_cluster", 2, 2, Result.HANDLE, Effect.READ, doc="mapa")
)  # a shared array's data, the peer block's rank

# The host side of TVM's packed-function ABI, and profiling hooks: what TVM's host code and
# its tests print. tirc reads and prints them; its backends have their own C ABI and refuse
# them with a located error, as the interpreter does.
for _name, _low, _high, _result, _effect in (
    ("call_packed", 1, None, Result.INT32, Effect.OPAQUE),  # name, arguments
    ("call_cpacked", 1, None, Result.INT32, Effect.OPAQUE),
    ("call_packed_lowered", 1, None, Result.INT32, Effect.OPAQUE),  # name, stack, begin, end
    ("call_cpacked_lowered", 1, None, Result.INT32, Effect.OPAQUE),
    ("tvm_struct_get", 4, 4, Result.EXPLICIT, Effect.READ),  # handle, index, field, dtype
    ("tvm_struct_set", 4, 4, Result.INT32, Effect.UPDATE),  # handle, index, field, value
    ("tvm_stack_alloca", 2, 2, Result.HANDLE, Effect.UPDATE),  # kind, count
    ("tvm_stack_make_shape", 0, None, Result.HANDLE, Effect.UPDATE),
    ("tvm_stack_make_array", 6, 6, Result.HANDLE, Effect.UPDATE),
    ("isnullptr", 1, 1, Result.BOOL, Effect.PURE),
    ("ptr_byte_offset", 3, 3, Result.HANDLE, Effect.PURE),  # pointer, bytes, element type
    ("handle_add_byte_offset", 2, 2, Result.HANDLE, Effect.PURE),  # pointer, bytes
    ("start_profile_intrinsic", 1, 1, Result.EXPLICIT, Effect.OPAQUE),
    ("end_profile_intrinsic", 1, 1, Result.EXPLICIT, Effect.OPAQUE),
):
    register(Intrinsic(_name, _low, _high, _result, _effect))
FIXED_RESULTS["start_profile_intrinsic"] = dt.VOID
FIXED_RESULTS["end_profile_intrinsic"] = dt.VOID
# the result dtype written as the last argument, not the first
DTYPE_LAST = frozenset({"tvm_struct_get"})
# a loop partition hint: the condition itself, which loop partitioning leaves alone
register(Intrinsic("ignore_loop_partition", 1, 1, Result.BOOL))

# Instructions of TVM 0.27's table-driven `T.ptx` namespace (operands, then one string per
# modifier slot), and its `T.cuda` helpers. Those that are tirc's own intrinsics in TVM's
# spelling (tirc.ir.tvm_spelling: `T.ptx.cp("async", "commit_group", "")` is
# ptx_commit_group) read as tirc's; the others are read and printed back, run and compiled by
# nothing.
for (
    _family
) in "cp griddepcontrol add sub mul max min wgmma fence setmaxnreg bar barrier mbarrier".split():
    _name = f"ptx.{_family}"
    register(Intrinsic(_name, 1, None, Result.EXPLICIT, Effect.OPAQUE, doc="a T.ptx instruction"))
    FIXED_RESULTS[_name] = dt.VOID
# TVM's Metal simdgroup matrices (8 x 8 fragments in a "metal.simdgroup" buffer) and SIMD
# shuffles: read and printed back, run and compiled by nothing
for _name, _low, _high in (
    ("metal.make_filled_simdgroup_matrix", 3, 5),  # fragment, index, value[, columns, rows]
    ("metal.simdgroup_load", 4, 7),  # fragment, index, pointer, stride[, cols, rows, transpose]
    ("metal.simdgroup_store", 4, 7),
    ("metal.simdgroup_multiply_accumulate", 8, 8),  # (fragment, index) of d, a, b, c
):
    register(Intrinsic(_name, _low, _high, Result.EXPLICIT, Effect.OPAQUE))
    FIXED_RESULTS[_name] = dt.VOID
for _name in ("metal.simd_shuffle", "metal.simd_shuffle_up", "metal.simd_shuffle_down"):
    register(Intrinsic(_name, 2, 2, Result.FIRST_ARG, Effect.READ))  # value, lane or delta
register(Intrinsic("cuda.mbarrier_wait", 2, 2, Result.EXPLICIT, Effect.UPDATE))  # address, parity
FIXED_RESULTS["cuda.mbarrier_wait"] = dt.VOID
register(Intrinsic("cuda.mov_sreg", 2, 2, Result.INT32, Effect.READ))  # bits, "%register"
# a generic address as a 32-bit shared-window one (what TVM wraps a barrier's address in)
register(Intrinsic("cuda.cvta_generic_to_shared", 1, 1, Result.EXPLICIT, Effect.PURE))
FIXED_RESULTS["cuda.cvta_generic_to_shared"] = dt.UINT32

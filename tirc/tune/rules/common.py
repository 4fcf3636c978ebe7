"""Steps several rules end with: vectorize a block's innermost loop, sample an unroll depth."""

from __future__ import annotations

from functools import cache

import llvmlite.binding as llvm

from tirc.schedule.sref import SRef
from tirc.tune.builder import PlanBuilder, loop_extent

UNROLL_DEPTHS = [0, 16, 64, 512]


@cache
def host_features() -> frozenset[str]:
    """The host CPU's features as LLVM names them (`+avx512f`, `+avx512vnni`)."""
    llvm.initialize_native_target()
    return frozenset(llvm.get_host_cpu_features().flatten().split(","))


def vector_lanes() -> int:
    """float32 lanes of the host's widest vectors (16 with AVX-512, 8 with AVX2, else 4): the
    innermost tiles a random draw prefers are their multiples."""
    features = host_features()
    if "+avx512f" in features:
        return 16
    if "+avx2" in features:
        return 8
    return 4


MAX_VECTOR = 64  # lanes of one vectorized loop: a wider one is split first


def vectorize_innermost(builder: PlanBuilder, block: SRef) -> None:
    """Vectorize the block's innermost loop; one of more than MAX_VECTOR iterations (a
    write-back after the outermost tile level covers the whole tile) is split first and only
    its inner part, the largest divisor up to MAX_VECTOR, is vectorized: a vector of hundreds
    of lanes, strided on one side, makes LLVM spend minutes and gigabytes on shuffles."""
    loops = builder.get_loops(block)
    if not loops:
        return
    innermost = loops[-1]
    extent = loop_extent(innermost)
    if extent is not None and extent > MAX_VECTOR:
        width = max(d for d in range(1, MAX_VECTOR + 1) if extent % d == 0)
        _, innermost = builder.split(innermost, [None, width])
    builder.run("vectorize", loop=innermost)


def annotate_unroll(builder: PlanBuilder, loop: SRef) -> None:
    """pragma_auto_unroll_max_step on `loop`: the unroll pass unrolls inner loops up to that
    many iterations in all (0: none)."""
    depth = builder.sample_choice(UNROLL_DEPTHS)
    if depth.value:
        builder.run("annotate", target=loop, key="pragma_auto_unroll_max_step", value=depth)

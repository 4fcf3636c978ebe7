"""Steps several rules end with: vectorize a block's innermost loop, sample an unroll depth."""

from __future__ import annotations

from functools import cache

import llvmlite.binding as llvm

from tirc.schedule.sref import SRef
from tirc.tune.builder import PlanBuilder

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


def vectorize_innermost(builder: PlanBuilder, block: SRef) -> None:
    loops = builder.get_loops(block)
    if loops:
        builder.run("vectorize", loop=loops[-1])


def annotate_unroll(builder: PlanBuilder, loop: SRef) -> None:
    """pragma_auto_unroll_max_step on `loop`: the unroll pass unrolls inner loops up to that
    many iterations in all (0: none)."""
    depth = builder.sample_choice(UNROLL_DEPTHS)
    if depth.value:
        builder.run("annotate", target=loop, key="pragma_auto_unroll_max_step", value=depth)

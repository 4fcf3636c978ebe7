"""Design-space rules: each turns one block of the program into schedule steps.

A rule looks at a block (its iterators, its loops, what it reads and writes) through the
PlanBuilder, decides whether it applies, and if so schedules the block, drawing every choice
from the builder's sampler. `apply` returns the names of the blocks it scheduled (the block
and the ones it made, such as a write cache), or None where it does not apply. The rules of
one target run in their order on every block not yet scheduled; docs/tune.md lists which
programs each one covers.
"""

from __future__ import annotations

from collections.abc import Callable

from tirc.tune.builder import PlanBuilder
from tirc.tune.rules import (
    auto_bind,
    auto_inline,
    cross_thread_reduction,
    gpu_tiling,
    multi_level_tiling,
    parallel_vectorize_unroll,
    random_compute_location,
    rfactor,
    tensor_core,
    tensorize,
)

Rule = Callable[[PlanBuilder, str], "list[str] | None"]


def rules_for(target: str) -> tuple[tuple[str, Rule], ...]:
    """The rules for `target` ('cpu' or 'cuda'), by name, in the order they are tried."""
    if target == "cuda":
        return (
            ("auto-inline", auto_inline.apply),
            ("tensor-core", tensor_core.apply),
            ("gpu-multi-level-tiling", gpu_tiling.apply),
            ("cross-thread-reduction", cross_thread_reduction.apply),
            ("auto-bind", auto_bind.apply),
        )
    return (
        ("auto-inline", auto_inline.apply),
        ("tensorize", tensorize.apply),
        ("multi-level-tiling", multi_level_tiling.apply),
        ("rfactor", rfactor.apply),
        ("random-compute-location", random_compute_location.apply),
        ("parallel-vectorize-unroll", parallel_vectorize_unroll.apply),
    )

"""What CI's 20 minutes on 2 cores hold, and what only `make test-sweep` runs.

Tests that check every conformance case (nvcc and ptxas on its CUDA, the interpreter on its
lowering, the tuner, the round trip after each pass, the fake driver) run the cases below only
in the sweep. They are the costliest cases of the shared corpus: measured with
`pytest -m "slow and not sweep" --durations=120` (session 14), each took over 50 s summed over
those tests on a loaded 2-core machine, together a fifth of the slow run. Each kind of program
they hold (Winograd, 3-D and depthwise convolutions, capsule, dp4a, the dequantized matmul)
keeps a smaller relative in CI.
"""

from __future__ import annotations

from typing import Any

import pytest

HEAVY_CASES = frozenset(
    {
        "test_meta_schedule_trace_apply__test_winograd_gpu__0",
        "test_meta_schedule_trace_apply__test_winograd_gpu__1",
        "test_meta_schedule_space_cuda__test_cuda_c3d__0",
        "test_meta_schedule_space_cuda__test_cuda_dep__0",
        "test_meta_schedule_space_cuda__test_cuda_tbg__0",
        "test_meta_schedule_space_cuda__test_cuda_c1d__0",
        "test_meta_schedule_space_cuda__test_cuda_dil__0",
        "test_meta_schedule_space_cuda__test_cuda_cbr__0",
        "test_meta_schedule_schedule_rule_mlt_intrin__test_dp4a_dense__0",
        "test_meta_schedule_space_cpu__test_cpu_cap__0",
        "test_meta_schedule_space_cpu__test_cpu_cap__1",
        "test_meta_schedule_space_cpu__test_cpu_cap__2",
        "test_gpu_matmul__test_fused_dequant_matmul_android__0",
        "test_tir_schedule_cache_read_write__test_symbolic_matmul_blocked_cache_write_block_obj__0",
    }
)


def case_marks(name: str) -> list[Any]:
    """The marks a corpus-wide test gives case `name`: `sweep` for the heavy ones."""
    return [pytest.mark.sweep] if name in HEAVY_CASES else []

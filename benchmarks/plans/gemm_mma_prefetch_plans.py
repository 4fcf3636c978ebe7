"""Writes benchmarks/plans/gemm_mma_*_prefetch.plan.json: candidates for samples/gpu/gemm_mma.tir
that load the next k tile's first fragments before the last k step's products, as CUTLASS's
multistage mainloop does (register double buffering across the k tile boundary). Each is a
samples/gpu plan (samples/gpu/gemm_mma_plans.py) with two pipelines:

- the k steps of a tile (`uk1`): ldmatrix A, ldmatrix B, the products, the loads one step
  ahead (stages [0, 0, 1]), so inject-software-pipeline makes it a prologue (the first step's
  fragments), a body and an epilogue (the last step's products);
- the k tiles (`uk0`): copy A, copy B, and those three parts, as TVM names a nested pipeline's
  statements: stages [0, 0, S - 1, S, S], order [1, 2, 3, 0, 4]. A time step is the body of
  tile t - S (its k steps but the last), the wait for tile t - S + 1 and one barrier, the
  copies of tile t into the version tile t - S read, the prologue of tile t - S + 1 (its first
  fragments, from the tile the wait retired), the epilogue of tile t - S (the last products):
  one barrier a k tile, and no k step waits on its own ldmatrix. The shared tiles keep S
  versions (the same memory as the plan without the prefetch), the fragments two.

    python benchmarks/plans/gemm_mma_prefetch_plans.py    # rewrites the plan files beside it
    tirc run samples/gpu/gemm_mma.tir --plan benchmarks/plans/gemm_mma_async3_prefetch.plan.json \\
        --target cuda -D M=4096 -D N=4096 -D K=4096 --check --bench
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

HERE = Path(__file__).parent
SAMPLES = HERE.parents[1] / "samples" / "gpu"

# name -> the samples/gpu plan options (gemm_mma_plans.plan), every one with the cp.async
# pipeline of `stages` shared versions
PLANS: dict[str, dict[str, Any]] = {
    "gemm_mma_async2_prefetch": {"stages": 2},
    "gemm_mma_async3_prefetch": {"stages": 3},
    "gemm_mma_async4_prefetch": {"stages": 4},
    "gemm_mma_bk64_async2_prefetch": {"bk": 64, "stages": 2},
    "gemm_mma_bk64_async3_prefetch": {"bk": 64, "stages": 3},
    "gemm_mma_8warps_bk64_async3_prefetch": {"wn": 4, "bk": 64, "stages": 3},
    "gemm_mma_async3_raster8_prefetch": {"stages": 3, "raster": 8},
    "gemm_mma_128x256_async3_raster8_prefetch": {"bn": 256, "wn": 4, "stages": 3, "raster": 8},
    "gemm_mma_128x256_async3_raster16_prefetch": {"bn": 256, "wn": 4, "stages": 3, "raster": 16},
    "gemm_mma_128x256_bk64_async3_raster8_prefetch": {
        "bn": 256,
        "wn": 4,
        "bk": 64,
        "stages": 3,
        "raster": 8,
    },
    "gemm_mma_bk64_async3_raster8_prefetch": {"bk": 64, "stages": 3, "raster": 8},
    "gemm_mma_bk64_async4_raster8_prefetch": {"bk": 64, "stages": 4, "raster": 8},
}


def _sample_plans() -> Any:
    spec = importlib.util.spec_from_file_location("gemm_mma_plans", SAMPLES / "gemm_mma_plans.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def prefetch_plan(stages: int, **options: Any) -> dict[str, object]:
    """The samples/gpu plan with the fragment pipeline's parts in the k tile's."""
    return _sample_plans().plan(swizzle=True, async_=True, prefetch=True, stages=stages, **options)


def main() -> None:
    for name, options in PLANS.items():
        text = json.dumps(prefetch_plan(**options), indent=1)
        (HERE / f"{name}.plan.json").write_text(text + "\n")


if __name__ == "__main__":
    main()

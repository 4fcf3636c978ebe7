"""matmul on the CPU backend vs numpy, in one run: 128³ (samples/matmul.tir with its plan) and
1024³ (samples/bench/matmul1024.tir with its plan), single- and multi-threaded, and the
whole-process time of compiling the matmul sample.
Not a test: `python benchmarks/bench_cpu_matmul.py`.

Thread counts are set per run through OMP_NUM_THREADS (tirc's code) and the BLAS thread
variables (numpy), each measured in a fresh process so that the settings take effect.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def measure(kernel: str, plan: str, n: int) -> dict[str, float]:
    """Runs in the child process: tirc's median and numpy's median for one size."""
    import numpy as np

    from tirc.driver.run_cpu import bench, jit_function
    from tirc.driver.schedule import apply_plan_file
    from tirc.text import parse

    module, _ = apply_plan_file(parse(Path(kernel).read_text(), name=kernel), plan)
    call = jit_function(module, "main", "cpu")
    rng = np.random.default_rng(0)
    a = rng.standard_normal((n, n), dtype=np.float32)
    b = rng.standard_normal((n, n), dtype=np.float32)
    c = np.zeros((n, n), np.float32)
    args = {"A": a, "B": b, "C": c}
    call(args)
    assert np.allclose(c, a @ b, rtol=1e-3, atol=1e-3)
    min_time = 1.0 if n >= 1024 else 0.3
    tirc = bench(lambda: call(args), min_time)
    out = np.empty_like(c)
    numpy = bench(lambda: np.matmul(a, b, out=out), min_time)
    flops = 2.0 * n**3
    return {
        "tirc_gflops": flops / tirc.median / 1e9,
        "numpy_gflops": flops / numpy.median / 1e9,
        "tirc_ms": tirc.median * 1e3,
        "numpy_ms": numpy.median * 1e3,
    }


def child(threads: int, kernel: str, plan: str, n: int) -> dict[str, float]:
    env = dict(os.environ, PYTHONPATH=str(ROOT), OMP_WAIT_POLICY="passive")
    env.update({name: str(threads) for name in THREAD_VARIABLES})
    code = (
        f"import json, sys; sys.path.insert(0, {str(ROOT / 'benchmarks')!r}); "
        f"from bench_cpu_matmul import measure; "
        f"print(json.dumps(measure({kernel!r}, {plan!r}, {n})))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    return json.loads(done.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def compile_time() -> float:
    from bench_kernels import matmul_sample_plan

    """Whole-process `tirc compile` of the matmul sample with its plan (best of 3)."""
    tirc = [sys.executable, "-m", "tirc"]
    probe = subprocess.run([*tirc, "compile", "--help"], capture_output=True, text=True)
    if probe.returncode != 0:  # the CLI does not have `compile` yet: use the driver directly
        tirc = [sys.executable, str(ROOT / "tests/codegen/compile_command.py")]
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        subprocess.run(
            [
                *tirc,
                "compile",
                str(ROOT / "samples/matmul.tir"),
                "--plan",
                matmul_sample_plan(),
                "-o",
                os.devnull,
            ],
            check=True,
            env=dict(os.environ, PYTHONPATH=str(ROOT)),
        )
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    from bench_kernels import matmul_sample_plan

    cores = os.cpu_count() or 1
    print(f"{cores} CPUs; medians; GFLOP/s (tirc / numpy)")
    for kernel, plan, n in (
        ("matmul.tir", Path(matmul_sample_plan()).name, 128),
        ("bench/matmul1024.tir", "bench/matmul1024.plan.json", 1024),
    ):
        for threads in sorted({1, cores}):
            r = child(threads, str(ROOT / "samples" / kernel), str(ROOT / "samples" / plan), n)
            print(
                f"matmul {n}³ {threads:>2} thread(s): tirc {r['tirc_gflops']:8.1f}  "
                f"numpy {r['numpy_gflops']:8.1f}  ratio {r['tirc_gflops'] / r['numpy_gflops']:.2f}"
                f"  ({r['tirc_ms']:.3f} ms vs {r['numpy_ms']:.3f} ms)"
            )
    print(f"tirc compile samples/matmul.tir --plan ...: {compile_time():.3f} s whole process")


if __name__ == "__main__":
    import argparse

    argparse.ArgumentParser(description=__doc__).parse_args()  # --help; no stray options
    main()

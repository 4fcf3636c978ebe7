"""`tirc tune` against numpy (OpenBLAS) and the hand plans, single-threaded, in one run.

For matmul 1024³ and conv2d 1x64x56x56 3x3 (samples/bench/), tunes a plan with
`tirc tune --threads 1` (a budget of trials and seconds per kernel; a plan given with --plans
DIR is used as it is instead), then measures, in one child process with one thread for
OpenMP and OpenBLAS: tirc with the tuned plan, tirc with the hand plan
(samples/bench/<name>.plan.json) and numpy; prints GFLOP/s and the ratios, and for matmul the
fraction of the host's FMA peak. By wall time and by CPU time: on a shared machine the CPU time
of one thread is what the kernel cost, and the ratios, measured in the same run, say more than
the absolute numbers.
Not a test: `python benchmarks/bench_tune.py [--trials N] [--time-budget S] [--plans DIR]`.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

from bench_kernels import BENCH, ROOT, WORKLOADS, Workload, environment, peak_fraction, rate

KERNELS = ("matmul1024", "conv2d56")


def tune(name: str, trials: int, budget: float, directory: Path, db: Path) -> tuple[Path, str]:
    plan = directory / f"{name}.tuned.plan.json"
    command = [
        sys.executable, "-m", "tirc", "tune", str(BENCH / f"{name}.tir"), "--threads", "1",
        "--trials", str(trials), "--time-budget", str(budget), "--db", str(db), "-o", str(plan),
    ]  # fmt: skip
    begin = time.perf_counter()
    done = subprocess.run(command, env=environment(1), capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"tirc tune failed on {name}:\n{done.stderr[-3000:]}")
    notes = [line for line in done.stderr.splitlines() if line.startswith(("note:", "best:"))]
    spent = time.perf_counter() - begin
    return plan, f"tuned in {spent:.0f} s: " + "; ".join(notes)


def measure(name: str, plans: dict[str, str], seconds: float) -> dict[str, dict[str, float]]:
    """In one child (one thread): measure_tirc with each plan (numpy measured each time)."""
    code = (
        f"import json, sys; sys.path.insert(0, {str(ROOT / 'benchmarks')!r}); "
        "from bench_kernels import measure_tirc; "
        f"plans = {json.dumps(plans)}; "
        f"print(json.dumps({{k: measure_tirc({name!r}, {seconds}, p) for k, p in plans.items()}}))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], env=environment(1), capture_output=True, text=True
    )
    if done.returncode != 0:
        raise SystemExit(f"measuring {name} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--trials", type=int, default=200)
    parser.add_argument("--time-budget", type=float, default=900.0)
    parser.add_argument("--plans", type=Path, default=None, help="tuned plans already made")
    parser.add_argument("--out", type=Path, default=Path("/tmp/tirc-bench-tune"))
    parser.add_argument("--seconds", type=float, default=2.0, help="timing per measurement")
    options = parser.parse_args()
    options.out.mkdir(parents=True, exist_ok=True)
    workloads: dict[str, Workload] = {w.name: w for w in WORKLOADS}
    for name in KERNELS:
        workload = workloads[name]
        given = options.plans / f"{name}.tuned.plan.json" if options.plans else None
        if given is not None and given.exists():
            tuned, how = given, f"plan from {given}"
        else:
            db = options.out / "tune.db"
            tuned, how = tune(name, options.trials, options.time_budget, options.out, db)
        print(f"{workload.title}: {how}", flush=True)
        hand = str(BENCH / f"{name}.plan.json")
        result = measure(name, {"tuned": str(tuned), "hand": hand}, options.seconds)
        for clock, key in (("wall time", ""), ("CPU time", "_cpu")):
            tuned_s, hand_s = result["tuned"][f"tirc{key}"], result["hand"][f"tirc{key}"]
            numpy_s = result["tuned"][f"numpy{key}"]
            print(
                f"  1 thread, by {clock}: tuned {rate(workload, tuned_s)}  hand plan "
                f"{rate(workload, hand_s)}  numpy {rate(workload, numpy_s)}  "
                f"tuned/numpy {numpy_s / tuned_s:.2f}  tuned/hand {hand_s / tuned_s:.2f}",
                flush=True,
            )
        if name.startswith("matmul"):
            print(peak_fraction(workload, result["tuned"]), flush=True)


if __name__ == "__main__":
    main()

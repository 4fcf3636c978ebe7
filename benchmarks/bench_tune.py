"""`tirc tune` against numpy (OpenBLAS), the hand plans and TVM 0.27's `ms.tune_tir`, one thread.

For matmul 1024³ and conv2d 1x64x56x56 3x3 (samples/bench/): tunes a plan with
`tirc tune --threads 1` (a budget of trials and seconds per kernel; a plan already in --plans
DIR is used as it is), and has TVM's MetaSchedule tune the same kernel with the same trial
budget (benchmarks/bench_tune_tvm.py in TVM's Python; a library already in --tvm-tuned DIR is
used as it is). Then measures, single-threaded (OpenMP, OpenBLAS and TVM's pool on one thread):
tirc with the tuned plan and with the hand plan (samples/bench/<name>.plan.json) and numpy, in
one child of this Python; TVM building the same hand plan and TVM's tuned library, in one child
of TVM's Python; every result checked against numpy first. --rounds rounds of both children,
the best median of each kept (the least disturbed on a shared machine). Prints a table per
kernel: GFLOP/s by wall and by CPU time (the CPU time of the one thread is what the kernel
cost, whatever else the machine ran), the fraction of one core's FMA peak (for the host's vector
width, at the clock measured by a dependent-multiply chain), and tirc tuned / each other.

Not a test: `python benchmarks/bench_tune.py [--trials N] [--time-budget S] [--plans DIR]
[--tvm-tuned DIR] [--rounds R]`; with `--plans benchmarks/tuned --tvm-tuned DIR` it only
measures.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from bench_kernels import (
    BENCH,
    ROOT,
    WORKLOADS,
    Workload,
    benchmarks_child,
    child_json,
    environment,
    fma_peak_gflops,
    measured_clock_ghz,
    tvm_python,
    vector_lanes,
)

KERNELS = ("matmul1024", "conv2d56")
TRIAL_LINE = re.compile(r"^trial (\d+)/(\d+) .* (\d+) s$")


def tune_tirc(name: str, trials: int, budget: float, directory: Path, db: Path) -> Path:
    """`tirc tune` (one thread, one candidate built at a time) into
    DIRECTORY/NAME.tuned.plan.json, and what it took into DIRECTORY/NAME.tuned.json (trials
    measured, seconds, the tuner's notes)."""
    plan = directory / f"{name}.tuned.plan.json"
    command = [
        sys.executable, "-m", "tirc", "tune", str(BENCH / f"{name}.tir"), "--threads", "1",
        "--workers", "local:1",  # one build at a time, as TVM's side: the machine is shared
        "--trials", str(trials), "--time-budget", str(budget), "--db", str(db), "-o", str(plan),
    ]  # fmt: skip
    begin = time.perf_counter()
    done = subprocess.run(command, env=environment(1), capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"tirc tune failed on {name}:\n{done.stderr[-3000:]}")
    lines = done.stderr.splitlines()
    counts = [match for line in lines if (match := TRIAL_LINE.match(line.strip()))]
    summary = {
        "kernel": name,
        "trials_asked": trials,
        "trials_measured": int(counts[-1].group(1)) if counts else None,
        "tuning_s": time.perf_counter() - begin,
        "time_budget_s": budget,
        "notes": [line for line in lines if line.startswith(("note:", "best:"))],
    }
    (directory / f"{name}.tuned.json").write_text(json.dumps(summary, indent=1) + "\n")
    return plan


def tune_tvm(python: str, name: str, trials: int, directory: Path) -> Path:
    """TVM's ms.tune_tir into DIRECTORY (NAME.tvm.so, its trace, NAME.tvm.json)."""
    command = [
        python, str(ROOT / "benchmarks" / "bench_tune_tvm.py"), name,
        "--trials", str(trials), "--out", str(directory),
    ]  # fmt: skip
    log = directory / f"{name}.tvm.log"
    with log.open("w") as file:
        done = subprocess.run(command, env=tvm_environment(), stdout=file, stderr=file)
    if done.returncode != 0:
        raise SystemExit(f"TVM's ms.tune_tir failed on {name}: see {log}")
    return directory / f"{name}.tvm.so"


def tvm_environment() -> dict[str, str]:
    env = environment(1)
    env.pop("PYTHONPATH")  # tirc's; TVM's Python has its own
    return env


def measure_tirc(name: str, plans: dict[str, str], seconds: float) -> dict[str, dict[str, float]]:
    """In one child (one thread): bench_kernels.measure_tirc with each plan (numpy measured
    each time)."""
    code = (
        "import json; from bench_kernels import measure_tirc; "
        f"plans = {json.dumps(plans)}; "
        f"print(json.dumps({{k: measure_tirc({name!r}, {seconds}, p) for k, p in plans.items()}}))"
    )
    failure = f"measuring {name} with tirc failed"
    result: dict[str, dict[str, float]] = child_json(
        benchmarks_child(code), environment(1), failure
    )
    return result


def measure_tvm(
    python: str, name: str, library: Path | None, seconds: float
) -> dict[str, dict[str, float]]:
    """In one child of TVM's Python (one thread): TVM with the hand plan and the tuned library."""
    command = [
        python, str(ROOT / "benchmarks" / "bench_tune_tvm.py"), name, "--time", str(seconds),
    ]  # fmt: skip
    if library is not None:
        command += ["--library", str(library)]
    failure = f"measuring {name} with TVM failed"
    result: dict[str, dict[str, float]] = child_json(command, tvm_environment(), failure)
    return result


def one_round(
    name: str, plans: dict[str, str], library: Path | None, python: str | None, seconds: float
) -> dict[str, tuple[float, float]]:
    """Wall and CPU seconds of each implementation, measured once."""
    tirc = measure_tirc(name, plans, seconds)
    times = {f"tirc {key}": (value["tirc"], value["tirc_cpu"]) for key, value in tirc.items()}
    times["numpy"] = min(
        ((value["numpy"], value["numpy_cpu"]) for value in tirc.values()), key=lambda t: t[1]
    )
    if python is not None:
        tvm = measure_tvm(python, name, library, seconds)
        times.update({f"TVM {key}": (value["median"], value["cpu"]) for key, value in tvm.items()})
    return times


def best_of(rounds: list[dict[str, tuple[float, float]]]) -> dict[str, tuple[float, float]]:
    """For each implementation the fastest wall median and the fastest CPU median of the
    rounds (each the least disturbed by the rest of the machine)."""
    return {
        key: (min(r[key][0] for r in rounds), min(r[key][1] for r in rounds)) for key in rounds[0]
    }


LABELS = {
    "tirc tuned": "tirc, tuned plan",
    "tirc hand": "tirc, hand plan (samples/bench)",
    "TVM hand": "TVM 0.27, the same hand plan",
    "TVM tuned": "TVM 0.27, ms.tune_tir's best",
    "numpy": "numpy (OpenBLAS)",
}


def table(workload: Workload, times: dict[str, tuple[float, float]], peak: float) -> list[str]:
    """A markdown table: GFLOP/s by wall and CPU time, % of the FMA peak, tirc tuned / each."""
    tuned_wall, tuned_cpu = times["tirc tuned"]
    lines = [
        "| implementation | GFLOP/s (wall) | GFLOP/s (CPU) | % of FMA peak (CPU) "
        "| tirc tuned / this (wall) | (CPU) |",
        "|---|---|---|---|---|---|",
    ]
    for key, label in LABELS.items():
        if key not in times:
            continue
        wall, cpu = times[key]
        label = f"{label[:-1]}, im2col)" if key == "numpy" and "conv" in workload.name else label
        lines.append(
            f"| {label} | {workload.flops / wall / 1e9:.1f} | {workload.flops / cpu / 1e9:.1f} "
            f"| {workload.flops / cpu / 1e9 / peak:.0%} | {wall / tuned_wall:.2f} "
            f"| {cpu / tuned_cpu:.2f} |"
        )
    return lines


def describe_tuning(path: Path, tuner: str) -> str:
    if not path.exists():
        return f"{tuner}: no record of its tuning ({path} missing)"
    summary: dict[str, Any] = json.loads(path.read_text())
    valid = summary.get("trials_valid")
    return (
        f"{tuner}: {summary.get('trials_measured')} trials measured of "
        f"{summary.get('trials_asked')} asked"
        + (f" ({valid} valid)" if valid is not None else "")
        + f", {summary.get('tuning_s', 0):.0f} s"
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--trials", type=int, default=256, help="budget of both tuners")
    parser.add_argument("--time-budget", type=float, default=1800.0, help="tirc tune's seconds")
    parser.add_argument("--plans", type=Path, help="tirc's tuned plans already made")
    parser.add_argument("--tvm-tuned", type=Path, help="TVM's tuned libraries already made")
    parser.add_argument("--out", type=Path, default=Path("/tmp/tirc-bench-tune"))
    parser.add_argument("--seconds", type=float, default=2.0, help="timing per measurement")
    parser.add_argument("--rounds", type=int, default=3, help="measurement rounds, best kept")
    parser.add_argument("--kernels", nargs="+", choices=KERNELS, default=list(KERNELS))
    parser.add_argument(
        "--tune-only", action="store_true", help="only tirc tune, into --out (no measuring)"
    )
    options = parser.parse_args()
    options.out.mkdir(parents=True, exist_ok=True)
    python = tvm_python()
    workloads = {w.name: w for w in WORKLOADS}
    clock, (lanes, isa) = measured_clock_ghz(), vector_lanes()
    peak = fma_peak_gflops(clock, lanes)
    print(
        f"{os.cpu_count()} CPUs, one thread; FMA peak of one core {peak:.0f} GFLOP/s ({isa}: "
        f"2 FMA x {lanes} lanes x 2 flops x {clock:.2f} GHz, the clock measured by a "
        f"dependent-multiply chain); best of {options.rounds} rounds",
        flush=True,
    )
    for name in options.kernels:
        workload = workloads[name]
        plan_dir = options.plans if options.plans else options.out
        tuned = plan_dir / f"{name}.tuned.plan.json"
        if not (options.plans and tuned.exists()):
            db = options.out / "tune.db"
            tuned = tune_tirc(name, options.trials, options.time_budget, options.out, db)
        if options.tune_only:
            print(describe_tuning(options.out / f"{name}.tuned.json", f"tirc tune {name}"))
            continue
        library: Path | None = None
        tvm_dir = options.tvm_tuned or options.out
        if python is not None:
            library = tvm_dir / f"{name}.tvm.so"
            if not library.exists():
                library = tune_tvm(python, name, options.trials, tvm_dir)
        print(f"\n{workload.title}", flush=True)
        print("  " + describe_tuning(plan_dir / f"{name}.tuned.json", "tirc tune"))
        if python is None:
            print("  TVM skipped: no TVM Python (set TIRC_BENCH_TVM_PYTHON)")
        else:
            print("  " + describe_tuning(tvm_dir / f"{name}.tvm.json", "TVM ms.tune_tir"))
        plans = {"tuned": str(tuned), "hand": str(BENCH / f"{name}.plan.json")}
        rounds = [
            one_round(name, plans, library, python, options.seconds) for _ in range(options.rounds)
        ]
        for row in table(workload, best_of(rounds), peak):
            print(row, flush=True)


if __name__ == "__main__":
    main()

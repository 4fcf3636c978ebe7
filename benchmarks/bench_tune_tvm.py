"""TVM 0.27's own tuner, `ms.tune_tir`, on a kernel of samples/bench/, run by TVM's Python.

`python bench_tune_tvm.py NAME --trials N --out DIR` (NAME: matmul1024 or conv2d56) tunes
samples/bench/NAME.tir for this CPU with MetaSchedule's defaults (post-order-apply design
space, evolutionary search, xgboost cost model) and a budget of N trials, one thread
throughout: the target says one core (so the rules size parallel loops for one), every
measurement runs with TVM_NUM_THREADS=1, one builder process and one runner process at a
time, one core for the search, so that it does not swamp a shared machine. The runner times a
candidate by CPU time, as tirc tune does (--wall-time: TVM's own wall-clock timing). Writes
into DIR: NAME.tvm.so (the best schedule built, `export_library`), NAME.tvm.trace.txt (its
trace as Python schedule calls; .txt, so that no linter reads it), NAME.tvm.trace.json (the
trace as JSON), NAME.tvm.tir (the scheduled program) and NAME.tvm.json (trials measured,
tuning seconds, the best measured seconds); MetaSchedule's work directory and logs go to
DIR/NAME.tvm-work/.
`python bench_tune_tvm.py NAME --time SECONDS [--library NAME.tvm.so]` times, in this one
process and one thread, TVM building tirc's hand plan (samples/bench/NAME.plan.json, replayed
by tvm_worker.py) and the tuned library, each checked against numpy first; prints one JSON line
of median wall and CPU seconds. `benchmarks/bench_tune.py` runs both modes.
Not a test; never imported by tirc.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

os.environ["TVM_NUM_THREADS"] = "1"  # before tvm is imported: its thread pool reads it once

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "samples" / "bench"
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_kernels import numpy_reference, timings  # noqa: E402 (plain numpy and timing)
from tvm_worker import build  # noqa: E402


def one_core_target() -> object:
    import tvm

    cpu = tvm.target.codegen.llvm_get_system_cpu()
    return tvm.target.Target({"kind": "llvm", "mcpu": cpu, "num-cores": 1})


def import_intrinsics() -> None:
    """Each builder process's start: MetaSchedule's build function imports TVM's tensor
    intrinsics, which takes 30-60 s on this machine, and the builder restarts its process for
    every batch, so the first candidate of each batch hit the 30 s build timeout (all of the
    first batch failed). Imported here, the start is not counted against a candidate."""
    import tvm.s_tir.tensor_intrin  # noqa: F401


def run_by_cpu_time(module: Any, device: Any, config: Any, repeated_args: list[Any]) -> list[float]:
    """MetaSchedule's runner timing, by the CPU time of the runner's process instead of the
    wall clock: `config.repeat` costs, each the CPU seconds per call over `config.number`
    calls or more, at least `config.min_repeat_ms` of them, after a warm-up call. tirc tune
    times a one-thread candidate by its thread's CPU time; on a shared, loaded machine TVM's
    wall-clock timing would pick winners by luck. Runs in the runner's process (pickled)."""
    import time

    main = module[module.entry_name]
    costs = []
    for args in repeated_args:
        main(*args)
        for _ in range(config.repeat):
            calls, begin = 0, time.process_time()
            while calls < config.number or time.process_time() - begin < config.min_repeat_ms / 1e3:
                main(*args)
                calls += 1
            costs.append((time.process_time() - begin) / calls)
    return costs


def tune(name: str, trials: int, out: Path, seed: int, cpu_time: bool) -> dict[str, object]:
    import tvm
    from tvm.s_tir import meta_schedule as ms

    module = tvm.script.from_source((BENCH / f"{name}.tir").read_text())
    target = one_core_target()
    work = out / f"{name}.tvm-work"
    begin = time.perf_counter()
    database = ms.tune_tir(
        module,
        target,
        str(work),
        max_trials_global=trials,
        num_trials_per_iter=64,
        builder=ms.builder.LocalBuilder(max_workers=1, initializer=import_intrinsics),
        runner=ms.runner.LocalRunner(
            evaluator_config=ms.runner.EvaluatorConfig(number=3, repeat=1, min_repeat_ms=100),
            f_run_evaluator=run_by_cpu_time if cpu_time else None,
        ),
        num_tuning_cores=1,
        seed=seed,
    )
    spent = time.perf_counter() - begin
    records = database.get_all_tuning_records()
    measured = [
        [float(seconds) for seconds in record.run_secs]
        for record in records
        if record.run_secs is not None and len(record.run_secs) > 0
    ]
    valid = [sum(run) / len(run) for run in measured if all(s < 1e9 for s in run)]
    schedule = ms.tir_integration.compile_tir(database, module, target)
    if schedule is None:
        raise SystemExit(f"{name}: ms.tune_tir found no valid schedule in {len(records)} trials")
    library = tvm.compile(schedule.mod, target=target)
    library.export_library(str(out / f"{name}.tvm.so"))
    (out / f"{name}.tvm.trace.txt").write_text(str(schedule.trace) + "\n")
    (out / f"{name}.tvm.tir").write_text(schedule.mod.script() + "\n")
    (out / f"{name}.tvm.trace.json").write_text(json.dumps(schedule.trace.as_json(), default=str))
    summary = {
        "kernel": name,
        "trials_asked": trials,
        "trials_measured": len(records),
        "trials_valid": len(valid),
        "tuning_s": spent,
        "best_measured_s": min(valid) if valid else None,
        "target": str(target),
        "seed": seed,
        "timing": "CPU time" if cpu_time else "wall time (TVM's time_evaluator)",
    }
    (out / f"{name}.tvm.json").write_text(json.dumps(summary, indent=1) + "\n")
    return summary


def time_call(name: str, main: Any, seconds: float) -> dict[str, float]:
    """One checked call on random inputs (those of bench_kernels: standard normal from seed 0,
    parameter after parameter), then the median wall and CPU seconds of a call."""
    import numpy as np
    import tvm

    module = tvm.script.from_source((BENCH / f"{name}.tir").read_text())
    func = module["main"]
    rng = np.random.default_rng(0)
    names, arrays = [], []
    for param in func.params:  # in TVM 0.27 a parameter is its buffer
        shape = [int(extent) for extent in param.shape]
        names.append(param.name)
        arrays.append(tvm.runtime.tensor(rng.standard_normal(shape).astype(param.dtype)))
    main(*arrays)
    inputs = {key: array.numpy() for key, array in zip(names, arrays, strict=True)}
    output, reference = numpy_reference(name, inputs)
    want = np.empty_like(inputs[output])
    reference(want)
    if not np.allclose(inputs[output], want, rtol=1e-3, atol=1e-3):
        raise SystemExit(f"{name}: TVM's result differs from numpy's")
    wall, cpu = timings(lambda: main(*arrays), seconds)
    return {"median": wall, "cpu": cpu}


def time_both(name: str, seconds: float, library: Path | None) -> dict[str, dict[str, float]]:
    """TVM with tirc's hand plan, and the tuned library when one is given."""
    import tvm

    plan = str(BENCH / f"{name}.plan.json")
    results = {"hand": time_call(name, build(str(BENCH / f"{name}.tir"), plan)["main"], seconds)}
    if library is not None:
        results["tuned"] = time_call(name, tvm.runtime.load_module(str(library))["main"], seconds)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("name", choices=("matmul1024", "conv2d56"))
    parser.add_argument("--trials", type=int, help="tune with this budget")
    parser.add_argument("--out", type=Path, help="where tuning writes")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--wall-time", action="store_true", help="TVM's own runner timing (default: CPU time)"
    )
    parser.add_argument("--time", type=float, metavar="SECONDS", help="time instead of tuning")
    parser.add_argument("--library", type=Path, help="the tuned library to time")
    options = parser.parse_args()
    if options.time is not None:
        print(json.dumps(time_both(options.name, options.time, options.library)), flush=True)
        return
    if options.trials is None or options.out is None:
        parser.error("tuning needs --trials and --out (or --time to time)")
    options.out.mkdir(parents=True, exist_ok=True)
    print(
        json.dumps(
            tune(options.name, options.trials, options.out, options.seed, not options.wall_time)
        ),
        flush=True,
    )


if __name__ == "__main__":
    main()

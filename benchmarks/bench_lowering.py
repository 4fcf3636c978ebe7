"""Lowering time: the default pipeline on scheduled samples, in-process CPU time (median of
`--repeat` runs, parsing and scheduling not counted), and TVM 0.27's lowering of the same
kernels with the same schedules for comparison.

    python benchmarks/bench_lowering.py [--repeat 7] [--tvm /work/tvm-venv/bin/python]

TVM's side (run by its own Python; tirc never imports TVM) replays tirc's readable plan with
`tvm_worker.replay` and times the lowering phase of `tvm.tirx.build`: bind the target and run
the default TIR pipeline for it (the s_tir pipeline, up to MakePackedAPI).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "samples"

# (label, kernel, plan, target); the plans are readable ones, so TVM can replay them too
KERNELS = [
    ("bench/matmul1024", "bench/matmul1024.tir", "bench/matmul1024.plan.json", "cpu"),
    ("matmul (cpu)", "matmul.tir", "matmul.cpu.plan.json", "cpu"),
    ("gpu/matmul (cuda)", "gpu/matmul.tir", "gpu/matmul.plan.json", "cuda"),
]

TVM_SIDE = textwrap.dedent(
    """
    import json, statistics, sys, time
    sys.path.insert(0, {benchmarks!r})
    import tvm
    from tvm import s_tir
    from tvm_worker import replay

    kernel, plan, target_kind, repeat = {kernel!r}, {plan!r}, {target!r}, {repeat}
    module = tvm.script.from_source(open(kernel).read())
    schedule = s_tir.Schedule(module)
    steps = json.load(open(plan))
    for step in steps["steps"]:  # tirc's readable `bind` names its thread `thread`
        if step["op"] == "bind" and "thread" in step:
            step["thread_axis"] = step.pop("thread")
    replay(schedule, steps)
    scheduled = schedule.mod
    if target_kind == "cuda":
        target = tvm.target.Target({{"kind": "cuda", "arch": "sm_90"}}, host="llvm")
    else:
        target = tvm.target.Target({{"kind": "llvm"}})
        target = target.with_host(target)

    def lower():
        mod = tvm.tirx.transform.BindTarget(target)(scheduled)
        pipeline, host_passes, device_passes = tvm.tirx.get_default_tir_pipeline(target)
        pipeline(mod)

    times = []
    for _ in range(repeat):
        begin = time.process_time()
        lower()
        times.append(time.process_time() - begin)
    print(json.dumps(statistics.median(times)))
    """
)


def tirc_seconds(kernel: Path, plan: Path, target: str, repeat: int) -> float:
    from tirc.driver.schedule import apply_plan_file
    from tirc.text import parse
    from tirc.transform import default_pipeline
    from tirc.transform.runner import run_pipeline

    scheduled, _ = apply_plan_file(parse(kernel.read_text(), name=str(kernel)), str(plan))
    passes = default_pipeline(target).passes
    times = []
    for _ in range(repeat):
        begin = time.process_time()
        run_pipeline(scheduled, passes)
        times.append(time.process_time() - begin)
    return statistics.median(times)


def tvm_seconds(python: str, kernel: Path, plan: Path, target: str, repeat: int) -> float | None:
    code = TVM_SIDE.format(
        benchmarks=str(ROOT / "benchmarks"),
        kernel=str(kernel),
        plan=str(plan),
        target=target,
        repeat=repeat,
    )
    done = subprocess.run([python, "-c", code], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        print(done.stderr.strip().splitlines()[-1:], file=sys.stderr)
        return None
    return float(json.loads(done.stdout.strip().splitlines()[-1]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument(
        "--tvm", default="/work/tvm-venv/bin/python", help="TVM's Python ('' skips)"
    )
    args = parser.parse_args()
    print(f"{'kernel':<22} {'tirc lower (s)':>15} {'TVM lower (s)':>14}")
    for label, kernel, plan, target in KERNELS:
        mine = tirc_seconds(SAMPLES / kernel, SAMPLES / plan, target, args.repeat)
        theirs = (
            tvm_seconds(args.tvm, SAMPLES / kernel, SAMPLES / plan, target, args.repeat)
            if args.tvm
            else None
        )
        shown = "n/a" if theirs is None else f"{theirs:.4f}"
        print(f"{label:<22} {mine:>15.4f} {shown:>14}")


if __name__ == "__main__":
    main()

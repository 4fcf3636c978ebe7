"""Same plan, another CPU: tirc against TVM 0.27 with the same plans, compiled for this CPU
and for another x86 CPU (default znver3: AVX2, 16 vector registers), single-threaded, with
the stack traffic of each hot loop.

For each plan (matmul 1024³ and conv2d 1x64x56x56 3x3: the samples/bench plans and the
others in benchmarks/plans, matmul 8x64 too large even for AVX-512's registers) and each
`-mcpu`, a tirc child (`cpu -mcpu=NAME`) and a TVM child (`llvm -mcpu=NAME`,
benchmarks/tvm_worker.py) each time the kernel; the assembly of both is read for its hot
loop (tirc.codegen.llvm.spills: the innermost loop with the most multiply-adds) and its
vector spills, reloads and copies. An AVX2 build runs on an AVX-512 host, so one machine
measures both. Printed per row: GFLOP/s by CPU time (the time the single thread actually
ran, which other load on a shared machine disturbs less than wall time), `spills+reloads
(copies)` of the hot loop, and tirc/TVM (> 1: tirc is faster); with --before, also tirc
without register_tile's split, in the same run.

Not a test: `python benchmarks/bench_cpu_targets.py [--mcpu znver3 --mcpu native]
[--repeat N] [--seconds S] [--only NAME] [--before]`.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_kernels import (  # noqa: E402 (benchmarks/ is not a package)
    BENCH,
    ROOT,
    benchmarks_child,
    checked_arguments,
    child_json,
    environment,
    parameter_shapes,
    timings,
    tvm_python,
)

PLANS = ROOT / "benchmarks" / "plans"


@dataclass(frozen=True)
class Case:
    label: str
    kernel: str  # samples/bench/<kernel>.tir
    plan: Path
    flops: float


MATMUL_FLOPS = 2.0 * 1024**3
CONV_FLOPS = 2.0 * 64 * 56 * 56 * 64 * 9
CASES = (
    Case("matmul 8x32 (bench)", "matmul1024", BENCH / "matmul1024.plan.json", MATMUL_FLOPS),
    Case("matmul 4x64", "matmul1024", PLANS / "matmul1024_4x64.plan.json", MATMUL_FLOPS),
    Case("matmul 8x64", "matmul1024", PLANS / "matmul1024_8x64.plan.json", MATMUL_FLOPS),
    Case("conv2d 8x2x8 (bench)", "conv2d56", BENCH / "conv2d56.plan.json", CONV_FLOPS),
    Case("conv2d 4x7x8", "conv2d56", PLANS / "conv2d56_4x7x8.plan.json", CONV_FLOPS),
)


def target_spelling(mcpu: str) -> str:
    return "cpu" if mcpu == "native" else f"cpu -mcpu={mcpu}"


def tirc_child(
    kernel: str, plan: str, mcpu: str, seconds: float, split: bool = True
) -> dict[str, object]:
    """Runs in a child process: tirc's median seconds for the kernel built for `mcpu`,
    checked against numpy, and its hot loop's traffic; `split=False`: as tirc was before it
    split register tiles to fit the target's registers (tirc.codegen.llvm.register_tile)."""
    from tirc.codegen.llvm import compile_module
    from tirc.codegen.llvm.spills import hot_loop
    from tirc.driver.lower import lower_module
    from tirc.driver.run_cpu import jit_function
    from tirc.driver.schedule import apply_plan_file
    from tirc.driver.target import parse_target
    from tirc.text import parse

    if not split:
        from tirc.codegen.llvm import stmt

        stmt.split_nest = lambda loop, registers: None  # as before
    source = BENCH / f"{kernel}.tir"
    module, _ = apply_plan_file(parse(source.read_text(), name=str(source)), plan)
    target = parse_target(target_spelling(mcpu))
    lowered = lower_module(module, target=target, for_backend=True)
    loop = hot_loop(compile_module(lowered, target).assembly())
    call = jit_function(module, "main", target)
    args, _, _ = checked_arguments(kernel, dict(module.functions)["main"], call)
    wall, cpu = timings(lambda: call(args), seconds)
    return {"wall": wall, "cpu": cpu, "loop": loop_fields(loop)}


def loop_fields(loop: object) -> dict[str, int] | None:
    if loop is None:
        return None
    names = ("instructions", "fmas", "spills", "reloads", "copies")
    return {name: getattr(loop, name) for name in names}


def run_tirc(case: Case, mcpu: str, seconds: float, split: bool = True) -> dict[str, object]:
    arguments = f"{case.kernel!r}, {str(case.plan)!r}, {mcpu!r}, {seconds}, {split}"
    code = (
        "import json; from bench_cpu_targets import tirc_child; "
        f"print(json.dumps(tirc_child({arguments})))"
    )
    failure = f"tirc child failed on {case.label}"
    result: dict[str, object] = child_json(benchmarks_child(code), environment(1), failure)
    return result


def tvm_mcpu(mcpu: str) -> str:
    """TVM's spelling of the CPU: the host's name for `native`."""
    if mcpu != "native":
        return mcpu
    import llvmlite.binding as llvm

    llvm.initialize_native_target()
    return str(llvm.get_host_cpu_name())


def run_tvm(case: Case, mcpu: str, seconds: float) -> dict[str, object] | str:
    """TVM's median seconds and the traffic of its hot loop, or why there are none."""
    from tirc.codegen.llvm.spills import hot_loop

    python = tvm_python()
    if python is None:
        return "no TVM Python (set TIRC_BENCH_TVM_PYTHON)"
    worker = str(ROOT / "benchmarks" / "tvm_worker.py")
    source, plan, cpu = str(BENCH / f"{case.kernel}.tir"), str(case.plan), tvm_mcpu(mcpu)
    env = environment(1)
    env.pop("PYTHONPATH")
    timed = [python, worker, "kernel", source, plan, str(seconds), parameter_shapes(case.kernel)]
    done = subprocess.run([*timed, cpu], env=env, capture_output=True, text=True)
    if done.returncode != 0:
        return f"TVM failed: {done.stderr.strip().splitlines()[-1] if done.stderr else '?'}"
    result = json.loads(done.stdout.strip().splitlines()[-1])
    with tempfile.NamedTemporaryFile(suffix=".s") as assembly:
        subprocess.run(
            [python, worker, "asm", source, plan, cpu, assembly.name],
            env=env,
            check=True,
            capture_output=True,
        )
        loop = hot_loop(Path(assembly.name).read_text())
    return {"wall": result["median"], "cpu": result["cpu"], "loop": loop_fields(loop)}


def traffic(measured: dict[str, object]) -> str:
    loop = measured["loop"]
    if not isinstance(loop, dict):
        return "no loop"
    return f"{loop['spills']}+{loop['reloads']} ({loop['copies']} copies)"


def gflops(case: Case, measured: dict[str, Any]) -> float:
    return case.flops / float(measured["cpu"]) / 1e9


def row(
    case: Case,
    mcpu: str,
    tirc: dict[str, object],
    before: dict[str, object] | None,
    tvm: dict[str, object] | str,
) -> str:
    rate = gflops(case, tirc)
    text = f"{case.label:<21} {mcpu:<7}"
    if before is not None:
        text += f" | before {gflops(case, before):5.1f} {traffic(before):<16}"
    text += f" | tirc {rate:5.1f} {traffic(tirc):<16}"
    if isinstance(tvm, str):
        return f"{text} | ({tvm})"
    tvm_rate = gflops(case, tvm)
    ratio = f"tirc/TVM {rate / tvm_rate:.2f}"
    if before is not None:
        ratio += f" (before {gflops(case, before) / tvm_rate:.2f})"
    return f"{text} | TVM {tvm_rate:5.1f} {traffic(tvm):<16} | {ratio}"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--mcpu", action="append", help="CPUs to compile for (default: znver3 and native)"
    )
    parser.add_argument("--repeat", type=int, default=1, help="rounds, to see the noise")
    parser.add_argument("--seconds", type=float, default=2.0, help="timing per measurement")
    parser.add_argument("--only", help="only the cases whose label contains this")
    parser.add_argument(
        "--before",
        action="store_true",
        help="also tirc without splitting register tiles (as before tirc.codegen.llvm."
        "register_tile), measured in the same run",
    )
    arguments = parser.parse_args()
    cpus = arguments.mcpu or ["znver3", "native"]
    cases = [case for case in CASES if not arguments.only or arguments.only in case.label]
    print(
        "1 thread; GFLOP/s by CPU time; spills+reloads (copies): vector stack stores and loads "
        "(register copies) in the hot loop; tirc/TVM > 1: tirc is faster",
        flush=True,
    )
    for round_ in range(arguments.repeat):
        if arguments.repeat > 1:
            print(f"round {round_ + 1}", flush=True)
        for case in cases:
            for mcpu in cpus:
                before = None
                if arguments.before:
                    before = run_tirc(case, mcpu, arguments.seconds, split=False)
                tirc = run_tirc(case, mcpu, arguments.seconds)
                tvm = run_tvm(case, mcpu, arguments.seconds)
                print(row(case, mcpu, tirc, before, tvm), flush=True)


if __name__ == "__main__":
    main()

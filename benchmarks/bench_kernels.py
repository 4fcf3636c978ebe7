"""Kernels on the CPU backend against numpy and TVM 0.27, in one run, with the SAME plan.

Workloads (samples/bench/<name>.tir with <name>.plan.json): matmul 1024³ f32, conv2d
1x64x56x56 * 64x64x3x3 (pad 1) f32, add of 16M f32, softmax 4096x1024 f32. Each is measured
in fresh child processes, so that thread settings take effect: tirc and numpy in this Python,
TVM in TVM's (`$TIRC_BENCH_TVM_PYTHON`, default /work/tvm-venv/bin/python), which replays
the same readable plan as TVM schedule calls (benchmarks/tvm_worker.py). Printed: medians over
repeats after a warm-up, GFLOP/s or GB/s, and tirc/TVM (> 1: tirc is faster). Also matmul
single-threaded as a fraction of the host's FMA peak (for its vector width), and the
whole-process time of `tirc compile` of the matmul sample against TVM's whole-process build
of the same.

The machine may be shared: compare the ratios, which are measured in the same run, rather
than absolute numbers across runs. Not a test: `python benchmarks/bench_kernels.py [--quick]`.
"""

from __future__ import annotations

import json
import os
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tirc.driver.progress import Meter

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "samples" / "bench"
THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "TVM_NUM_THREADS")
DEFAULT_TVM_PYTHON = "/work/tvm-venv/bin/python"


@dataclass(frozen=True)
class Workload:
    name: str  # samples/bench/<name>.tir and <name>.plan.json
    title: str
    flops: float  # 0: memory-bound, reported in GB/s of `nbytes`
    nbytes: float


WORKLOADS = (
    Workload("matmul1024", "matmul 1024³ f32", 2.0 * 1024**3, 3 * 4 * 1024**2),
    Workload("conv2d56", "conv2d 1x64x56x56, 64 3x3 f32", 2.0 * 64 * 56 * 56 * 64 * 9, 0),
    Workload("add16m", "add 16M f32", 0, 3 * 4 * 2**24),
    Workload("softmax4096", "softmax 4096x1024 f32", 0, 2 * 4 * 4096 * 1024),
)


# -- the child processes --------------------------------------------------------------------


def random_inputs(func: object) -> dict[str, Any]:
    """Random arrays for the parameters, 64-byte aligned as the ABI wants them."""
    import numpy as np

    from tirc.runtime.jit import aligned_array

    rng = np.random.default_rng(0)
    arrays = {}
    for param in func.params:  # type: ignore[attr-defined]
        buffer = func.buffer_of(param)  # type: ignore[attr-defined]
        shape = [int(extent.value) for extent in buffer.shape]
        data = rng.standard_normal(shape).astype(str(buffer.dtype))
        arrays[param.name] = aligned_array(data)  # as TVM's tensors are: no copies per call
    return arrays


def numpy_reference(name: str, args: dict[str, Any]) -> tuple[str, Callable[[Any], object]]:
    """The output parameter's name and a callable computing it with numpy into `out`."""
    import numpy as np

    if name.startswith("matmul"):
        a, b = args["A"], args["B"]
        return "C", lambda out: np.matmul(a, b, out=out)
    if name.startswith("add"):
        a, b = args["A"], args["B"]
        return "C", lambda out: np.add(a, b, out=out)
    if name.startswith("softmax"):
        a = args["A"]

        def softmax(out: np.ndarray) -> None:
            np.subtract(a, a.max(axis=1, keepdims=True), out=out)
            np.exp(out, out=out)
            out /= out.sum(axis=1, keepdims=True)

        return "B", softmax
    if name.startswith("conv2d"):
        data, weight = args["data"], args["weight"]

        def conv(out: np.ndarray) -> None:  # im2col and one matrix product
            padded = np.pad(data, ((0, 0), (0, 0), (1, 1), (1, 1)))
            windows = np.lib.stride_tricks.sliding_window_view(padded, (3, 3), axis=(2, 3))
            columns = windows[0].transpose(0, 3, 4, 1, 2).reshape(-1, out.shape[2] * out.shape[3])
            np.matmul(
                weight.reshape(weight.shape[0], -1), columns, out=out.reshape(out.shape[1], -1)
            )

        return "conv", conv
    raise ValueError(name)


def measure_tirc(name: str, seconds: float, plan: str | None = None) -> dict[str, float]:
    """Runs in a child: tirc's (with `plan`, default samples/bench/<name>.plan.json) and
    numpy's medians for one workload, and tirc checked against numpy."""

    from tirc.driver.run_cpu import jit_function
    from tirc.driver.schedule import apply_plan_file
    from tirc.text import parse

    kernel = BENCH / f"{name}.tir"
    begin = time.perf_counter()
    module, _ = apply_plan_file(
        parse(kernel.read_text(), name=str(kernel)), plan or str(BENCH / f"{name}.plan.json")
    )
    call = jit_function(module, "main", "cpu")
    built = time.perf_counter() - begin
    args, reference, want = checked_arguments(name, dict(module.functions)["main"], call)
    tirc, tirc_cpu = timings(lambda: call(args), seconds)
    numpy, numpy_cpu = timings(lambda: reference(want), seconds)
    return {
        "tirc": tirc,
        "tirc_cpu": tirc_cpu,
        "numpy": numpy,
        "numpy_cpu": numpy_cpu,
        "build_s": built,
    }


def checked_arguments(
    name: str, func: object, call: Callable[[dict[str, Any]], object]
) -> tuple[dict[str, Any], Callable[[Any], object], Any]:
    """Random arguments for `func` after one `call` on them, numpy's reference computation of
    its output, and that output; SystemExit when tirc's output differs from it."""
    import numpy as np

    args = random_inputs(func)
    output, reference = numpy_reference(name, args)
    call(args)
    want = np.empty_like(args[output])
    reference(want)
    if not np.allclose(args[output], want, rtol=1e-3, atol=1e-3):
        raise SystemExit(f"{name}: tirc's result differs from numpy's")
    return args, reference, want


def timings(call: Callable[[], object], seconds: float) -> tuple[float, float]:
    """Median wall seconds and median CPU seconds of this process (all its threads) per call,
    after one warm-up call, over at least 5 calls and about `seconds`. With one thread the CPU
    time is the time the kernel actually ran, whatever else the machine was doing."""
    call()
    wall: list[float] = []
    cpu: list[float] = []
    started = time.perf_counter()
    while len(wall) < 5 or (time.perf_counter() - started < seconds and len(wall) < 1000):
        begin, begin_cpu = time.perf_counter(), time.process_time()
        call()
        cpu.append(time.process_time() - begin_cpu)
        wall.append(time.perf_counter() - begin)
    return statistics.median(wall), statistics.median(cpu)


def environment(threads: int) -> dict[str, str]:
    """Each runtime at its defaults: OMP_WAIT_POLICY stays unset, so libgomp's idle threads
    spin a while before they sleep, as TVM's thread pool's do (forcing `passive` made each
    of tirc's parallel regions wake a sleeping thread, which TVM never pays: conv2d on 2
    threads, with its two regions, ran 0.79-0.85 of TVM that way and 0.90-0.96 without)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop("OMP_WAIT_POLICY", None)
    env.update({variable: str(threads) for variable in THREAD_VARIABLES})
    return env


def child_json(command: list[str], env: dict[str, str], failure: str) -> Any:
    """What the child `command` prints as JSON on its last line; SystemExit with `failure` and
    the end of its stderr when it fails."""
    done = subprocess.run(command, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{failure}:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def benchmarks_child(code: str) -> list[str]:
    """A command running `code` in this Python with benchmarks/ importable."""
    return [
        sys.executable,
        "-c",
        f"import sys; sys.path.insert(0, {str(ROOT / 'benchmarks')!r}); {code}",
    ]


def run_tirc(name: str, threads: int, seconds: float) -> dict[str, float]:
    code = (
        "import json; from bench_kernels import measure_tirc; "
        f"print(json.dumps(measure_tirc({name!r}, {seconds})))"
    )
    return child_json(benchmarks_child(code), environment(threads), f"tirc child failed on {name}")


def tvm_python() -> str | None:
    python = os.environ.get("TIRC_BENCH_TVM_PYTHON", DEFAULT_TVM_PYTHON)
    return python if os.path.exists(python) else None


def parameter_shapes(name: str) -> str:
    from tirc.text import parse

    module = parse((BENCH / f"{name}.tir").read_text())
    func = dict(module.functions)["main"]
    shapes = []
    for param in func.params:
        buffer = func.buffer_of(param)
        shapes.append([[int(e.value) for e in buffer.shape], str(buffer.dtype)])
    return json.dumps(shapes)


def run_tvm(name: str, threads: int, seconds: float) -> dict[str, float] | str:
    python = tvm_python()
    if python is None:
        return "TVM skipped: no TVM Python (set TIRC_BENCH_TVM_PYTHON)"
    command = [
        python,
        str(ROOT / "benchmarks" / "tvm_worker.py"),
        "kernel",
        str(BENCH / f"{name}.tir"),
        str(BENCH / f"{name}.plan.json"),
        str(seconds),
        parameter_shapes(name),
    ]
    env = environment(threads)
    env.pop("PYTHONPATH")
    done = subprocess.run(command, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        return f"TVM failed: {done.stderr.strip().splitlines()[-1] if done.stderr else '?'}"
    return json.loads(done.stdout.strip().splitlines()[-1])


# -- reporting ------------------------------------------------------------------------------


def rate(workload: Workload, seconds: float) -> str:
    if workload.flops:
        return f"{workload.flops / seconds / 1e9:7.1f} GFLOP/s"
    return f"{workload.nbytes / seconds / 1e9:7.1f} GB/s   "


def cpu_clock_ghz() -> tuple[float, str]:
    """The nominal clock: the model name's '@ x.xxGHz' where it has one, else the largest
    'cpu MHz' in /proc/cpuinfo (what the kernel reports, not a turbo clock)."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return 0.0, "no /proc/cpuinfo"
    megahertz = [
        float(line.split(":")[1]) for line in text.splitlines() if line.startswith("cpu MHz")
    ]
    if megahertz:
        return max(megahertz) / 1e3, "'cpu MHz' of /proc/cpuinfo"
    return 0.0, "no clock in /proc/cpuinfo"


CHAIN = 32  # dependent multiplies per loop iteration
LATENCY = 3  # cycles of a 64-bit imul on every x86 core since the Pentium Pro
# (a chain of adds is no clock on cores that fold an add of an immediate at rename, such as
# Golden Cove: it measured 16 GHz there)
MULTIPLIES = "imulq $$3, $0, $0\\0A" * CHAIN
CLOCK_PROBE = f"""
define i64 @chain(i64 %n) {{
entry:
  br label %loop
loop:
  %i = phi i64 [ 0, %entry ], [ %next, %loop ]
  %x = phi i64 [ 0, %entry ], [ %y, %loop ]
  %y = call i64 asm sideeffect "{MULTIPLIES}", "=r,0"(i64 %x)
  %next = add i64 %i, 1
  %more = icmp ult i64 %next, %n
  br i1 %more, label %loop, label %exit
exit:
  ret i64 %y
}}
"""


def measured_clock_ghz() -> float:
    """The clock the core actually runs at: a chain of dependent integer multiplies (three
    cycles each on every x86 core) timed in CPU seconds of this process, so time the process
    waited for the CPU does not count; the fastest of a few tries."""
    import ctypes

    import llvmlite.binding as llvm

    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    llvm.initialize_native_asmparser()  # for the inline assembly
    module = llvm.parse_assembly(CLOCK_PROBE)
    machine = llvm.Target.from_default_triple().create_target_machine()
    engine = llvm.create_mcjit_compiler(module, machine)
    engine.finalize_object()
    chain = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_int64)(engine.get_function_address("chain"))
    iterations = 2_000_000
    best = float("inf")
    for _ in range(7):
        begin = time.process_time()
        chain(iterations)
        best = min(best, time.process_time() - begin)
    return LATENCY * CHAIN * iterations / best / 1e9


def vector_lanes() -> tuple[int, str]:
    """float32 lanes of the host's widest FMA vectors, from the features LLVM reports:
    16 with AVX-512, 8 with AVX2/FMA, 4 otherwise (SSE, NEON)."""
    import llvmlite.binding as llvm

    llvm.initialize_native_target()
    features = {
        name[1:] for name in llvm.get_host_cpu_features().flatten().split(",") if name[:1] == "+"
    }
    if "avx512f" in features:
        return 16, "AVX-512"
    if {"avx2", "fma"} <= features:
        return 8, "AVX2"
    return 4, "128-bit vectors"


def fma_peak_gflops(clock_ghz: float, lanes: int) -> float:
    """One core: 2 FMA units (most x86 cores since Haswell and Zen 2; a few AVX-512 parts
    have one) x `lanes` f32 lanes x 2 flops per FMA x the clock."""
    return 2 * lanes * 2 * clock_ghz


def peak_fraction(workload: Workload, tirc: dict[str, float], key: str = "tirc") -> str:
    """matmul single-threaded against one core's FMA peak at the measured clock, for the
    host's vector width (the nominal clock of /proc/cpuinfo is printed too); by wall time and
    by CPU time."""
    clock = measured_clock_ghz()
    nominal, source = cpu_clock_ghz()
    lanes, isa = vector_lanes()
    peak = fma_peak_gflops(clock, lanes)
    wall = workload.flops / tirc[key] / 1e9
    cpu = workload.flops / tirc[f"{key}_cpu"] / 1e9
    return (
        f"  matmul 1 thread vs the {isa} FMA peak {peak:.0f} GFLOP/s (2 FMA x {lanes} lanes x "
        f"2 flops x {clock:.2f} GHz measured by a dependent-multiply chain; {nominal:.2f} GHz by "
        f"{source}): {wall / peak:.0%} by wall time, {cpu / peak:.0%} by CPU time "
        f"({cpu:.1f} GFLOP/s); goal >= 85%"
    )


def line(
    workload: Workload, threads: int, tirc: dict[str, float], tvm: dict[str, float] | str
) -> str:
    text = (
        f"{workload.title:<32} {threads} thr: tirc {rate(workload, tirc['tirc'])} "
        f"numpy {rate(workload, tirc['numpy'])}"
    )
    if isinstance(tvm, str):
        return f"{text}  ({tvm})"
    return (
        f"{text} TVM {rate(workload, tvm['median'])}  tirc/TVM {tvm['median'] / tirc['tirc']:.2f}"
        f" (by CPU time {tvm['cpu'] / tirc['tirc_cpu']:.2f})"
    )


def process_seconds(command: list[str], env: dict[str, str], runs: int) -> tuple[float, float]:
    """The median CPU seconds (user + system, children included) and wall seconds of runs of
    `command` after one warm-up run."""
    subprocess.run(command, check=True, capture_output=True, env=env)
    cpu, wall = [], []
    for _ in range(runs):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        begin = time.perf_counter()
        subprocess.run(command, check=True, capture_output=True, env=env)
        wall.append(time.perf_counter() - begin)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return statistics.median(cpu), statistics.median(wall)


def matmul_sample_plan() -> str:
    """The CPU plan of samples/matmul.tir (named matmul.cpu.plan.json since the samples have
    one plan per target; matmul.plan.json before)."""
    for name in ("matmul.cpu.plan.json", "matmul.plan.json"):
        if (ROOT / "samples" / name).exists():
            return str(ROOT / "samples" / name)
    raise SystemExit("no CPU plan for samples/matmul.tir")


def compile_times(runs: int) -> str:
    """Whole-process `tirc compile samples/matmul.tir --plan samples/matmul.plan.json` against
    the TVM worker's whole-process build of the same kernel with the same plan."""
    from run import installed_environment, tirc_command

    sample, plan = str(ROOT / "samples/matmul.tir"), matmul_sample_plan()
    with_bytecode = installed_environment()
    tirc = process_seconds(
        [*tirc_command(), "compile", sample, "--plan", plan, "-o", os.devnull], with_bytecode, runs
    )
    text = f"tirc compile samples/matmul.tir --plan ...: {tirc[0]:.2f} s CPU ({tirc[1]:.2f} s wall)"
    python = tvm_python()
    if python is None:
        return f"{text}; TVM skipped: no TVM Python"
    worker = str(ROOT / "benchmarks" / "tvm_worker.py")
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    tvm = process_seconds(
        [python, worker, "build", sample, plan, "/tmp/tirc-bench-tvm.so"], env, runs
    )
    return (
        f"{text}; TVM build {tvm[0]:.2f} s CPU ({tvm[1]:.2f} s wall); "
        f"tirc/TVM {tirc[0] / tvm[0]:.2f} CPU, {tirc[1] / tvm[1]:.2f} wall (goal <= 0.33)"
    )


def thread_counts() -> list[int]:
    return sorted({1, os.cpu_count() or 1})


def steps() -> int:
    """The measurements `report` makes: tirc and TVM per workload and thread count, and the
    compile times."""
    return 2 * len(WORKLOADS) * len(thread_counts()) + 1


def report(quick: bool = False, meter: Meter | None = None) -> Iterator[str]:
    """The lines of the comparison, one workload and thread count at a time; `meter` (of
    `steps()`) names each measurement while it runs and advances after it."""
    from tirc.driver.progress import Meter

    meter = meter or Meter(None)
    seconds = 0.5 if quick else 2.0
    yield (
        f"{os.cpu_count() or 1} CPUs; medians after a warm-up; tirc/TVM > 1: tirc is faster "
        "(by wall time, and by CPU time, which the load of a shared machine disturbs less)"
    )
    for workload in WORKLOADS:
        for threads in thread_counts():
            where = f"{workload.title}, {threads} thr"
            meter.describe(f"{where}: tirc and numpy")
            tirc = run_tirc(workload.name, threads, seconds)
            meter.advance()
            meter.describe(f"{where}: TVM")
            tvm = run_tvm(workload.name, threads, seconds)
            meter.advance()
            yield line(workload, threads, tirc, tvm)
            if workload.name.startswith("matmul") and threads == 1:
                yield peak_fraction(workload, tirc)
    meter.describe("compile times: tirc and TVM")
    yield compile_times(3 if quick else 5)
    meter.advance()


def main() -> None:
    """The report on stdout; on a terminal, the measurement under way and a bar of all of
    them on stderr (nothing there in a pipe or a log)."""
    import argparse

    from tirc.driver.progress import meter_for

    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="fewer repeats, for a first look")
    quick = parser.parse_args().quick
    with meter_for(total=steps()) as meter:
        for text in report(quick=quick, meter=meter):
            meter.print(text)


if __name__ == "__main__":
    main()

"""Everything tirc checks on a real GPU, in one command and one JSON report (`make gpu-check`).

1. the GPU differential (benchmarks/gpu_differential.py --on cuda): each GPU conformance
   case's scheduled program compiled and run on the GPU by tirc's launcher, against the
   unscheduled program on the CPU backend (thread loops serial) on the same seeded inputs;
2. the `gpu`-marked tests (pytest -m gpu);
3. the samples' CUDA client (make -C samples run-cuda), which links every launcher;
4. benchmarks/bench_cuda.py (tensor-core GEMMs against cuBLAS, elementwise against a copy,
   softmax against torch);
5. peak: benchmarks/cuda/mma_sync_peak.cu, the mma.sync ceiling the GEMMs are compared with;
6. tune: `tirc tune --target cuda` on samples/matmul.tir for a minute, timed on the GPU, and
   the plan it writes run again with --check --bench;
7. hopper: the Hopper samples (wgmma, TMA, mbarrier) run with `--target 'cuda -arch=sm_90a'
   --check` at their test shapes, each against the interpreter (a Hopper GPU only); the
   hand-written ones a second time with `--ptx-via llvm` (the NVPTX path).

Steps run in the order `--steps` gives them (the default is the order above).

It needs only the checkout and a Python with numpy, click, rich, llvmlite, lark, ml_dtypes
and cuda-python (no install of tirc, no package registry): it puts the checkout on
sys.path and PYTHONPATH itself. Each step has its own time limit; a step that fails or
times out is recorded, and the others still run.

    python benchmarks/gpu_check.py [--out DIR] [--cases DIR] [--jobs N] [--steps LIST]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

STEPS = ("differential", "tests", "samples", "bench", "peak", "tune", "hopper")
CASE_FOLDERS = (ROOT / ".gpu-cases", ROOT.parent / "shared" / "conformance" / "cases")


def _environment() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH", "")]))
    env["PYTHONUNBUFFERED"] = "1"
    return env


def _run(command: list[str], limit: float, log: Path) -> dict:
    """Runs a command with a time limit; its output goes to `log`; returns rc and seconds."""
    start = time.monotonic()
    with log.open("w") as stream:
        try:
            done = subprocess.run(
                command,
                cwd=ROOT,
                env=_environment(),
                stdout=stream,
                stderr=subprocess.STDOUT,
                timeout=limit,
                check=False,
            )
            rc = done.returncode
        except subprocess.TimeoutExpired:
            rc = 124
    tail = log.read_text(errors="replace").splitlines()[-40:]
    return {"rc": rc, "seconds": round(time.monotonic() - start, 1), "tail": tail}


def device() -> dict:
    info: dict = {"python": sys.version.split()[0], "machine": platform.node()}
    try:
        query = "name,driver_version,memory.total,clocks.max.sm"
        out = subprocess.run(
            ["nvidia-smi", f"--query-gpu={query}", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
        info["gpu"] = out.stdout.strip()
    except (OSError, subprocess.TimeoutExpired) as error:
        info["gpu"] = f"nvidia-smi: {error}"
    for module in ("numpy", "llvmlite", "lark", "cuda.bindings"):
        try:
            imported = __import__(module, fromlist=["_"])
            info[module] = getattr(imported, "__version__", "present")
        except ImportError as error:
            info[module] = f"missing ({error})"
    return info


def differential(cases: Path, jobs: int, timeout: float, sizes: tuple[int, ...]) -> dict:
    import gpu_differential

    found = gpu_differential.gpu_cases(cases)
    start = time.monotonic()
    results = gpu_differential.run_cases(found, "cuda", "lockstep", jobs, timeout, sizes=sizes)
    counts = gpu_differential.summarize(results)
    return {
        "cases": len(found),
        "runs": len(results),
        "sizes": list(sizes),
        "counts": counts,
        "seconds": round(time.monotonic() - start, 1),
        "not_ok": {name: r for name, r in results.items() if r["status"] != "ok"},
        "results": results,
    }


def tests(out: Path, limit: float) -> dict:
    result = _run(
        [sys.executable, "-m", "pytest", "-q", "-m", "gpu", "-p", "no:cacheprovider", "tests"],
        limit,
        out / "tests.log",
    )
    summary = [line for line in result["tail"] if re.search(r"\d+ (passed|failed)", line)]
    result["summary"] = summary[-1] if summary else ""
    result["failures"] = [line for line in result["tail"] if line.startswith("FAILED")]
    return result


def samples(out: Path, limit: float) -> dict:
    tirc = f"{sys.executable} -m tirc"
    build = Path("/tmp/tirc-gpu-check-samples")  # many files: not in the report folder
    return _run(
        ["make", "-C", "samples", "-j8", "run-cuda", f"TIRC={tirc}", f"BUILD={build}"],
        limit,
        out / "samples.log",
    )


def bench(out: Path, limit: float) -> dict:
    numbers = out / "bench.json"
    result = _run(
        [sys.executable, "benchmarks/bench_cuda.py", "--json", str(numbers)],
        limit,
        out / "bench.log",
    )
    if numbers.exists():
        result["numbers"] = json.loads(numbers.read_text())
    return result


def peak(out: Path, limit: float) -> dict:
    """Builds and runs benchmarks/cuda/mma_sync_peak.cu (nvcc for the device's own arch)."""
    binary = Path("/tmp/tirc-mma-sync-peak")
    source = ROOT / "benchmarks" / "cuda" / "mma_sync_peak.cu"
    build = _run(
        ["nvcc", "-O3", "-arch=native", "-o", str(binary), str(source)], limit, out / "peak.log"
    )
    if build["rc"] != 0:
        return build
    result = _run([str(binary)], limit, out / "peak.log")
    lines = [line for line in result["tail"] if line.startswith("{")]
    if lines:
        result["numbers"] = json.loads(lines[-1])
    return result


def tune(out: Path, limit: float) -> dict:
    """A minute of `tirc tune --target cuda`, then its plan run and checked."""
    plan = out / "tuned_matmul.plan.json"
    database = Path("/tmp/tirc-gpu-check-tune.db")
    database.unlink(missing_ok=True)
    tirc = [sys.executable, "-m", "tirc"]
    program = "samples/matmul.tir"
    search = [*tirc, "tune", program, "--target", "cuda", "--trials", "256"]
    search += ["--time-budget", "60", "--db", str(database), "-o", str(plan)]
    result = _run(search, limit, out / "tune.log")
    if result["rc"] == 0 and plan.exists():
        check = [*tirc, "run", program, "--plan", str(plan), "--target", "cuda", "--check"]
        result["tuned_run"] = _run([*check, "--bench"], limit, out / "tune_run.log")
    return result


HOPPER_JOBS = 6  # Hopper runs at once: each checks on the CPU, and they share one GPU
HOPPER = (  # (program, plan or None): hand-written tir needs none
    ("gemm_wgmma", "gemm_wgmma"),
    ("gemm_wgmma_tensorize", "gemm_wgmma_tensorize"),  # checked against the unscheduled program
    ("gemm_wgmma_tensorize_bf16", "gemm_wgmma_tensorize_bf16"),
    ("gemm_wgmma_tensorize", "gemm_wgmma_tensorize.mma_ws"),  # warp-specialized from a plan
    ("gemm_wgmma_tensorize", "gemm_wgmma_tensorize.mma_ws_tma"),  # ... with a TMA producer
    # the wgmma GEMM warp-specialized, its producer warpgroup's own stores feeding the
    # consumers' fast wgmma k loop (a proxy fence a k tile, no named barrier)
    ("gemm_wgmma_tensorize", "gemm_wgmma_tensorize.named_barrier_ws"),
    ("gemm_wgmma_tensorize", "gemm_wgmma_tensorize.swizzle128"),  # wgmma on 128B-swizzled tiles
    ("gemm_wgmma_tensorize", "gemm_wgmma_tensorize.swizzle128_tma"),  # ... filled by TMA
    # 128 x 256 tiles: two consumer warpgroups, TMA's A box and four B slabs, a 4-deep ring
    ("gemm_wgmma_tensorize_128x256", "gemm_wgmma_tensorize_128x256"),
    # ... its tile staged in shared memory as 32 slabs of 128 x 8 floats and stored by 32 TMA
    # stores (inject-tma-store), the staging tile over its 4-deep ring (merge-shared-memory-
    # allocations): bench_cuda times it beside the plain stores
    ("gemm_wgmma_tensorize_128x256", "gemm_wgmma_tensorize_128x256.tma_store"),
    ("gemm_wgmma_128x256", None),
    ("gemm_wgmma_128x256_s3", None),
    ("gemm_wgmma_tma", None),
    ("gemm_wgmma_ws", None),
    ("matmul_fp16_hopper", None),
    ("matmul_bf16_hopper", None),
    ("tma_copy", None),
    ("cluster_row_sum", None),
)


# the hand-written Hopper samples run a second time with their PTX made by LLVM (the NVPTX
# path's mbarrier, TMA, wgmma, setmaxnreg and clusters)
HOPPER_NVPTX = (
    "tma_copy",
    "gemm_wgmma_tma",
    "gemm_wgmma_ws",
    "matmul_fp16_hopper",
    "cluster_row_sum",
)


def hopper(out: Path, limit: float, jobs: int = HOPPER_JOBS) -> dict:
    """Each Hopper sample at the shape its comment gives tests, on the GPU and checked against
    the interpreter; a process of its own per sample, so that one hang costs only its time,
    `jobs` at once (the interpreter's check is most of a run's time, and CPU-bound)."""
    from tests.codegen_cuda.gpu_plans import defines_for_tests

    results: dict = {"rc": 0, "seconds": 0.0, "samples": {}}
    runs = [(program, plan, None) for program, plan in HOPPER]
    runs += [(program, None, "llvm") for program in HOPPER_NVPTX]
    commands: dict[str, list[str]] = {}
    for program, plan, via in runs:
        source = ROOT / "samples" / "gpu" / f"{program}.tir"
        command = [sys.executable, "-m", "tirc", "run", str(source)]
        if plan is not None:
            command += ["--plan", str(source.with_name(f"{plan}.plan.json"))]
        for name, value in defines_for_tests(source.read_text()):
            command += ["-D", f"{name}={value}"]
        command += ["--target", "cuda -arch=sm_90a", "--check"]
        name = plan or program  # the plan's name tells two plans of a program apart
        if via is not None:
            command += ["--ptx-via", via]
            name += f".{via}"
        commands[name] = command
    start = time.monotonic()
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        done = {
            name: pool.submit(_run, command, min(limit, 120), out / f"hopper_{name}.log")
            for name, command in commands.items()
        }
    for name, future in done.items():
        result = future.result()
        results["samples"][name] = {
            "rc": result["rc"],
            "seconds": result["seconds"],
            "tail": result["tail"][-6:],
        }
        results["rc"] = results["rc"] or result["rc"]
    results["seconds"] = round(time.monotonic() - start, 1)
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "gpu-check")
    parser.add_argument("--cases", type=Path, help="conformance cases (default: .gpu-cases)")
    parser.add_argument("--jobs", type=int, default=max(1, min(12, (os.cpu_count() or 2) - 2)))
    parser.add_argument("--timeout", type=float, default=150, help="seconds per case")
    parser.add_argument("--steps", default=",".join(STEPS), help="comma-separated subset")
    parser.add_argument(
        "--sizes",
        default="16,100",
        help="values for the shape variables of symbolic cases, each a run of its own",
    )
    args = parser.parse_args()
    steps = [step for step in args.steps.split(",") if step]
    unknown = sorted(set(steps) - set(STEPS))
    if unknown:
        parser.error(f"unknown steps {unknown}; choose from {', '.join(STEPS)}")
    cases = args.cases or next((c for c in CASE_FOLDERS if c.is_dir()), None)
    args.out.mkdir(parents=True, exist_ok=True)
    report: dict = {"device": device(), "steps": steps}
    start = time.monotonic()
    runs = {
        "tests": tests,
        "samples": samples,
        "bench": bench,
        "peak": peak,
        "tune": tune,
        "hopper": hopper,
    }
    for step in steps:
        if step == "differential":
            if cases is None:
                report[step] = {"error": "no conformance cases (make gpu-cases)"}
            else:
                sizes = tuple(int(size) for size in args.sizes.split(","))
                report[step] = differential(cases, args.jobs, args.timeout, sizes)
        else:
            report[step] = runs[step](args.out, 300)
            print(f"{step}: rc {report[step]['rc']} in {report[step]['seconds']} s", flush=True)
        (args.out / "report.json").write_text(json.dumps(report, indent=1))
    report["seconds"] = round(time.monotonic() - start, 1)
    (args.out / "report.json").write_text(json.dumps(report, indent=1))
    if "differential" in report and "counts" in report["differential"]:
        d = report["differential"]
        print(f"differential: {d['counts']} of {d['runs']} runs in {d['seconds']} s")
    if "tests" in report:
        print(f"tests: {report['tests']['summary']}")
    print(f"report: {args.out / 'report.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

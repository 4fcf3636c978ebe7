"""tirc's CUDA code on a real GPU, each row beside its baseline on the same device, in one
run: bandwidth-bound kernels against the device's own copy and torch, GEMMs against cuBLAS.
Not a test and not run in CI.

Run on a machine with an NVIDIA GPU and its driver, in tirc's venv with the cuda extra
(cuda-bindings and nvidia-cuda-nvrtc; ptxas on PATH is used when present):

    pip install -e '.[cuda]'          # plus torch for the softmax and cuBLAS baselines
    python benchmarks/bench_cuda.py [--only PATTERN] [--repeats 20] [--json F]
    python benchmarks/bench_cuda.py --compile-only     # no GPU: every row builds its kernels

Rows (`--list` prints them; `--only` keeps those whose name contains a pattern, or matches
it as a glob):

- `elementwise` (the inline program below, split [None, 128, 4]) and `matmul_fp16_tc@4096`:
  the two rows this benchmark has always had.
- `elementwise_vec[.VARIANT]`: samples/gpu/elementwise_vec.tir (B = A * 2 + 1 over 64M
  float32) with each of its plans, against cuMemcpyDtoD of the same bytes. GB/s count A read
  plus B written.
- `softmax_rows[.VARIANT]@MxN`: samples/gpu/softmax_rows.tir with each plan at 4096 x 1024 and
  32768 x 4096, against torch.softmax (skipped with a note without torch). GB/s count the
  input read once and the output written once.
- `gemm_*@N`: every samples/gpu/gemm_*.plan.json and benchmarks/plans/gemm_*.plan.json
  (candidates, such as the `_prefetch` plans; plan P schedules P.tir, else the longest
  S.tir with P starting `S_`; a program whose comment says `--target 'cuda -arch=sm_90a'`
  is compiled for that target), matmul_fp16_tc and the matmul_*_hopper samples, at 4096^3
  and 8192^3, against torch.matmul (cuBLAS) on the program's input type (float16, or bfloat16
  where its A is); `--gemm-sizes` changes the sizes. TFLOP/s count 2 M N K.

Timing: every call (tirc's, the copy's, torch's) is timed by its own pair of CUDA events
with the L2 cache flushed before it (a 256 MiB memset outside the events), and all calls of a
row are queued behind a kernel that spins on the GPU until the host has queued them: what is
measured is the GPU's time for the call, not Python's time to launch it. The median over
`--repeats` calls (fewer for the 8192^3 GEMMs) is reported.

Each row checks its result (against numpy, or torch where numpy is slow): a mismatch or a
failure is recorded in that row and the others still run; a kernel that faults takes the
context with it, so the rows after it run in a fresh process.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
GPU_SAMPLES = ROOT / "samples" / "gpu"
BENCH_PLANS = ROOT / "benchmarks" / "plans"  # candidate plans for the samples' programs
_BF16_A = re.compile(r'A: T\.Buffer\(\([^)]*\), "bfloat16"\)')  # a GEMM of bfloat16 inputs

ELEMENTWISE = """\
# from tvm.script import ir as I
# from tvm.script import tirx as T

M = 1024

@I.ir_module
class Module:
    @T.prim_func(s_tir=True)
    def main(A: T.Buffer((M,), "float32"), B: T.Buffer((M,), "float32")):
        T.func_attr({"tirx.noalias": True})
        for i in range(M):
            with T.sblock("B"):
                vi = T.axis.remap("S", [i])
                B[vi] = A[vi] * T.float32(2.0) + T.float32(1.0)
"""

ELEMENTWISE_PLAN = {
    "version": 1,
    "func": "main",
    "steps": [
        {"op": "get_sblock", "name": "B", "out": "B"},
        {"op": "get_loops", "block": "B", "out": ["i"]},
        {"op": "split", "loop": "i", "factors": [None, 128, 4], "out": ["bx", "tx", "v"]},
        {"op": "bind", "loop": "bx", "thread": "blockIdx.x"},
        {"op": "bind", "loop": "tx", "thread": "threadIdx.x"},
        {"op": "vectorize", "loop": "v"},
    ],
}

ELEMENTS = 1 << 26
SOFTMAX_SHAPES = ((4096, 1024), (32768, 4096))
FLUSH_BYTES = 256 << 20  # more than any GPU's L2


# ---------------------------------------------------------------------------------------------
# Rows


@dataclass
class Row:
    """One kernel at one size: `text` (a program) scheduled by `plan` (a path or a plan)."""

    name: str
    group: str  # elementwise | softmax | gemm
    text: str
    source: str  # where the program comes from, for the report
    plan: Path | dict[str, Any]
    defines: dict[str, str]
    shape: tuple[int, ...]  # elements: (n,); softmax: (m, n); gemm: (m, n, k)
    repeats_scale: float = 1.0
    result: dict[str, Any] = field(default_factory=dict)


def sample_plans(program: str) -> list[Path]:
    """`program.plan.json` first, then `program.VARIANT.plan.json` in name order."""
    main = GPU_SAMPLES / f"{program}.plan.json"
    variants = sorted(GPU_SAMPLES.glob(f"{program}.*.plan.json"))
    return ([main] if main.exists() else []) + variants


def plan_program(plan: Path) -> Path | None:
    """The program a sample plan schedules: P.plan.json and P.V.plan.json schedule P.tir, else
    the longest S.tir with P starting `S_`."""
    stem = plan.name.split(".")[0]
    exact = GPU_SAMPLES / f"{stem}.tir"
    if exact.exists():
        return exact
    candidates = [p for p in GPU_SAMPLES.glob("*.tir") if stem.startswith(p.stem + "_")]
    return max(candidates, key=lambda p: len(p.stem), default=None)


def _variant(plan: Path) -> str:
    """`elementwise_vec.grid.plan.json` -> `elementwise_vec.grid`."""
    return plan.name.removesuffix(".plan.json")


def _constants(text: str) -> set[str]:
    return set(re.findall(r"^(\w+)\s*=\s*\d+\s*$", text, re.MULTILINE))


def all_rows(gemm_sizes: tuple[int, ...], elements: int) -> list[Row]:
    rows: list[Row] = []
    rows.append(
        Row(
            "elementwise",
            "elementwise",
            ELEMENTWISE,
            "benchmarks/bench_cuda.py",
            ELEMENTWISE_PLAN,
            {"M": str(elements)},
            (elements,),
        )
    )
    program = GPU_SAMPLES / "elementwise_vec.tir"
    if program.exists():
        for plan in sample_plans("elementwise_vec"):
            rows.append(
                Row(
                    _variant(plan),
                    "elementwise",
                    program.read_text(),
                    str(program.relative_to(ROOT)),
                    plan,
                    {"N": str(elements)},
                    (elements,),
                )
            )
    program = GPU_SAMPLES / "softmax_rows.tir"
    if program.exists():
        for m, k in SOFTMAX_SHAPES:
            for plan in sample_plans("softmax_rows"):
                rows.append(
                    Row(
                        f"{_variant(plan)}@{m}x{k}",
                        "softmax",
                        program.read_text(),
                        str(program.relative_to(ROOT)),
                        plan,
                        {"M": str(m), "N": str(k)},
                        (m, k),
                    )
                )
    for size in gemm_sizes:
        gemms = [
            GPU_SAMPLES / "matmul_fp16_tc.plan.json",
            *sorted(GPU_SAMPLES.glob("gemm_*.plan.json")),
            *sorted(GPU_SAMPLES.glob("matmul_*_hopper.plan.json")),
            *sorted(BENCH_PLANS.glob("gemm_*.plan.json")),  # candidates, A/B against the samples
        ]
        for plan in gemms:
            found = plan_program(plan)
            if found is None:
                continue
            text = found.read_text()
            defines: dict[str, str] = {
                name: str(size) for name in ("M", "N", "K") if name in _constants(text)
            }
            rows.append(
                Row(
                    f"{_variant(plan)}@{size}",
                    "gemm",
                    text,
                    str(found.relative_to(ROOT)),
                    plan,
                    defines,
                    (size, size, size),
                    repeats_scale=0.5 if size >= 8192 else 1.0,
                )
            )
    return rows


def select(rows: list[Row], patterns: list[str]) -> list[Row]:
    if not patterns:
        return rows
    return [
        row
        for row in rows
        if any(p in row.name or fnmatch.fnmatchcase(row.name, p) for p in patterns)
    ]


# ---------------------------------------------------------------------------------------------
# Building


def build(row: Row) -> Any:
    """The row's program, parsed at its size and scheduled by its plan."""
    from tirc.driver.schedule import apply_plan_file
    from tirc.text import parse

    module = parse(row.text, name=row.source, defines=row.defines)
    plan = row.plan
    if isinstance(plan, dict):
        handle = tempfile.NamedTemporaryFile("w", suffix=".plan.json", delete=False)
        with handle:
            json.dump(plan, handle)
        plan = Path(handle.name)
    scheduled, _ = apply_plan_file(module, str(plan))
    return scheduled


def compile_only(rows: list[Row], arch: str) -> int:
    """Every row scheduled, lowered and turned into PTX (NVRTC or LLVM) and, with ptxas, a
    cubin: what can be checked without a GPU."""
    from tirc.codegen.cuda import emit_cuda
    from tirc.driver.compile_cuda import module_ptx, ptx_path
    from tirc.driver.lower import lower_module

    failures = 0
    for row in rows:
        start = time.monotonic()
        target = target_of(row.text)
        row_arch = target.partition("-arch=")[2] or arch
        try:
            lowered = lower_module(build(row), target=target, for_backend=True)
            if _which("nvcc"):  # the CUDA C, as NVRTC compiles it on the GPU's machine
                note = "nvcc: " + _nvcc_summary(emit_cuda(lowered), row_arch)
            else:
                ptx = module_ptx(lowered, arch=row_arch, via=None)
                note = f"{len(ptx)} characters of PTX via {ptx_path(None)}"
                if _which("ptxas"):
                    note += ", " + _ptxas_summary(ptx, row_arch)
        except Exception as error:  # reported in the row's line; the others still build
            failures += 1
            note = f"FAILED: {_one_line(error)}"
        print(f"{row.name:40s} {time.monotonic() - start:5.1f} s  {note}", flush=True)
    return 1 if failures else 0


def _which(tool: str) -> bool:
    import shutil

    return shutil.which(tool) is not None


def _ptxas_summary(ptx: str, arch: str) -> str:
    return _registers("ptxas", "k.ptx", ptx, [f"-arch={arch}", "-v"])


def _nvcc_summary(source: str, arch: str) -> str:
    return _registers("nvcc", "k.cu", source, [f"-arch={arch}", "-cubin", "-Xptxas", "-v"])


def _registers(tool: str, name: str, text: str, flags: list[str]) -> str:
    """`tool` run on `text`: the registers and spill stores ptxas reports for each kernel."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / name
        path.write_text(text)
        done = subprocess.run(
            [tool, *flags, str(path), "-o", str(Path(folder) / "k.cubin")],
            capture_output=True,
            text=True,
            check=False,
        )
    if done.returncode != 0:
        raise RuntimeError(f"{tool}: {done.stderr.strip()[:400]}")
    registers = re.findall(r"Used (\d+) registers", done.stderr)
    spills = re.findall(r"(\d+) bytes spill stores", done.stderr)
    return f"ptxas: registers {','.join(registers)}, spill stores {','.join(spills)}"


def _one_line(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0] if text else ''}"[:300]


# ---------------------------------------------------------------------------------------------
# Timing on the GPU


class Clock:
    """Times calls queued on `stream` by CUDA events, each after an L2 flush, all queued
    behind a spinning kernel (tirc.runtime.cuda_spin) so that the host's launch time is not
    measured. Lives as long as the process."""

    def __init__(self, device: Any) -> None:
        from tirc.runtime.cuda_driver import Releases
        from tirc.runtime.cuda_spin import Spinner

        self.device = device
        self.stream = device.call("cuStreamCreate", 0)
        self.flush = device.allocate(FLUSH_BYTES)
        self.spin = Spinner.load(device, Releases(device))  # never unloaded
        self.hertz = self.spin.hertz

    def time(self, call: Callable[[Any], None], repeats: int) -> float:
        """The median seconds of `call(stream)` over `repeats` calls."""
        device, stream = self.device, self.stream
        call(stream)  # warm-up
        device.call("cuStreamSynchronize", stream)
        start = time.perf_counter()
        for _ in range(3):
            self._flush()
            call(stream)
        host = (time.perf_counter() - start) / 3  # the host's time to queue one call
        device.call("cuStreamSynchronize", stream)
        events = [
            (device.call("cuEventCreate", 0), device.call("cuEventCreate", 0))
            for _ in range(repeats)
        ]
        try:
            self.spin.launch(stream, seconds=2 * host * repeats + 2e-3)
            for begin, end in events:
                self._flush()
                device.call("cuEventRecord", begin, stream)
                call(stream)
                device.call("cuEventRecord", end, stream)
            device.call("cuStreamSynchronize", stream)
            samples = [device.call("cuEventElapsedTime", b, e) / 1e3 for b, e in events]
        finally:
            for pair in events:
                for event in pair:
                    device.call("cuEventDestroy", event)
        return statistics.median(samples)

    def _flush(self) -> None:
        self.device.call("cuMemsetD8Async", self.flush, 0, FLUSH_BYTES, self.stream)


_TARGET = re.compile(r"^#.*--target '(cuda -arch=sm_\w+)'", re.MULTILINE)


def target_of(text: str) -> str:
    """The target a program's comment asks for (`# ... --target 'cuda -arch=sm_90a'`, for a
    Hopper-only kernel), else cuda for this GPU's architecture."""
    found = _TARGET.search(text)
    return found.group(1) if found else "cuda"


def run_tirc(row: Row, args: dict[str, np.ndarray | int], repeats: int) -> float:
    """Runs the row's kernel on `args` (the arrays become the results) and times `repeats`
    more calls with the Clock: the median seconds of one."""
    from tirc.driver.run_cuda import run_on_cuda
    from tirc.runtime.throughput import Timing

    clock = DEVICE.timer()

    def timer(call: Callable[[Any], None], count: int) -> Timing:
        return Timing(clock.time(call, count), count, "CUDA events, L2 flushed")

    module = build(row)
    _, timing, arch = run_on_cuda(
        module, "main", module["main"], target_of(row.text), args, bench=True, repeats=repeats,
        device=DEVICE.get(), timer=timer,
    )  # fmt: skip
    row.result["arch"] = arch
    assert timing is not None
    return timing.median


class _Device:
    """The one Device and Clock of this process, made on first use."""

    def __init__(self) -> None:
        self.device: Any = None
        self.clock: Clock | None = None

    def get(self) -> Any:
        if self.device is None:
            from tirc.runtime.cuda_driver import Device

            self.device = Device()
        return self.device

    def timer(self) -> Clock:
        if self.clock is None:
            self.clock = Clock(self.get())
        return self.clock


DEVICE = _Device()


def _torch() -> Any:
    """torch with CUDA, or the reason there is none."""
    try:
        import torch  # type: ignore[import-not-found]  # optional: the baselines
    except ImportError:
        return "skipped: torch is not importable"
    if not torch.cuda.is_available():
        return "skipped: torch sees no CUDA device"
    return torch


def torch_time(fn: Callable[[], Any], repeats: int) -> float:
    """The median seconds of `fn()` on torch's current stream, timed as Clock times."""
    torch = _torch()
    flush = torch.empty(FLUSH_BYTES, dtype=torch.uint8, device="cuda")
    fn()
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(3):
        flush.zero_()
        fn()
    host = (time.perf_counter() - start) / 3
    torch.cuda.synchronize()
    events = [
        (torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
        for _ in range(repeats)
    ]
    hertz = DEVICE.timer().hertz
    if hasattr(torch.cuda, "_sleep"):
        torch.cuda._sleep(int((2 * host * repeats + 2e-3) * hertz))
    for begin, end in events:
        flush.zero_()
        begin.record()
        fn()
        end.record()
    torch.cuda.synchronize()
    return statistics.median(b.elapsed_time(e) / 1e3 for b, e in events)


# ---------------------------------------------------------------------------------------------
# The rows' runs


class Inputs:
    """Seeded inputs, made once per shape and shared by the rows."""

    def __init__(self) -> None:
        self.cache: dict[tuple[str, tuple[int, ...]], np.ndarray] = {}

    def derived(self, kind: str, source: np.ndarray, make: Callable[[], np.ndarray]) -> np.ndarray:
        """What `make` computes from the input `source`, made once (each row checks against it)."""
        key = (kind, (id(source),))
        if key not in self.cache:
            self.cache[key] = make()
        return self.cache[key]

    def get(self, kind: str, shape: tuple[int, ...], dtype: Any, scale: float = 1.0) -> np.ndarray:
        key = (kind, shape)
        if key not in self.cache:
            rng = np.random.default_rng(len(self.cache))
            self.cache[key] = rng.uniform(-scale, scale, shape).astype(dtype)
        return self.cache[key]


INPUTS = Inputs()


def run_elementwise(row: Row, repeats: int) -> dict[str, Any]:
    (n,) = row.shape
    a = INPUTS.get("A", (n,), np.float32)
    args: dict[str, np.ndarray | int] = {"A": a, "B": np.zeros_like(a)}
    seconds = run_tirc(row, args, repeats)
    want = INPUTS.derived("elementwise", a, lambda: a * np.float32(2) + np.float32(1))
    error = float(np.abs(np.asarray(args["B"]) - want).max())
    moved = 2 * a.nbytes
    result = _bandwidth(seconds, moved, error, error <= 1e-6)
    baseline = BASELINES.get(("copy", a.nbytes), lambda: _copy_seconds(a.nbytes, repeats))
    result.update(_versus("cuMemcpyDtoD", baseline, seconds, moved, "gbps"))
    return result


def run_softmax(row: Row, repeats: int) -> dict[str, Any]:
    m, k = row.shape
    a = INPUTS.get("A", (m, k), np.float32, scale=4.0)  # exponents of -4..4: e^8 apart
    args: dict[str, np.ndarray | int] = {"A": a, "B": np.zeros_like(a)}
    seconds = run_tirc(row, args, repeats)
    have = np.asarray(args["B"])
    sample = np.random.default_rng(1).integers(0, m, min(m, 512))

    def reference() -> np.ndarray:
        x = a[sample].astype(np.float64)
        e = np.exp(x - x.max(-1, keepdims=True))
        return e / e.sum(-1, keepdims=True)

    want = INPUTS.derived("softmax", a, reference)
    error = float(np.abs(have[sample] - want).max())
    moved = 2 * a.nbytes
    result = _bandwidth(seconds, moved, error, error <= 1e-5 and bool(np.isfinite(have).all()))
    baseline = BASELINES.get(("softmax", (m, k)), lambda: _torch_softmax(a, repeats))
    result.update(_versus("torch.softmax", baseline, seconds, moved, "gbps"))
    return result


def run_gemm(row: Row, repeats: int) -> dict[str, Any]:
    m, n, k = row.shape
    dtype = ml_dtypes.bfloat16 if _BF16_A.search(row.text) else np.float16
    a = INPUTS.get(f"A {np.dtype(dtype).name}", (m, k), dtype)
    b = INPUTS.get(f"B {np.dtype(dtype).name}", (k, n), dtype)
    args: dict[str, np.ndarray | int] = {"A": a, "B": b, "C": np.zeros((m, n), np.float32)}
    seconds = run_tirc(row, args, repeats)
    sample = np.random.default_rng(2).integers(0, m, 32)
    want = INPUTS.derived("gemm", a, lambda: a[sample].astype(np.float32) @ b.astype(np.float32))
    error = float(np.abs(np.asarray(args["C"])[sample] - want).max())
    flops = 2.0 * m * n * k
    result: dict[str, Any] = {
        "ms": seconds * 1e3,
        "tflops": flops / seconds / 1e12,
        "max_abs_error": error,
        "check": "ok" if error <= 1e-2 * np.sqrt(k) / 8 else "mismatch",
    }
    key = ("matmul", (m, n, k), np.dtype(dtype).name)
    baseline = BASELINES.get(key, lambda: _cublas(a, b, repeats))
    result.update(_versus("torch.matmul (cuBLAS)", baseline, seconds, flops, "tflops"))
    return result


def _bandwidth(seconds: float, moved: int, error: float, ok: bool) -> dict[str, Any]:
    return {
        "ms": seconds * 1e3,
        "gbps": moved / seconds / 1e9,
        "max_abs_error": error,
        "check": "ok" if ok else "mismatch",
    }


def _versus(
    name: str, baseline: float | str, seconds: float, amount: float, unit: str
) -> dict[str, Any]:
    """The baseline's numbers and the row's ratio to it (above 1: tirc is faster)."""
    if isinstance(baseline, str):
        return {"baseline": name, "baseline_note": baseline}
    scale = 1e9 if unit == "gbps" else 1e12
    return {
        "baseline": name,
        "baseline_ms": baseline * 1e3,
        f"baseline_{unit}": amount / baseline / scale,
        "ratio": baseline / seconds,
    }


class Baselines:
    """Each baseline measured once per shape, and shared by the rows that compare with it."""

    def __init__(self) -> None:
        self.known: dict[object, float | str] = {}

    def get(self, key: object, measure: Callable[[], float | str]) -> float | str:
        if key not in self.known:
            try:
                self.known[key] = measure()
            except Exception as error:  # a baseline that fails is a note in its rows
                self.known[key] = f"failed: {_one_line(error)}"
        return self.known[key]


BASELINES = Baselines()


def _copy_seconds(nbytes: int, repeats: int) -> float:
    device = DEVICE.get()
    source, target = device.allocate(nbytes), device.allocate(nbytes)
    try:
        return DEVICE.timer().time(
            lambda stream: device.call("cuMemcpyDtoDAsync", target, source, nbytes, stream),
            repeats,
        )
    finally:
        device.call("cuMemFree", source)
        device.call("cuMemFree", target)


def _torch_softmax(a: np.ndarray, repeats: int) -> float | str:
    torch = _torch()
    if isinstance(torch, str):
        return torch
    x = torch.from_numpy(a).cuda()
    return torch_time(lambda: torch.softmax(x, dim=-1), repeats)


def _cublas(a: np.ndarray, b: np.ndarray, repeats: int) -> float | str:
    torch = _torch()
    if isinstance(torch, str):
        return torch
    if a.dtype == np.float16:
        x, y = torch.from_numpy(a).cuda(), torch.from_numpy(b).cuda()
    else:  # torch takes no ml_dtypes array: bfloat16 through float32, exactly
        x, y = (torch.from_numpy(v.astype(np.float32)).cuda().to(torch.bfloat16) for v in (a, b))
    return torch_time(lambda: torch.matmul(x, y), repeats)


RUNS = {"elementwise": run_elementwise, "softmax": run_softmax, "gemm": run_gemm}


def run_rows(rows: list[Row], repeats: int, deadline: float) -> list[Row]:
    """Runs the rows in order, those past `deadline` (time.monotonic) skipped; returns those
    left when a kernel faulted (the context is lost), which must run in a fresh process."""
    from tirc.runtime.cuda_driver import CudaError

    for index, row in enumerate(rows):
        start = time.monotonic()
        row.result = {"group": row.group, "source": row.source, "defines": row.defines}
        row.result["plan"] = (
            str(row.plan.relative_to(ROOT)) if isinstance(row.plan, Path) else "inline"
        )
        if start > deadline:
            row.result["error"] = "skipped: the run is past its --budget"
            continue
        try:
            count = max(3, int(repeats * row.repeats_scale))
            row.result.update(RUNS[row.group](row, count))
            row.result["repeats"] = count
        except Exception as error:  # recorded in the row; the others still run
            row.result["error"] = _one_line(error)
            faulted = isinstance(error, CudaError) and error.is_fault
            if faulted or "faulted on the GPU" in str(error):  # the context is lost
                print(_summary(row), file=sys.stderr, flush=True)
                return rows[index + 1 :]
        row.result["seconds"] = round(time.monotonic() - start, 1)
        print(_summary(row), file=sys.stderr, flush=True)
    return []


def _summary(row: Row) -> str:
    r = row.result
    if "error" in r:
        return f"{row.name:40s} ERROR {r['error']}"
    unit = "tflops" if "tflops" in r else "gbps"
    rate = f"{r[unit]:8.1f} {'TFLOP/s' if unit == 'tflops' else 'GB/s'}"
    ratio = f"{r['ratio']:.3f}x {r['baseline']}" if "ratio" in r else r.get("baseline_note", "")
    return f"{row.name:40s} {r['ms']:9.4f} ms {rate}  {ratio}  check {r['check']}"


def best_rows(results: dict[str, Any]) -> dict[str, str]:
    """For each workload (a group at a size), its correct row with the highest ratio to the
    baseline (or the highest rate without one), as `name: ratio x baseline`."""
    best: dict[str, tuple[float, str]] = {}
    for name, result in results.items():
        if not isinstance(result, dict) or result.get("check") != "ok":
            continue
        size = name.partition("@")[2] or "x".join(result.get("defines", {}).values())
        key = f"{result['group']}@{size}"
        score = result.get("ratio", 0.0)
        rate = result.get("gbps") or result.get("tflops") or 0.0
        if key not in best or score > best[key][0]:
            unit = "GB/s" if "gbps" in result else "TFLOP/s"
            text = f"{name}: {rate:.1f} {unit}, {score:.3f}x {result.get('baseline', '')}"
            best[key] = (score, text)
    return {key: text for key, (_, text) in sorted(best.items())}


def in_child(names: list[str], options: argparse.Namespace, budget: float) -> dict[str, Any]:
    """Runs the named rows in a fresh process within `budget` seconds; their results by name."""
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "rows.json"
        command = [
            sys.executable, __file__, "--rows", ",".join(names), "--json", str(out),
            "--repeats", str(options.repeats), "--gemm-sizes", options.gemm_sizes,
            "--elements", str(options.elements), "--budget", str(max(1.0, budget)),
        ]  # fmt: skip
        subprocess.run(command, check=False, stdout=sys.stderr)  # its rows: in our JSON
        if not out.exists():
            return {name: {"error": "the fresh process wrote no results"} for name in names}
        results = json.loads(out.read_text())
        return {name: results.get(name, {"error": "not run"}) for name in names}


def device_info() -> dict[str, Any]:
    info: dict[str, Any] = {}
    try:
        device = DEVICE.get()
        name = device.call("cuDeviceGetName", 256, device.device)
        info["name"] = name.split(b"\0", 1)[0].decode() if isinstance(name, bytes) else str(name)
        info["arch"] = device.arch
    except Exception as error:  # the rows say it again, each
        return {"error": _one_line(error)}
    for key, attribute, scale in (
        ("sms", "MULTIPROCESSOR_COUNT", 1),
        ("sm_clock_mhz", "CLOCK_RATE", 1e-3),
        ("memory_clock_mhz", "MEMORY_CLOCK_RATE", 1e-3),
        ("memory_bus_bits", "GLOBAL_MEMORY_BUS_WIDTH", 1),
    ):
        try:
            info[key] = device.attribute(attribute) * scale
        except Exception:  # an attribute this CUDA no longer has
            info[key] = None
    return info


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gemm-sizes", default="4096,8192", help="the GEMMs' M = N = K")
    parser.add_argument("--elements", type=int, default=ELEMENTS, help="elementwise size")
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--only", action="append", default=[], help="rows whose name has this")
    parser.add_argument("--rows", default="", help=argparse.SUPPRESS)  # exact names (a child)
    parser.add_argument("--list", action="store_true", help="print the rows and stop")
    parser.add_argument("--compile-only", action="store_true", help="build every row; no GPU")
    parser.add_argument("--arch", default="sm_90", help="--compile-only's architecture")
    parser.add_argument("--json", default=None, help="also write the results here")
    parser.add_argument(
        "--budget", type=float, default=240.0, help="seconds; later rows are skipped"
    )
    options = parser.parse_args()
    sizes = tuple(int(size) for size in options.gemm_sizes.split(",") if size)
    rows = select(all_rows(sizes, options.elements), options.only)
    if options.rows:
        wanted = options.rows.split(",")
        rows = [row for row in rows if row.name in wanted]
    if options.list:
        for row in rows:
            print(f"{row.name:40s} {row.source} {row.defines}")
        return 0
    if options.compile_only:
        return compile_only(rows, options.arch)
    results: dict[str, Any] = {} if options.rows else {"device": device_info()}
    start = time.monotonic()
    left = run_rows(rows, options.repeats, start + options.budget)
    for row in rows:
        if row.result:
            results[row.name] = row.result
    if left:
        spent = time.monotonic() - start
        results.update(in_child([row.name for row in left], options, options.budget - spent))
    if not options.rows:
        results["seconds"] = round(time.monotonic() - start, 1)
        results["best"] = best_rows(results)
        for line in (f"best {key}: {value}" for key, value in results["best"].items()):
            print(line, file=sys.stderr)
    text = json.dumps(results, indent=2)
    print(text)
    if options.json:
        Path(options.json).write_text(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

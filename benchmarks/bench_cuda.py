"""tirc's CUDA code on a real GPU: a float16 tensor-core matmul against cuBLAS, and an
elementwise kernel against the device's own copy bandwidth. Not a test and not run in CI.

Run on a machine with an NVIDIA GPU and its driver, in tirc's venv with the cuda extra
(cuda-bindings and nvidia-cuda-nvrtc; ptxas on PATH is used when present):

    pip install -e '.[cuda]'          # plus torch or cupy for the cuBLAS baseline
    python benchmarks/bench_cuda.py [--n 4096] [--elements 67108864] [--repeats 20] [--json F]

1. matmul: samples/gpu/matmul_fp16_tc.tir scheduled by its plan (wmma 16x16x16 tensor cores,
   shared-memory staging), at N x N x N, timed with CUDA events through tirc's own launcher
   (tirc.driver.run_cuda), against torch.matmul or cupy.matmul on float16 (cuBLAS); without
   either the baseline is skipped with a note. GFLOP/s count 2 N^3.
2. elementwise: B = A * 2 + 1 over float32 (vectorized by 4, 128 threads a block), against
   cuMemcpyDtoD of the same bytes, both as GB/s of bytes read plus written.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

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


def _schedule(text: str, name: str, plan: Path | dict, defines: dict[str, str]):  # type: ignore[no-untyped-def]
    from tirc.driver.schedule import apply_plan_file
    from tirc.text import parse

    module = parse(text, name=name, defines=defines)
    if isinstance(plan, dict):
        path = Path(f"/tmp/tirc_bench_{name}.plan.json")
        path.write_text(json.dumps(plan))
        plan = path
    scheduled, _ = apply_plan_file(module, str(plan))
    return scheduled


def bench_matmul(n: int, repeats: int) -> dict[str, object]:
    from tirc.driver.run_cuda import run_on_cuda

    source = ROOT / "samples" / "gpu" / "matmul_fp16_tc.tir"
    plan = ROOT / "samples" / "gpu" / "matmul_fp16_tc.plan.json"
    module = _schedule(source.read_text(), "matmul_fp16_tc", plan, {"N": str(n)})
    rng = np.random.default_rng(0)
    a = rng.uniform(-1, 1, (n, n)).astype(np.float16)
    b = rng.uniform(-1, 1, (n, n)).astype(np.float16)
    args: dict[str, np.ndarray | int] = {"A": a, "B": b, "C": np.zeros((n, n), np.float32)}
    _, timing, arch = run_on_cuda(
        module, "main", module["main"], "cuda", args, bench=True, repeats=repeats
    )
    assert timing is not None
    flops = 2.0 * n**3
    sample = rng.integers(0, n, 64)
    want = a[sample].astype(np.float32) @ b.astype(np.float32)
    error = float(np.abs(np.asarray(args["C"])[sample] - want).max())
    result: dict[str, object] = {
        "n": n,
        "arch": arch,
        "tirc_ms": timing.median * 1e3,
        "tirc_gflops": flops / timing.median / 1e9,
        "max_abs_error_vs_numpy_rows": error,
    }
    baseline = _cublas(a, b, repeats)
    if isinstance(baseline, str):
        result["cublas_note"] = baseline
    else:
        result["cublas_ms"] = baseline * 1e3
        result["cublas_gflops"] = flops / baseline / 1e9
        result["tirc_vs_cublas"] = baseline / timing.median
    return result


def _cublas(a: np.ndarray, b: np.ndarray, repeats: int) -> float | str:
    """Median seconds of a float16 matmul through torch or cupy (cuBLAS), or why not."""
    try:
        import torch

        if torch.cuda.is_available():
            x, y = torch.from_numpy(a).cuda(), torch.from_numpy(b).cuda()
            torch.matmul(x, y)
            samples = []
            for _ in range(repeats):
                start = torch.cuda.Event(enable_timing=True)
                end = torch.cuda.Event(enable_timing=True)
                start.record()
                torch.matmul(x, y)
                end.record()
                end.synchronize()
                samples.append(start.elapsed_time(end) / 1e3)
            return statistics.median(samples)
    except ImportError:
        pass
    try:
        import cupy

        x, y = cupy.asarray(a), cupy.asarray(b)
        cupy.matmul(x, y)
        samples = []
        for _ in range(repeats):
            start, end = cupy.cuda.Event(), cupy.cuda.Event()
            start.record()
            cupy.matmul(x, y)
            end.record()
            end.synchronize()
            samples.append(cupy.cuda.get_elapsed_time(start, end) / 1e3)
        return statistics.median(samples)
    except ImportError:
        return "skipped: neither torch (with CUDA) nor cupy is importable"


def bench_elementwise(elements: int, repeats: int) -> dict[str, object]:
    from tirc.driver.run_cuda import run_on_cuda
    from tirc.runtime.cuda_driver import Device

    module = _schedule(ELEMENTWISE, "elementwise", ELEMENTWISE_PLAN, {"M": str(elements)})
    a = np.random.default_rng(0).standard_normal(elements).astype(np.float32)
    args: dict[str, np.ndarray | int] = {"A": a, "B": np.zeros_like(a)}
    _, timing, _ = run_on_cuda(
        module, "main", module["main"], "cuda", args, bench=True, repeats=repeats
    )
    assert timing is not None
    np.testing.assert_allclose(np.asarray(args["B"]), a * 2 + 1, rtol=1e-6)
    moved = 2 * a.nbytes  # read A, write B
    copy = _device_copy_seconds(Device(), a.nbytes, repeats)
    return {
        "elements": elements,
        "tirc_ms": timing.median * 1e3,
        "tirc_gbps": moved / timing.median / 1e9,
        "memcpy_dtod_ms": copy * 1e3,
        "memcpy_dtod_gbps": moved / copy / 1e9,
        "tirc_vs_memcpy": copy / timing.median,
    }


def _device_copy_seconds(device, nbytes: int, repeats: int) -> float:  # type: ignore[no-untyped-def]
    """Median seconds of cuMemcpyDtoD of `nbytes`, timed with CUDA events."""
    source, target = device.allocate(nbytes), device.allocate(nbytes)
    stream = device.call("cuStreamCreate", 0)
    start, end = device.call("cuEventCreate", 0), device.call("cuEventCreate", 0)
    try:
        device.call("cuMemcpyDtoDAsync", target, source, nbytes, stream)
        samples = []
        for _ in range(repeats):
            device.call("cuEventRecord", start, stream)
            device.call("cuMemcpyDtoDAsync", target, source, nbytes, stream)
            device.call("cuEventRecord", end, stream)
            device.call("cuEventSynchronize", end)
            samples.append(device.call("cuEventElapsedTime", start, end) / 1e3)
    finally:
        for event in (start, end):
            device.call("cuEventDestroy", event)
        device.call("cuStreamDestroy", stream)
        device.call("cuMemFree", source)
        device.call("cuMemFree", target)
    return statistics.median(samples)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=4096, help="matmul size (a multiple of 32)")
    parser.add_argument("--elements", type=int, default=1 << 26, help="elementwise size (x512)")
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--json", default=None, help="also write the results here")
    options = parser.parse_args()
    from tirc.diagnostics import DiagnosticError

    try:
        results = {
            "matmul_fp16_tc": bench_matmul(options.n, options.repeats),
            "elementwise": bench_elementwise(options.elements, options.repeats),
        }
    except DiagnosticError as error:
        print(f"bench_cuda: {error}", file=sys.stderr)
        return 1
    text = json.dumps(results, indent=2)
    print(text)
    if options.json:
        Path(options.json).write_text(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

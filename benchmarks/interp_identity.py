"""Bit-identity harness for interpreter refactors: runs a fixed set of programs and hashes
every output array (and every fault message), so that a rewrite of the interpreter can show
it computes exactly what it did before.

The programs: the CPU samples (unscheduled, and scheduled by their CPU plan), the conformance
cases in ../shared/conformance (input.tir and expected.tir on their recorded inputs, up to a
work limit), and the GPU samples' plans and the CUDA test kernels lowered for cuda, each run
in both GPU models (threads and lockstep).

    .venv/bin/python benchmarks/interp_identity.py --record   # writes interp_identity.json
    .venv/bin/python benchmarks/interp_identity.py            # compares with it
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the tests package (gpu_plans) beside tirc

from tirc import interp  # noqa: E402
from tirc.diagnostics import DiagnosticError  # noqa: E402
from tirc.interp.work import estimate_work  # noqa: E402
from tirc.ir.function import IRModule, PrimFunc  # noqa: E402
from tirc.text import parse, print_module  # noqa: E402

RECORD = Path(__file__).with_name("interp_identity.json")
CACHE = Path("/tmp/tirc-interp-identity")  # the programs as printed when recorded
CONFORMANCE = ROOT.parent / "shared" / "conformance" / "cases"
SAMPLES = ROOT / "samples"
KERNELS = ROOT / "tests" / "codegen_cuda" / "kernels"
WORK_LIMIT = 300_000  # statement executions a CPU program may take (a second or so)
# GPU plans whose thread-model runs take minutes; they run in lockstep only
LOCKSTEP_ONLY = ("gemm_mma", "gemm_wgmma_128x256", "matmul_fp16")
# what --quick leaves out: the GEMM plan variants (1-4 minutes each on a busy machine)
QUICK_SKIPS = ("gpu gemm_mma_", "gpu gemm_wgmma_128x256")


def digest(args: dict[str, object]) -> str:
    """One hash over every argument's name, dtype, shape and bytes."""
    hasher = hashlib.sha256()
    for name in sorted(args):
        value = args[name]
        hasher.update(name.encode())
        if isinstance(value, np.ndarray):
            hasher.update(f"{value.dtype}{value.shape}".encode())
            hasher.update(np.ascontiguousarray(value).tobytes())
        else:
            hasher.update(repr(value).encode())
    return hasher.hexdigest()[:16]


def outcome(module: IRModule, func: PrimFunc, args: dict, model: str | None) -> str:
    try:
        interp.run(func, args, module=module, gpu_model=model)
    except DiagnosticError as error:
        return "fault: " + str(error).splitlines()[0]
    return digest(args)


def pick(module: IRModule) -> PrimFunc:
    names = module.names()
    return module["main" if "main" in names else names[0]]


def cpu_samples() -> Iterator[tuple[str, Callable[[], IRModule]]]:
    """Each CPU sample as written, scheduled by its CPU plan, and lowered for cpu."""
    from tirc.driver.lower import lower_module
    from tirc.driver.schedule import apply_plan_file

    for path in sorted(SAMPLES.glob("*.tir")):
        plan = path.with_suffix(".cpu.plan.json")

        def written(path: Path = path) -> IRModule:
            return parse(path.read_text(), name=str(path))

        def scheduled(path: Path = path, plan: Path = plan) -> IRModule:
            return apply_plan_file(written(path), str(plan))[0]

        def lowered(path: Path = path, plan: Path = plan) -> IRModule:
            return lower_module(scheduled(path, plan), target="cpu")

        yield f"sample {path.stem}", written
        if plan.exists():
            yield f"sample {path.stem} cpu-plan", scheduled
            yield f"sample {path.stem} cpu-lowered", lowered


def conformance() -> Iterator[tuple[str, Callable[[], IRModule]]]:
    if not CONFORMANCE.is_dir():
        return
    for case in sorted(CONFORMANCE.iterdir()):
        for program in ("input.tir", "expected.tir"):
            path = case / program
            if path.exists():

                def read(path: Path = path) -> IRModule:
                    return parse(path.read_text(), name=str(path))

                yield f"conformance {case.name}/{program}", read


def gpu_programs() -> Iterator[tuple[str, Callable[[], IRModule]]]:
    """The GPU samples' plans at their test shapes, and the CUDA test kernels, lowered."""
    from tests.codegen_cuda.gpu_plans import gpu_plans
    from tirc.driver.lower import lower_module

    for plan in gpu_plans():
        yield f"gpu {plan.id}", plan.lowered
    for path in sorted(KERNELS.glob("*.tir")):

        def lowered(path: Path = path) -> IRModule:
            return lower_module(parse(path.read_text(), name=str(path)), target="cuda")

        yield f"kernel {path.stem}", lowered


def programs(rebuild: bool) -> dict[str, str]:
    """Every program's text, printed once into CACHE (so that later changes to the parser's
    callers, the schedule or the pipeline do not change what the interpreter is given)."""
    texts: dict[str, str] = {}
    CACHE.mkdir(parents=True, exist_ok=True)
    for source in (cpu_samples, conformance, gpu_programs):
        for name, make in source():
            cached = CACHE / (name.replace("/", "__").replace(" ", "_") + ".tir")
            if rebuild or not cached.exists():
                try:
                    cached.write_text(print_module(make()))
                except DiagnosticError as error:
                    cached.write_text("# fails: " + str(error).splitlines()[0] + "\n")
            texts[name] = cached.read_text()
    return texts


def run_program(name: str, text: str) -> dict[str, str] | None:
    """The outcome of each GPU model (one entry for a CPU program); None if it is too big."""
    if text.startswith("# fails"):
        return {"": text.strip()}
    module = parse(text, name=name)
    func = pick(module)
    gpu = name.startswith(("gpu ", "kernel "))
    if not gpu and estimate_work(func) > WORK_LIMIT:
        return None
    if name.startswith("conformance"):
        case = CONFORMANCE / name.removeprefix("conformance ").split("/")[0]
        make_inputs = lambda: case_inputs(case, func)  # noqa: E731
    else:
        make_inputs = lambda: dict(interp.random_inputs(func, seed=1))  # noqa: E731
    models: tuple[str | None, ...] = (None,)
    if gpu:
        models = (
            ("lockstep",)
            if name.removeprefix("gpu ").startswith(LOCKSTEP_ONLY)
            else (
                "threads",
                "lockstep",
            )
        )
    return {str(model or ""): outcome(module, func, make_inputs(), model) for model in models}


def case_inputs(case: Path, func: PrimFunc) -> dict[str, object]:
    """TVM's recorded inputs where they fit the signature, else random ones."""
    names = {param.name for param in func.params} | {buffer.name for _, buffer in func.buffer_map}
    if (case / "io.npz").exists():
        with np.load(case / "io.npz") as data:
            args = {
                key.split(".in.", 1)[1]: np.array(data[key]) for key in data.files if ".in." in key
            }
        if args and set(args) <= names and len(args) == len(func.params):
            return dict(args)
    try:
        return dict(interp.random_inputs(func, seed=1))
    except DiagnosticError:
        return {}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--record", action="store_true", help="print the programs anew and record their hashes"
    )
    parser.add_argument("--only", default="", help="run only programs whose name contains this")
    parser.add_argument("--quick", action="store_true", help="leave out the GEMM plan variants")
    options = parser.parse_args()
    results: dict[str, dict[str, object]] = {}
    seconds: dict[str, float] = {}
    skips = QUICK_SKIPS if options.quick else ()
    chosen = {
        name: text
        for name, text in programs(options.record).items()
        if options.only in name and not name.startswith(skips)
    }
    for name, text in chosen.items():
        begin = time.perf_counter()
        result = run_program(name, text)
        if result is not None:
            results[name] = result
            seconds[name] = time.perf_counter() - begin
    total = sum(seconds.values())
    slowest = sorted(seconds.items(), key=lambda item: -item[1])[:5]
    print(f"{len(results)} programs in {total:.1f} s; slowest:")
    for name, spent in slowest:
        print(f"  {spent:6.2f} s  {name}")
    if options.record:
        RECORD.write_text(json.dumps(results, indent=1, sort_keys=True) + "\n")
        print(f"recorded {RECORD.name}")
        return 0
    recorded = json.loads(RECORD.read_text())
    differ = [name for name in results if name in recorded and recorded[name] != results[name]]
    missing = [name for name in chosen if name in recorded and name not in results]
    for name in differ:
        print(f"DIFFERS {name}: was {recorded[name]}, now {results[name]}")
    for name in missing:
        print(f"MISSING {name}")
    print("bit-identical" if not differ and not missing else f"{len(differ)} differ")
    return 1 if differ or missing else 0


if __name__ == "__main__":
    sys.exit(main())

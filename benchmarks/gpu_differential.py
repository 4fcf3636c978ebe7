"""Issue #7's GPU differential over the conformance cases: each GPU case's scheduled module
(expected.tir), lowered for cuda and run in the interpreter's GPU model (lockstep by default:
every thread a numpy lane; `--model threads` for the race-checking thread model), computes
what the unscheduled program (input.tir) computes on the same random inputs.

The reference runs in the interpreter when the unscheduled program is small, else compiled for
this CPU and called in-process (the CPU backend is itself tested against the interpreter);
each line says which reference it used.

Not a test (it takes minutes): `python benchmarks/gpu_differential.py [--cases DIR]
[--timeout S] [--model auto|lockstep|threads] [--filter TEXT]`. Each case runs in a child
process with a time limit; shape variables (and scalar parameters) are 16.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # runs from a checkout without installing tirc
CASES = ROOT.parent / "shared" / "conformance" / "cases"
SIZES = 16  # every shape variable and scalar parameter, so that the interpreter finishes
INTERPRETER_WORK = 1 << 20  # reference statement runs up to which the interpreter is used


def check(case: str, on: str, model: str, size: int = SIZES) -> dict:
    """The case's verdict: {"status": ok | mismatch | refused | internal, "detail": ...,
    "reference": interp | cpu}. `on` is where the scheduled program runs: "interp" (lowered
    for cuda, in the interpreter's GPU `model`) or "cuda" (compiled and run on this machine's
    GPU by tirc's own launcher, as `tirc run --target cuda` does)."""
    import numpy as np

    from tirc.diagnostics import DiagnosticError
    from tirc.interp import random_inputs, run
    from tirc.text import parse

    folder = Path(case)
    original = parse((folder / "input.tir").read_text(), name=str(folder / "input.tir"))
    scheduled = parse((folder / "expected.tir").read_text(), name=str(folder / "expected.tir"))
    name = "main" if "main" in original else original.functions[0][0]
    func = original[name]
    sizes = {v.name: size for v in _shape_vars(func)}
    inputs = random_inputs(func, 0, sizes=sizes)
    want = _copy(inputs)
    have = _copy(inputs)
    try:
        if on == "cuda":
            from tirc.driver.run_cuda import run_on_cuda

            run_on_cuda(scheduled, name, scheduled[name], "cuda", have)
        else:
            from tirc.driver.lower import lower_module

            lowered = lower_module(scheduled, target="cuda")
            run(lowered[name], have, module=lowered, gpu_model=model)
    except DiagnosticError as error:
        return {"status": "refused", "detail": _first_line(error)}
    reference = "interp" if _work(func.body, sizes) <= INTERPRETER_WORK else "cpu"
    if reference == "cpu":
        try:
            _run_cpu(original, name, want)
        except DiagnosticError:  # the CPU backend lacks something: the interpreter it is
            reference = "interp"
            want = _copy(inputs)
    if reference == "interp":
        run(func, want, module=original)
    widened: dict | None = None
    for key, value in want.items():
        if not isinstance(value, np.ndarray):
            continue
        if value.dtype.kind == "f" or str(value.dtype) == "bfloat16":
            a, b = have[key].astype(np.float64), value.astype(np.float64)
            scale = float(np.nanmax(np.abs(b))) if b.size else 0.0
            ok = a.shape == b.shape and bool(
                np.allclose(a, b, rtol=1e-3, atol=1e-4 * max(1.0, scale), equal_nan=True)
            )
            if not ok and _computes_in_16_bits(folder / "input.tir"):
                if widened is None:
                    widened = _run_widened(folder / "input.tir", name, inputs, sizes)
                reduction = _reduction_length(func, sizes)
                ok = widened is not None and _as_accurate(have[key], value, widened[key], reduction)
        else:
            ok = np.array_equal(have[key], value)
        if not ok:
            detail = f"{key} differs{_difference(have[key], value)}"
            if _scheduled_agrees(scheduled, name, inputs, have, sizes):
                # the plan changed what the program computes (TVM's schedule tests check
                # structure only, e.g. an intrinsic whose impl is not its desc): the GPU is
                # right by the scheduled program's own meaning, so this is no GPU bug
                return {"status": "plan-changes-meaning", "detail": detail}
            return {"status": "mismatch", "detail": detail, "reference": reference}
    return {"status": "ok", "detail": "", "reference": reference}


def _scheduled_agrees(
    scheduled: object, name: str, inputs: dict, have: dict, sizes: dict[str, int]
) -> bool:
    """The scheduled program, run in the interpreter (small programs only), gives what the
    GPU gave."""
    import numpy as np

    from tirc.interp import run

    func = scheduled[name]  # type: ignore[index]
    if _work(func.body, sizes) > INTERPRETER_WORK:
        return False
    values = _copy(inputs)
    try:
        run(func, values, module=scheduled)
    except Exception:  # noqa: BLE001  (no verdict: it stays a mismatch)
        return False
    for key, value in values.items():
        if isinstance(value, np.ndarray):
            a, b = have[key].astype(np.float64), value.astype(np.float64)
            if a.shape != b.shape or not np.allclose(a, b, rtol=1e-3, atol=1e-4, equal_nan=True):
                return False
    return True


def _first_line(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return text[0][:300] if text else type(error).__name__


def _computes_in_16_bits(path: Path) -> bool:
    text = path.read_text()
    return '"float16"' in text or '"bfloat16"' in text


def _reduction_length(func: object, sizes: dict[str, int]) -> int:
    """The longest reduction of the unscheduled program: the product of a block's reduce
    iteration extents (shape variables at their sizes), at least 1."""
    from tirc.interp.inputs import evaluate_size
    from tirc.ir.functor import walk
    from tirc.ir.stmt import IterType, SBlock

    longest = [1]

    def visit(node: object) -> None:
        if isinstance(node, SBlock):
            length = 1
            for iter_var in node.iter_vars:
                if iter_var.iter_type is IterType.REDUCE and iter_var.dom is not None:
                    extent = evaluate_size(iter_var.dom.extent, sizes)
                    length *= SIZES if extent is None else max(1, extent)
            longest[0] = max(longest[0], length)

    walk(func.body, visit)  # type: ignore[attr-defined]
    return longest[0]


def _run_widened(path: Path, name: str, inputs: dict, sizes: dict) -> dict | None:
    """The unscheduled program with every float16 made float32, run on the same inputs (which
    float32 holds exactly); None when that program cannot run. A float16 sum of thousands of
    terms depends on its order by more than any fixed tolerance, so an output of a program
    that computes in float16 is judged against this more exact result (see _as_accurate)."""
    import numpy as np

    from tirc.diagnostics import DiagnosticError
    from tirc.text import parse

    text = path.read_text()
    for narrow in ("float16", "bfloat16"):
        text = text.replace(f'"{narrow}"', '"float64"').replace(f"T.{narrow}(", "T.float64(")
    try:
        module = parse(text, name=str(path) + " (float64)")
    except DiagnosticError:
        return None
    args = {
        k: v.astype(np.float64)
        if isinstance(v, np.ndarray) and str(v.dtype) in ("float16", "bfloat16")
        else v
        for k, v in _copy(inputs).items()
    }
    try:
        if _work(module[name].body, sizes) <= INTERPRETER_WORK:
            from tirc.interp import run

            run(module[name], args, module=module)
        else:
            _run_cpu(module, name, args)
    except (DiagnosticError, RuntimeError):
        return None
    return args


def _as_accurate(have: object, want: object, exact: object, reduction: int) -> bool:
    """The scheduled program's 16-bit output is as accurate as summation order allows: its
    largest error against the float64 result is at most twice the unscheduled program's own,
    or within one 16-bit rounding of the largest value times (1 + sqrt(reduction length)),
    the usual growth of rounding error over a sum of that many terms."""
    import numpy as np

    a, b, c = (np.asarray(x).astype(np.float64) for x in (have, want, exact))
    if a.shape != c.shape or np.isnan(a).sum() != np.isnan(b).sum():
        return False
    scale = float(np.nanmax(np.abs(c))) if c.size else 0.0
    error = float(np.nanmax(np.abs(a - c))) if a.size else 0.0
    own = float(np.nanmax(np.abs(b - c))) if b.size else 0.0
    rounding = scale * 2.0**-10 * (1 + reduction**0.5)
    return error <= max(2 * own, rounding) + scale * 2.0**-11


def _difference(have: object, want: object) -> str:
    """How far apart two float arrays are: elements off, largest error, largest magnitude."""
    import numpy as np

    a = np.asarray(have).astype(np.float64)
    b = np.asarray(want).astype(np.float64)
    if a.dtype.kind != "f" or a.shape != b.shape:
        return ""
    close = np.isclose(a, b, rtol=1e-3, atol=1e-4, equal_nan=True)
    error = np.nanmax(np.abs(a - b)) if a.size else 0.0
    scale = np.nanmax(np.abs(b)) if b.size else 0.0
    return f"; {int((~close).sum())}/{a.size} off, max error {error:.3g}, max |value| {scale:.3g}"


def _run_cpu(module: object, name: str, args: dict) -> None:
    """The unscheduled function compiled for this CPU, called on args in place. Its loops bound
    to GPU threads run as serial loops: in s-tir a thread binding only says where a loop runs,
    and the blocks under it mean the same either way (as the interpreter runs them)."""
    from dataclasses import replace

    from tirc.driver.run_cpu import jit_function
    from tirc.ir.function import IRModule

    functions = tuple(
        (n, replace(_serial(f), is_private=False) if n == name else f)
        for n, f in module.functions  # type: ignore[attr-defined]
    )
    assert isinstance(module, IRModule)
    public = replace(module, functions=functions)
    call = jit_function(public, name, "cpu")
    status = call(args)
    if status != 0:
        raise RuntimeError(f"the CPU reference returned {status}")


def _serial(func: object) -> object:
    """func with every thread-bound loop made a serial loop."""
    from dataclasses import replace

    from tirc.ir import stmt as S
    from tirc.ir.functor import Mutator

    class Unbind(Mutator):
        def visit_For(self, node: S.For) -> S.Stmt:
            loop: S.For = self.generic_visit(node)  # type: ignore[assignment]
            if loop.kind is not S.ForKind.THREAD_BINDING:
                return loop
            return replace(loop, kind=S.ForKind.SERIAL, thread_binding=None)

    return replace(func, body=Unbind().visit(func.body))  # type: ignore[attr-defined]


def _copy(values: dict) -> dict:
    import numpy as np

    return {
        k: np.array(v, copy=True) if isinstance(v, np.ndarray) else v for k, v in values.items()
    }


def _shape_vars(func: object) -> list:
    """Scalar parameters and every variable in a parameter's or match_buffer's shape."""
    from tirc.ir.buffer import Buffer
    from tirc.ir.expr import Var
    from tirc.ir.functor import walk
    from tirc.ir.stmt import SBlock

    found: list = []

    def add_from(expr: object) -> None:
        def visit(node: object) -> None:
            if isinstance(node, Var) and not node.dtype.is_handle and node not in found:
                found.append(node)

        walk(expr, visit)

    for param in func.params:  # type: ignore[attr-defined]
        buffer = func.buffer_of(param)  # type: ignore[attr-defined]
        if buffer is None and not param.dtype.is_handle:
            found.append(param)
    buffers: list[Buffer] = [b for _, b in func.buffer_map]  # type: ignore[attr-defined]

    def collect(node: object) -> None:
        if isinstance(node, SBlock):
            buffers.extend(match.buffer for match in node.match_buffers)

    walk(func.body, collect)  # type: ignore[attr-defined]
    for buffer in buffers:
        for dim in buffer.shape:
            add_from(dim)
    return found


def _work(stmt: object, sizes: dict[str, int]) -> int:
    """About how many statement runs the unscheduled function takes (loops multiplied)."""
    from tirc.interp.inputs import evaluate_size
    from tirc.ir import stmt as S

    if isinstance(stmt, S.For):
        extent = evaluate_size(stmt.extent, sizes)
        return max(SIZES if extent is None else extent, 1) * _work(stmt.body, sizes)
    if isinstance(stmt, S.SeqStmt):
        return sum(_work(item, sizes) for item in stmt.stmts)
    if isinstance(stmt, S.SBlockRealize):
        block = stmt.block
        return _work(block.body, sizes) + (_work(block.init, sizes) if block.init else 0)
    for field in ("body", "then_case", "else_case"):
        inner = getattr(stmt, field, None)
        if isinstance(inner, S.Stmt):
            return _work(inner, sizes)
    return 1


def _child(case: str, on: str, model: str, size: int, queue: multiprocessing.Queue) -> None:
    try:
        queue.put(check(case, on, model, size))
    except Exception as error:  # a report line per case, whatever went wrong
        import traceback

        where = traceback.extract_tb(error.__traceback__)[-1]
        queue.put(
            {
                "status": "internal",
                "detail": f"{type(error).__name__}: {_first_line(error)} "
                f"({Path(where.filename).name}:{where.lineno})",
            }
        )


def gpu_cases(folder: Path, text: str = "") -> list[Path]:
    """The conformance cases TVM scheduled for a GPU, whose name contains `text`."""
    found = []
    for case in sorted(folder.iterdir()):
        meta_path = case / "meta.json"
        if text not in case.name or not meta_path.exists():
            continue
        meta = json.loads(meta_path.read_text())
        if meta.get("targets") == "gpu" and (case / "expected.tir").exists():
            found.append(case)
    return found


def is_symbolic(case: Path) -> bool:
    """Whether the case's program has shape variables or scalar parameters (its size is ours
    to choose)."""
    from tirc.text import parse

    module = parse((case / "input.tir").read_text(), name=str(case / "input.tir"))
    name = "main" if "main" in module else module.functions[0][0]
    return bool(_shape_vars(module[name]))


def run_cases(
    cases: list[Path],
    on: str,
    model: str,
    jobs: int,
    timeout: float,
    echo: bool = True,
    sizes: tuple[int, ...] = (SIZES,),
) -> dict[str, dict]:
    """Each case in a child process of its own (a fault or a hang stays there), `jobs` at a
    time, each stopped after `timeout` seconds. A case with shape variables runs once per
    size in `sizes` (named `case@size` after the first)."""
    context = multiprocessing.get_context("fork")
    pending = [(case, sizes[0], case.name) for case in cases]
    pending += [
        (case, size, f"{case.name}@{size}")
        for case in cases
        if len(sizes) > 1 and is_symbolic(case)
        for size in sizes[1:]
    ]
    running: dict[str, tuple] = {}
    results: dict[str, dict] = {}
    while pending or running:
        while pending and len(running) < jobs:
            case, size, key = pending.pop(0)
            queue = context.Queue()
            child = context.Process(target=_child, args=(str(case), on, model, size, queue))
            child.start()
            running[key] = (child, queue, time.monotonic())
        time.sleep(0.05)
        for name, (child, queue, start) in list(running.items()):
            seconds = time.monotonic() - start
            result = None
            if not queue.empty():
                result = queue.get()
                child.join(5)
            elif not child.is_alive():
                result = {"status": "crash", "detail": f"exit code {child.exitcode}"}
            elif seconds > timeout:
                child.kill()
                result = {"status": "timeout", "detail": f"after {timeout:.0f} s"}
            if result is None:
                continue
            if child.is_alive():
                child.kill()
            del running[name]
            result["seconds"] = round(seconds, 2)
            results[name] = result
            if echo:
                line = f"{result['status']:<9} {result.get('detail', '')[:90]}"
                print(f"{line:<100} {seconds:6.1f} s  {name}", flush=True)
    return dict(sorted(results.items()))


def summarize(results: dict[str, dict]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for result in results.values():
        counts[result["status"]] = counts.get(result["status"], 0) + 1
    return counts


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--cases", type=Path, default=CASES)
    parser.add_argument("--on", choices=("interp", "cuda"), default="interp")
    parser.add_argument("--timeout", type=float, default=120)
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--model", choices=("auto", "lockstep", "threads"), default="lockstep")
    parser.add_argument("--filter", default="", help="only cases whose name contains this")
    parser.add_argument("--json", type=Path)
    parser.add_argument(
        "--sizes", default=str(SIZES), help="comma-separated values for shape variables"
    )
    args = parser.parse_args()
    cases = gpu_cases(args.cases, args.filter)
    sizes = tuple(int(size) for size in args.sizes.split(","))
    results = run_cases(cases, args.on, args.model, args.jobs, args.timeout, sizes=sizes)
    counts = summarize(results)
    print(f"\nGPU differential ({args.on}): {counts.get('ok', 0)}/{len(results)} match; {counts}")
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())

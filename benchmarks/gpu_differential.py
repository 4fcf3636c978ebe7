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
CASES = ROOT.parent / "shared" / "conformance" / "cases"
SIZES = 16  # every shape variable and scalar parameter, so that the interpreter finishes
INTERPRETER_WORK = 1 << 20  # reference statement runs up to which the interpreter is used


def check(case: str, model: str) -> str:
    """'ok (reference)', or the reason the case does not match."""
    import numpy as np

    from tirc.diagnostics import DiagnosticError
    from tirc.driver.lower import lower_module
    from tirc.interp import random_inputs, run
    from tirc.text import parse

    folder = Path(case)
    original = parse((folder / "input.tir").read_text(), name=str(folder / "input.tir"))
    scheduled = parse((folder / "expected.tir").read_text(), name=str(folder / "expected.tir"))
    lowered = lower_module(scheduled, target="cuda")
    name = "main" if "main" in original else original.functions[0][0]
    func = original[name]
    sizes = {v.name: SIZES for v in _shape_vars(func)}
    inputs = random_inputs(func, 0, sizes=sizes)
    want = _copy(inputs)
    have = _copy(inputs)
    reference = "interp" if _work(func.body, sizes) <= INTERPRETER_WORK else "cpu"
    if reference == "cpu":
        try:
            _run_cpu(original, name, want)
        except DiagnosticError:  # the CPU backend lacks something: the interpreter it is
            reference = "interp"
            want = _copy(inputs)
    if reference == "interp":
        run(func, want, module=original)
    run(lowered[name], have, module=lowered, gpu_model=model)
    widened: dict | None = None
    for key, value in want.items():
        if isinstance(value, np.ndarray):
            if value.dtype.kind == "f" or str(value.dtype) == "bfloat16":
                a, b = have[key].astype(np.float64), value.astype(np.float64)
                ok = np.allclose(a, b, rtol=1e-3, atol=1e-4, equal_nan=True)
                if not ok and '"float16"' in (folder / "input.tir").read_text():
                    if widened is None:
                        widened = _run_widened(folder / "input.tir", name, inputs, sizes)
                    ok = widened is not None and _as_accurate(have[key], value, widened[key])
            else:
                ok = np.array_equal(have[key], value)
            if not ok:
                return f"{key} differs (reference: {reference}{_difference(have[key], value)})"
    return f"ok ({reference})"


def _run_widened(path: Path, name: str, inputs: dict, sizes: dict) -> dict | None:
    """The unscheduled program with every float16 made float32, run on the same inputs (which
    float32 holds exactly); None when that program cannot run. A float16 sum of thousands of
    terms depends on its order by more than any fixed tolerance, so an output of a program
    that computes in float16 is judged against this more exact result (see _as_accurate)."""
    import numpy as np

    from tirc.diagnostics import DiagnosticError
    from tirc.text import parse

    text = path.read_text().replace('"float16"', '"float32"').replace("T.float16(", "T.float32(")
    try:
        module = parse(text, name=str(path) + " (float32)")
    except DiagnosticError:
        return None
    args = {
        k: v.astype(np.float32) if isinstance(v, np.ndarray) and v.dtype == np.float16 else v
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


def _as_accurate(have: object, want: object, exact: object) -> bool:
    """The scheduled program's output is as accurate as the unscheduled program's:
    its largest error against the float32 result is at most twice the unscheduled program's
    own, plus one float16 rounding of the largest value."""
    import numpy as np

    a, b, c = (np.asarray(x).astype(np.float64) for x in (have, want, exact))
    if a.shape != c.shape or np.isnan(a).sum() != np.isnan(b).sum():
        return False
    scale = float(np.nanmax(np.abs(c))) if c.size else 0.0
    error = float(np.nanmax(np.abs(a - c))) if a.size else 0.0
    own = float(np.nanmax(np.abs(b - c))) if b.size else 0.0
    return error <= 2 * own + scale * 2.0**-11


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


def _child(case: str, model: str, queue: multiprocessing.Queue) -> None:
    try:
        queue.put(check(case, model))
    except Exception as error:  # a report line per case, whatever went wrong
        queue.put(f"{type(error).__name__}: {str(error).splitlines()[0][:160]}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--cases", type=Path, default=CASES)
    parser.add_argument("--timeout", type=float, default=120)
    parser.add_argument("--model", choices=("auto", "lockstep", "threads"), default="lockstep")
    parser.add_argument("--filter", default="", help="only cases whose name contains this")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    results: dict[str, str] = {}
    for folder in sorted(args.cases.iterdir()):
        if args.filter not in folder.name:
            continue
        meta = json.loads((folder / "meta.json").read_text())
        if meta.get("targets") != "gpu" or not (folder / "expected.tir").exists():
            continue
        queue: multiprocessing.Queue = multiprocessing.Queue()
        child = multiprocessing.Process(target=_child, args=(str(folder), args.model, queue))
        start = time.monotonic()
        child.start()
        child.join(args.timeout)
        if child.is_alive():
            child.kill()
            results[folder.name] = f"timeout after {args.timeout:.0f} s"
        else:
            results[folder.name] = queue.get() if not queue.empty() else "crashed"
        seconds = time.monotonic() - start
        print(f"{results[folder.name][:100]:<60} {seconds:6.1f} s  {folder.name}", flush=True)
    passed = sum(1 for r in results.values() if r.startswith("ok"))
    timeouts = sum(1 for r in results.values() if r.startswith("timeout"))
    print(f"\nGPU differential: {passed}/{len(results)} match ({timeouts} timed out)")
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())

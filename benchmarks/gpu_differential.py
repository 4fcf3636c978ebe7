"""Issue #7's GPU differential over the conformance cases: each GPU case's scheduled module
(expected.tir), lowered for cuda and run in the interpreter's thread model, computes what the
unscheduled program (input.tir) computes on the same random inputs.

Not a test (it takes minutes): `python benchmarks/gpu_differential.py [--cases DIR] [--timeout S]`.
Each case runs in a child process with a time limit; symbolic shapes get small sizes.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CASES = ROOT.parent / "shared" / "conformance" / "cases"
SIZES = 16  # every symbolic shape variable, so that the interpreter finishes


def check(case: str) -> str:
    """'ok', or the reason the case does not match."""
    import numpy as np

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
    inputs = random_inputs(func, 0, sizes=sizes or None)
    want = _copy(inputs)
    have = _copy(inputs)
    run(func, want, module=original)
    run(lowered[name], have, module=lowered)
    for key, value in want.items():
        if isinstance(value, np.ndarray):
            if value.dtype.kind == "f":
                ok = np.allclose(have[key], value, rtol=1e-3, atol=1e-4, equal_nan=True)
            else:
                ok = np.array_equal(have[key], value)
            if not ok:
                return f"{key} differs"
    return "ok"


def _copy(values: dict) -> dict:
    import numpy as np

    return {
        k: np.array(v, copy=True) if isinstance(v, np.ndarray) else v for k, v in values.items()
    }


def _shape_vars(func: object) -> list:
    from tirc.ir.expr import Var

    found = []
    for _, buffer in func.buffer_map:  # type: ignore[attr-defined]
        for dim in buffer.shape:
            if isinstance(dim, Var) and dim not in found:
                found.append(dim)
    return found


def _child(case: str, queue: multiprocessing.Queue) -> None:
    try:
        queue.put(check(case))
    except Exception as error:  # a report line per case, whatever went wrong
        queue.put(f"{type(error).__name__}: {str(error).splitlines()[0][:160]}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--cases", type=Path, default=CASES)
    parser.add_argument("--timeout", type=float, default=120)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    results: dict[str, str] = {}
    for folder in sorted(args.cases.iterdir()):
        meta = json.loads((folder / "meta.json").read_text())
        if meta.get("targets") != "gpu" or not (folder / "expected.tir").exists():
            continue
        queue: multiprocessing.Queue = multiprocessing.Queue()
        child = multiprocessing.Process(target=_child, args=(str(folder), queue))
        child.start()
        child.join(args.timeout)
        if child.is_alive():
            child.kill()
            results[folder.name] = f"timeout after {args.timeout:.0f} s"
        else:
            results[folder.name] = queue.get() if not queue.empty() else "crashed"
        print(f"{results[folder.name][:100]:<60} {folder.name}", flush=True)
    passed = sum(1 for r in results.values() if r == "ok")
    timeouts = sum(1 for r in results.values() if r.startswith("timeout"))
    print(f"\nGPU differential: {passed}/{len(results)} match ({timeouts} timed out)")
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())

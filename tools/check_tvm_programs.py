"""tirc's front end on the programs tools/record_tvm_passes.py --programs kept from TVM's tests.

    .venv/bin/python tools/check_tvm_programs.py /work/tvm_programs [--show N]

Each program is TVM 0.27's print of a module its TVMScript parser built (and re-read to an
equal module), so TVM accepts every one. For each, tirc must parse it (`parse error` /
`parse crash` otherwise), print it to text that parses back to an equal module (`round trip
differs` / `round trip fails`), and its verifier must accept it (`verifier rejects`: a rule
stricter than TVM's, or a program TVM's tests build on purpose to be odd; look at each). The
structure tirc builds can be compared with TVM's by tests/text/oracle/compare.py.

With --run, each function of each program that reads is also run as
`tirc run --target cpu --check` does (every shape variable and integer parameter 8, bool
parameters true, float ones 0.5, random inputs), one child process a function with a time
and memory limit: `ran` (the compiled code agrees with the interpreter), `refused` (a located
error: a fault the program has, a GPU program, an intrinsic the CPU lacks; the first line is
listed), `crash` (a traceback: a bug), `died` (the process was killed: a native crash, or out
of time or memory).

To iterate on a slice: `--start N --count M` run functions N..N+M-1 of the sorted list,
`--results FILE` writes every function's verdict (`verdict<TAB>file::name<TAB>detail`), and
`--only FILE --verdicts crash,died` runs again just the functions a results file gave those
verdicts.
"""

from __future__ import annotations

import argparse
import collections
import sys
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tirc.analysis.well_formed import verify_module  # noqa: E402
from tirc.diagnostics import DiagnosticError, Severity  # noqa: E402
from tirc.ir.structural import find_difference  # noqa: E402
from tirc.text import parse, print_module  # noqa: E402


def check(path: Path) -> tuple[str, str]:
    try:
        module = parse(path.read_text(), name=str(path))
    except DiagnosticError as error:
        return "parse error", str(error).splitlines()[0]
    except Exception:  # noqa: BLE001
        return "parse crash", traceback.format_exc().splitlines()[-1]
    try:
        again = parse(print_module(module), name=f"{path} (printed)")
    except Exception as error:  # noqa: BLE001
        return "round trip fails", str(error).splitlines()[0]
    difference = find_difference(module, again)
    if difference is not None:
        return "round trip differs", f"{difference.path}: {difference.message}"
    try:
        errors = [d for d in verify_module(module) if d.severity is Severity.ERROR]
    except Exception:  # noqa: BLE001
        return "verifier crash", traceback.format_exc().splitlines()[-1]
    if errors:
        return "verifier rejects", str(errors[0]).splitlines()[0]
    return "ok", ""


def run_function(path: str, name: str) -> tuple[str, str]:
    """`tirc run --target cpu --check` on one function, in this (child) process."""
    import contextlib
    import io
    import resource
    import tempfile

    import numpy as np

    from tirc.driver.inputs import npz_bytes
    from tirc.driver.run import run_file
    from tirc.interp.memory.storage import array_type
    from tirc.ir.abi import parameter_buffers
    from tirc.ir.expr import Var
    from tirc.ir.functor import walk
    from tirc.ir.node import Node

    resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))
    func = parse(Path(path).read_text(), name=path)[name]
    buffers = parameter_buffers(func)
    scalars = [
        p
        for p in func.params
        if p not in buffers and (p.dtype.is_bool or p.dtype.is_integer or p.dtype.is_float)
    ]
    sizes = {p.name: 8 if p.dtype.is_integer else 1 for p in scalars if not p.dtype.is_float}
    floats = {p.name: np.array(0.5, array_type(p.dtype)) for p in scalars if p.dtype.is_float}
    inputs = None
    if floats:
        inputs = tempfile.NamedTemporaryFile(suffix=".npz", delete=False).name
        Path(inputs).write_bytes(npz_bytes(floats))

    def shape_var(node: Node) -> None:
        if isinstance(node, Var) and node.dtype.is_int:
            sizes.setdefault(node.name, 8)

    for buffer in buffers.values():
        for extent in buffer.shape:
            walk(extent, shape_var)
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            run_file(path, target="cpu", func=name, check=True, sizes=sizes, inputs=inputs)
    except DiagnosticError as error:
        return "refused", str(error).splitlines()[0]
    except Exception:  # noqa: BLE001
        return "crash", traceback.format_exc()[-600:]
    finally:
        if inputs is not None:
            Path(inputs).unlink()
    return "ran", ""


def _work(path: str, name: str) -> str:
    """How many statements the interpreter would run (`--check` runs it), where that is
    beyond what it does in a minute: the likely reason for a timeout."""
    from tirc.interp.work import estimate_work

    work = estimate_work(parse(Path(path).read_text(), name=path)[name])
    return f" (the interpreter: about {work:,} statement executions)" if work > 10**8 else ""


def previous_jobs(results: Path, verdicts: set[str]) -> set[str]:
    """The `file::name` keys a --results file gave one of `verdicts`."""
    keys = set()
    for line in results.read_text().splitlines():
        verdict, key, *_ = line.split("\t")
        if verdict in verdicts:
            keys.add(key)
    return keys


def run_all(
    paths: list[Path],
    timeout: float,
    *,
    start: int = 0,
    count: int | None = None,
    only: set[str] | None = None,
    results: Path | None = None,
) -> collections.Counter[str]:
    """The functions of the programs that read (those in `only`, keyed `file::name`, if
    given; then `count` of them from `start`), through run_function; prints each verdict
    other than `ran`, and writes every one to `results`."""
    import multiprocessing

    tally: collections.Counter[str] = collections.Counter()
    jobs = []
    for path in paths:
        try:
            module = parse(path.read_text(), name=str(path))
        except Exception:  # noqa: BLE001  # counted by check()
            continue
        jobs += [(str(path), name) for name, _ in module.functions]
    if only is not None:
        jobs = [(file, name) for file, name in jobs if f"{Path(file).name}::{name}" in only]
    jobs = jobs[start : None if count is None else start + count]
    log = None if results is None else results.open("w")
    context = multiprocessing.get_context("fork")
    for file, name in jobs:
        with context.Pool(1) as pool:
            pending = pool.apply_async(run_function, (file, name))
            try:
                verdict, detail = pending.get(timeout=timeout)
            except Exception as error:  # noqa: BLE001  # killed, timed out, or unpicklable
                verdict, detail = "died", f"{type(error).__name__}{_work(file, name)}"
        tally[verdict] += 1
        key = f"{Path(file).name}::{name}"
        if verdict != "ran":
            print(f"[{verdict}] {key}: {detail[:300]}", flush=True)
        if log is not None:
            flat = " | ".join(detail.splitlines()).replace("\t", " ")
            print(f"{verdict}\t{key}\t{flat}", file=log, flush=True)
    if log is not None:
        log.close()
    return tally


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("programs", type=Path)
    parser.add_argument("--show", type=int, default=1000, help="failures listed")
    parser.add_argument("--run", action="store_true", help="also tirc run --check each function")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds a function (--run)")
    parser.add_argument("--start", type=int, default=0, help="first function run (--run)")
    parser.add_argument("--count", type=int, default=None, help="functions run (--run)")
    parser.add_argument("--results", type=Path, help="every function's verdict, to this file")
    parser.add_argument("--only", type=Path, help="run the functions a --results file lists")
    parser.add_argument("--verdicts", default="crash,died", help="those --only runs again")
    args = parser.parse_args()
    tally: collections.Counter[str] = collections.Counter()
    failures = []
    for path in sorted(args.programs.glob("*.tir")):
        verdict, detail = check(path)
        tally[verdict] += 1
        if verdict != "ok":
            failures.append(f"[{verdict}] {path.name}: {detail[:300]}")
    print(f"{sum(tally.values())} programs:", dict(tally.most_common()))
    for line in failures[: args.show]:
        print(line)
    if args.run:
        only = None
        if args.only is not None:
            only = previous_jobs(args.only, set(args.verdicts.split(",")))
        ran = run_all(
            sorted(args.programs.glob("*.tir")),
            args.timeout,
            start=args.start,
            count=args.count,
            only=only,
            results=args.results,
        )
        print(f"{sum(ran.values())} functions run:", dict(ran.most_common()))
    return 0


if __name__ == "__main__":
    sys.exit(main())

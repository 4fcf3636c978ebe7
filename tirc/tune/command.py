"""`tirc tune FILE ... -o PLAN.json` and `tirc tune --report`: read, tune, show, write.

The progress is a rich line on a terminal and a plain log line per batch otherwise, on
stderr; the plan is written atomically, in the readable form `tirc compile --plan` reads.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, TextIO

from tirc.diagnostics import DiagnosticError, Note
from tirc.driver.output import write_output
from tirc.driver.source import read_source
from tirc.tune.database import Database
from tirc.tune.task import load_task
from tirc.tune.tune import Progress, tune
from tirc.tune.workers import parse_workers

if TYPE_CHECKING:
    from rich.live import Live

    from tirc.ir.target import Target
    from tirc.runtime.cuda_driver import Device

DEFAULT_DB = "tirc-tune.db"


def tune_file(
    path: str,
    *,
    target: Target,
    defines: Mapping[str, str],
    func: str | None,
    trials: int,
    time_budget: float | None,
    workers: str | None,
    db: str | None,
    output: str,
    threads: int,
    timeout: float,
    seed: int,
    stream: TextIO | None = None,
    open_gpu: Callable[[], Device] | None = None,
) -> int:
    """Tunes FILE and writes the best plan to `output`; `open_gpu` opens the GPU CUDA
    candidates are timed on (default: this machine's; tests pass a fake)."""
    stream = stream or sys.stderr
    if target.backend not in ("llvm", "cuda"):
        raise DiagnosticError.at(
            None, f"tirc tune cannot tune for '{target}'", Note("choose --target cpu or cuda")
        )
    if trials < 1:
        raise DiagnosticError.at(None, f"--trials must be at least 1, not {trials}")
    parsed_workers = parse_workers(workers)
    source = read_source(path)
    task = load_task(source.text, source.name, dict(defines), func, target, threads)
    database = Database(db or DEFAULT_DB)
    display = _Display(stream)
    try:
        with tempfile.TemporaryDirectory(prefix="tirc-tune-") as scratch, display:
            outcome = tune(
                task,
                trials=trials,
                time_budget=time_budget,
                workers=parsed_workers,
                database=database,
                scratch=scratch,
                timeout=timeout,
                seed=seed,
                report=display.update,
                open_gpu=open_gpu,
            )
    finally:
        database.close()
    for note in outcome.notes:
        print(f"note: {note}", file=stream)
    if outcome.pruned:
        print(
            f"note: {outcome.pruned} candidates the verifier rejected were not built", file=stream
        )
    if outcome.failures:
        counts = ", ".join(f"{n} {status}" for status, n in sorted(outcome.failures.items()))
        print(
            f"note: failed candidates: {counts}; first: {outcome.first_failure[:300]}", file=stream
        )
    if outcome.plan is None:
        raise DiagnosticError.at(
            None,
            f"no candidate of {task.func} built and matched the reference ({outcome.new} tried)",
            *([Note(outcome.first_failure[:500])] if outcome.first_failure else []),
        )
    if outcome.seconds:
        print(f"best: {_describe(outcome.seconds, outcome.flops, outcome.nbytes)}", file=stream)
    write_output(output, outcome.plan)
    return 0


def _describe(seconds: float, flops: int | None, nbytes: int) -> str:
    text = f"{seconds * 1e3:.4f} ms"
    if flops:
        return f"{text}, {flops / seconds / 1e9:.2f} GFLOP/s"
    return f"{text}, {nbytes / seconds / 1e9:.2f} GB/s"


class _Display:
    """A rich status line on a terminal; a log line per batch otherwise."""

    def __init__(self, stream: TextIO):
        self.stream = stream
        self.live: Live | None = None
        self.terminal = stream.isatty()

    def __enter__(self) -> _Display:
        if self.terminal:
            # deferred: rich is loaded only for a terminal's live display
            from rich.console import Console
            from rich.live import Live

            live = Live("tuning...", console=Console(file=self.stream), transient=False)
            live.__enter__()
            self.live = live
        return self

    def __exit__(self, *exc: object) -> None:
        if self.live is not None:
            self.live.__exit__(None, None, None)

    def update(self, progress: object) -> None:
        assert isinstance(progress, Progress)
        best = (
            f"best {progress.best_seconds * 1e3:.4f} ms {progress.throughput()}"
            if progress.best_seconds
            else "no timed candidate yet"
        )
        line = (
            f"trial {progress.trials}/{progress.total}  {best}  "
            f"failed {progress.failed}  {progress.elapsed:.0f} s"
        )
        if self.live is not None:
            self.live.update(line)
        else:
            print(line, file=self.stream, flush=True)


def report(db: str | None, stream: TextIO | None = None) -> int:
    """The best plan of every workload in the database, fastest first within each."""
    stream = stream or sys.stdout
    path = db or DEFAULT_DB
    if not os.path.exists(path):
        raise DiagnosticError.at(None, f"no tuning database at '{path}' (give one with --db)")
    database = Database(path)
    try:
        rows = database.summary()
    finally:
        database.close()
    if not rows:
        print(f"{path}: no measurements", file=stream)
        return 0
    for workload, target, count, good, seconds, flops, plan in rows:
        header = f"{workload}  ({count} candidates, {good} good)"
        print(header, file=stream)
        if seconds is None or plan is None:
            print(
                "  no timed candidate" + (" (no GPU was measured)" if "cuda" in target else ""),
                file=stream,
            )
            continue
        print(
            f"  best: {_describe(seconds, flops, 0) if flops else f'{seconds * 1e3:.4f} ms'}",
            file=stream,
        )
        steps = json.loads(plan).get("steps", [])
        print(f"  plan: {len(steps)} steps", file=stream)
        for step in steps:
            print(f"    {json.dumps(step)}", file=stream)
    return 0

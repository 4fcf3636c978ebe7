"""Runs a pipeline over a module, calling one hook after each pass.

`Instruments` is that hook for the command line: it verifies (`--verify-each`), prints
(`--print-after`, `--print-after-all`) and times (`--time-passes`) each stage.
"""

from __future__ import annotations

import gc
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TextIO

from tirc.analysis.well_formed import verify_module
from tirc.diagnostics import Diagnostic, DiagnosticError, Note
from tirc.diagnostics.diagnostic import Severity
from tirc.ir.function import IRModule
from tirc.text import print_module
from tirc.transform.dialects import check_dialect
from tirc.transform.pass_base import ModulePass

Hook = Callable[[ModulePass, IRModule, float], None]


def run_pipeline(
    module: IRModule, passes: Iterable[ModulePass], hook: Hook | None = None
) -> IRModule:
    """`module` after every pass in order; `hook(pass, result, seconds)` after each."""
    # Passes build new trees and keep them: the cyclic collector would rescan the live
    # modules again and again to find next to nothing (a quarter to a third of the time on
    # a large unrolled kernel). What cycles a pass leaves are collected once it is back on.
    collecting = gc.isenabled()
    gc.disable()
    try:
        for pass_ in passes:
            start = time.perf_counter()
            module = pass_.run(module)
            seconds = time.perf_counter() - start
            if hook is not None:
                hook(pass_, module, seconds)
    finally:
        if collecting:
            gc.enable()
    return module


@dataclass
class Instruments:
    """The hook behind --verify-each, --print-after(-all) and --time-passes."""

    print_after: frozenset[str] = frozenset()
    print_after_all: bool = False
    time_passes: bool = False
    verify_each: bool = False
    stream: TextIO | None = None  # None: sys.stderr at the time of writing
    timings: list[tuple[str, float]] = field(default_factory=list)

    def __call__(self, pass_: ModulePass, module: IRModule, seconds: float) -> None:
        self.timings.append((pass_.name, seconds))
        if self.verify_each:
            verify_stage(pass_, module)
        if self.print_after_all or pass_.name in self.print_after:
            self.out.write(f"# after {pass_.spelling()}\n{print_module(module)}\n\n")

    @property
    def out(self) -> TextIO:
        return self.stream if self.stream is not None else sys.stderr

    def report(self) -> None:
        """The --time-passes table: seconds per pass in pipeline order, and the total."""
        if not self.time_passes:
            return
        total = sum(seconds for _, seconds in self.timings) or 1e-12
        width = max([len(name) for name, _ in self.timings] + [5])
        lines = [f"{'pass':<{width}}  {'ms':>9}  {'%':>5}"]
        for name, seconds in self.timings:
            lines.append(f"{name:<{width}}  {seconds * 1e3:9.2f}  {100 * seconds / total:5.1f}")
        lines.append(f"{'total':<{width}}  {total * 1e3:9.2f}  100.0")
        self.out.write("\n".join(lines) + "\n")


def verify_stage(pass_: ModulePass, module: IRModule) -> None:
    """Raise 'pass X produced invalid IR' when `module` fails the verifier or the dialect
    the pass promised to leave."""

    found: list[Diagnostic] = [
        d for d in verify_module(module) if d.severity is not Severity.WARNING
    ] + check_dialect(module, pass_.leaves)  # warnings flag valid IR: they fail no stage
    if not found:
        return
    first = found[0]
    notes = [Note(d.message, d.span) for d in found[1:6]]
    message = f"pass {pass_.name} produced invalid IR: {first.message}"
    raise DiagnosticError(Diagnostic.error(message, first.span, *first.notes, *notes))

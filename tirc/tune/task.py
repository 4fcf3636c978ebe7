"""What is tuned: one function of a parsed program for one target, and its workload key.

The key names the workload in the database: a hash of the function's printed text (after
-D), the target and the thread count, so that a second run of the same kernel finds the rows
of the first, and an edited kernel starts afresh.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field

from tirc.analysis.well_formed import verify_module
from tirc.diagnostics import DiagnosticError, Severity
from tirc.ir.expr import IntImm
from tirc.ir.function import IRModule, PrimFunc
from tirc.ir.node import Node
from tirc.ir.stmt import For
from tirc.ir.target import Target
from tirc.schedule.state import children
from tirc.text import parse, print_module


@dataclass
class Task:
    text: str  # the program as given (its own text, -D applied when it is parsed)
    name: str  # where it came from, for messages
    defines: dict[str, str]
    func: str
    target: Target  # parsed once, by the command (a CPU or CUDA target)
    module: IRModule = field(repr=False)  # the program parsed and verified
    threads: int = 0  # CPU threads the candidates run on (0: the OpenMP default)

    @property
    def kind(self) -> str:
        return "cuda" if self.target.backend == "cuda" else "cpu"

    @property
    def key(self) -> str:
        function = IRModule(((self.func, self.module[self.func]),), self.module.attrs, True)
        digest = hashlib.sha256(print_module(function).encode()).hexdigest()[:16]
        threads = f" threads={self.threads}" if self.kind == "cpu" and self.threads else ""
        return f"{self.func}:{digest} {self.target}{threads}"

    def parse(self) -> IRModule:
        return parse(self.text, name=self.name, defines=self.defines)


def load_task(
    text: str, name: str, defines: dict[str, str], func: str | None, target: Target, threads: int
) -> Task:
    """The task for `func` (default: the only function, else main) of the program `text`;
    DiagnosticError for a program that does not parse or verify, or a function it lacks."""
    module = parse(text, name=name, defines=defines)
    errors = [d for d in verify_module(module) if d.severity is Severity.ERROR]
    if errors:
        raise DiagnosticError(errors)
    names = module.names()
    if func is None:
        func = names[0] if len(names) == 1 else "main"
    if func not in module:
        raise DiagnosticError.at(
            None, f"no function '{func}' in {name} (it has {', '.join(names)}); choose with --func"
        )
    return Task(text, name, dict(defines), func, target, module, threads)


def iteration_count(func: PrimFunc) -> int | None:
    """How many times the innermost statements run in all (loop extents multiplied down each
    nest, summed), or None where an extent is not a constant: the interpreter's work."""
    total = 0

    def count(node: Node, scale: int) -> None:
        nonlocal total
        if isinstance(node, For):
            if not isinstance(node.extent, IntImm):
                raise _Symbolic
            scale *= node.extent.value
        inner = children(node)
        if not inner:
            total += scale
        for child in inner:
            count(child, scale)

    try:
        count(func.body, 1)
    except _Symbolic:
        return None
    return total


class _Symbolic(Exception):
    pass


def cpu_count() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1

"""Running one input through tirc and judging the outcome.

The contract (issue 21): every input ends in a parsed module or a DiagnosticError whose
errors all have a span. A parsed module is verified; its diagnostics must be located too. It
is printed, and the text parsed again: for a verified module that must succeed and give a
structurally equal module whose printing is the same text (DESIGN.md §2). Optionally a
verified module is lowered for the CPU, where a DiagnosticError is fine and anything else is a
crash. A hang (past `time_limit` seconds) counts as a failure too.
"""

from __future__ import annotations

import contextlib
import re
import signal
import threading
import traceback
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

from tirc.diagnostics import Diagnostic, DiagnosticError, Severity
from tirc.ir.function import IRModule

# Outcomes that break the contract; "ok" and "error" are the two allowed endings.
FAILURES = frozenset({"crash", "unlocated", "roundtrip", "hang"})
# Lowering a large program takes seconds (a 21 KB winograd kernel 9 s, more on a busy machine);
# a real hang runs forever, so the limit can be generous.
TIME_LIMIT_S = 120.0
TIRC = str(Path(__file__).resolve().parents[2] / "tirc")
FRAME = re.compile(r'File "([^"]+)", line \d+, in (\S+)')


@dataclass(frozen=True)
class Outcome:
    stage: str  # parse, verify, print, reparse, lower: where the input's run ended
    status: str  # ok, error, or one of FAILURES
    message: str = ""
    diagnostic: Diagnostic | None = None
    trace: str = ""  # the traceback of a crash

    @property
    def is_failure(self) -> bool:
        return self.status in FAILURES

    def signature(self) -> str:
        """What identifies a failure across inputs: the exception and where tirc raised it."""
        if self.status != "crash":
            first_line = self.message.split("\n", 1)[0]
            return f"{self.status} at {self.stage}: {first_line[:80]}"
        return f"crash at {self.stage}: {self.message.split(':')[0]} @ {self.raiser}"

    @property
    def raiser(self) -> str:
        """The innermost tirc frame of a crash's traceback, as path:function."""
        where = ""
        for found in FRAME.finditer(self.trace):
            path, function = found.group(1), found.group(2)
            if path.startswith(TIRC):
                where = f"tirc{path.removeprefix(TIRC)}:{function}"
        return where

    def describe(self) -> str:
        if self.status == "crash":
            return f"{self.signature()}\n{self.trace}"
        return self.signature()


class Hang(Exception):
    """The input ran past the time limit."""


@contextlib.contextmanager
def time_limit(seconds: float | None) -> Iterator[None]:
    """Raise Hang after `seconds` (main thread only, where signals are delivered)."""
    if not seconds or threading.current_thread() is not threading.main_thread():
        yield
        return

    def alarm(signum: int, frame: FrameType | None) -> None:
        raise Hang()

    previous = signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def judge_error(error: DiagnosticError, stage: str) -> Outcome:
    errors = [d for d in error.diagnostics if d.severity is Severity.ERROR]
    if not errors:
        return Outcome(stage, "unlocated", "a DiagnosticError without an error in it")
    for diagnostic in errors:
        if diagnostic.span is None:
            return Outcome(stage, "unlocated", diagnostic.message, diagnostic)
    return Outcome(stage, "error", errors[0].message, errors[0])


def crash(stage: str, error: BaseException) -> Outcome:
    message = f"{type(error).__name__}: {error}"
    return Outcome(stage, "crash", message[:2000], trace=traceback.format_exc())


def run_input(
    text: str,
    *,
    lower: bool = False,
    time_limit_s: float | None = TIME_LIMIT_S,
    name: str = "fuzz.tir",
) -> Outcome:
    """The outcome of `text` through parse → verify → print → parse (→ lower)."""
    progress = Progress()
    try:
        with time_limit(time_limit_s):
            return stages(text, lower, name, progress)
    except Hang:
        return Outcome(progress.stage, "hang", f"ran past {time_limit_s} s")


@dataclass
class Progress:
    stage: str = "parse"  # the stage running now


def stages(text: str, lower: bool, name: str, progress: Progress) -> Outcome:
    from tirc.analysis.well_formed import verify_module
    from tirc.ir.structural import structural_equal
    from tirc.text.parser import parse_module
    from tirc.text.printer import print_module

    try:
        module = parse_module(text, name=name)
        progress.stage = "verify"
        problems = verify_module(module)
        progress.stage = "print"
        printed = print_module(module)
    except DiagnosticError as error:
        if progress.stage == "print":
            return Outcome(progress.stage, "roundtrip", f"printing a parsed module failed: {error}")
        return judge_error(error, progress.stage)
    except Hang:
        raise
    except Exception as error:
        return crash(progress.stage, error)
    if any(d.span is None for d in problems):
        first = next(d for d in problems if d.span is None)
        return Outcome("verify", "unlocated", first.message, first)
    progress.stage = "reparse"
    try:
        again = parse_module(printed, name="printed.tir")
    except DiagnosticError as error:
        if problems:  # an invalid program need not print as something that parses
            return Outcome("verify", "error", problems[0].message, problems[0])
        return Outcome(progress.stage, "roundtrip", f"the printed module does not parse: {error}")
    except Hang:
        raise
    except Exception as error:
        return crash(progress.stage, error)
    if problems:
        return Outcome("verify", "error", problems[0].message, problems[0])
    try:
        if not structural_equal(module, same_keys(again, module)):
            return Outcome("reparse", "roundtrip", "parse(print(m)) is not structurally equal to m")
        if print_module(again) != printed:
            return Outcome("reparse", "roundtrip", "print(parse(print(m))) differs from print(m)")
    except Hang:
        raise
    except Exception as error:
        return crash(progress.stage, error)
    if not lower:
        return Outcome("reparse", "ok")
    progress.stage = "lower"
    return lower_outcome(module)


def same_keys(again: IRModule, module: IRModule) -> IRModule:
    """`again` with the key of `module`'s function when both are one bare private function:
    the printer names it main, as TVM does (tests/text/test_print_module.py), while the
    parser keys it by its `def` (which names its kernels), so that name alone does not
    round-trip, by design."""
    if not (module.is_bare and again.is_bare and len(module.functions) == 1):
        return again
    (key, func), (_, other) = module.functions[0], again.functions[0]
    if not func.is_private:
        return again
    return IRModule(((key, other),), again.attrs, again.is_bare)


def lower_outcome(module: object) -> Outcome:
    from tirc.driver.lower import lower_module

    try:
        lower_module(module, target="cpu")  # type: ignore[arg-type]
    except DiagnosticError as error:
        outcome = judge_error(error, "lower")
        if outcome.status == "unlocated":
            # Lowering may refuse a whole program without a place to point at: a located
            # error is better, but an unlocated refusal is still a diagnosis, not a crash.
            return Outcome("lower", "error", outcome.message, outcome.diagnostic)
        return outcome
    except Hang:
        raise
    except Exception as error:
        return crash("lower", error)
    return Outcome("lower", "ok")

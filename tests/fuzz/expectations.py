"""Regression files: an input the fuzzer once crashed tirc with, and the outcome it must have
now, stated in its first lines:

    # fuzz regression: <what went wrong before the fix>
    # expect: parse error at 5:18: integer constant of non-integer type float32

`expect:` names the stage the run ends at (parse, verify, lower), ok or error, and for an
error where (line:column of the first error) and words of its message. Regression inputs run
with lowering, so a program that is valid ends at `lower ok` (or a located `lower error`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from tests.fuzz.harness import Outcome, run_input

EXPECT = re.compile(
    r"^# expect: (?P<stage>parse|verify|lower) (?P<status>ok|error)"
    r"(?: at (?P<line>\d+):(?P<column>\d+))?(?:: (?P<words>.+))?$",
    re.MULTILINE,
)


@dataclass(frozen=True)
class Expectation:
    stage: str
    status: str
    line: int | None = None
    column: int | None = None
    words: str | None = None

    def mismatch(self, outcome: Outcome) -> str | None:
        """What differs between the expectation and `outcome`, or None when it holds."""
        got = f"{outcome.stage} {outcome.status}: {outcome.message[:300]}"
        if (outcome.stage, outcome.status) != (self.stage, self.status):
            return f"expected {self.stage} {self.status}, got {got}\n{outcome.trace}"
        if self.words is not None and self.words not in outcome.message:
            return f"expected the words {self.words!r}, got {got}"
        if self.line is not None:
            span = outcome.diagnostic.span if outcome.diagnostic is not None else None
            where = (span.line, span.column) if span is not None else None
            if where != (self.line, self.column):
                return f"expected the error at {self.line}:{self.column}, got {where}: {got}"
        return None


def expectation(text: str) -> Expectation:
    found = EXPECT.search(text)
    if found is None:
        raise ValueError("a regression file needs a '# expect: STAGE ok|error ...' line")
    line, column = found.group("line"), found.group("column")
    return Expectation(
        found.group("stage"),
        found.group("status"),
        int(line) if line else None,
        int(column) if column else None,
        found.group("words"),
    )


def check_regression(path: Path) -> str | None:
    """None when the file's input has its expected outcome, else what went wrong."""
    text = path.read_text()
    return expectation(text).mismatch(run_input(text, lower=True, name=path.name))

"""Every conformance case's expected program, lowered by its target's default pipeline
(cuda for the GPU cases, cpu otherwise), survives `parse(print(m)) == m` after every pass.

A case whose program tirc cannot parse or a pass cannot lower is skipped here (the
conformance tests report those); this test is about the printer and the parser.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.sweep import case_marks
from tests.transform.helpers import difference_report
from tirc.diagnostics import DiagnosticError
from tirc.ir.function import IRModule
from tirc.text import parse, print_module
from tirc.transform import default_pipeline
from tirc.transform.pass_base import ModulePass
from tirc.transform.runner import run_pipeline

CASES = Path(__file__).resolve().parents[2] / ".." / "shared" / "conformance" / "cases"


def cases() -> list[Path]:
    """The cases with a scheduled program (the others are expected schedule errors)."""
    if not CASES.is_dir():
        return []
    return sorted(case for case in CASES.iterdir() if (case / "expected.tir").exists())


def target_of(case: Path) -> str:
    meta = json.loads((case / "meta.json").read_text())
    return "cuda" if meta.get("targets") == "gpu" else "cpu"


class RoundTrip:
    """The runner hook: print and parse back after each pass, keep the first difference."""

    def __init__(self) -> None:
        self.failure: str | None = None

    def __call__(self, pass_: ModulePass, module: IRModule, seconds: float) -> None:
        if self.failure is not None:
            return
        try:
            back = parse(print_module(module), name=f"<after {pass_.name}>")
        except DiagnosticError as error:
            self.failure = f"after {pass_.spelling()} the printed module does not parse:\n{error}"
            return
        report = difference_report(module, back, "printed")
        if report is not None:
            self.failure = f"after {pass_.spelling()} the module does not round-trip:\n{report}"


def case_params() -> list[object]:
    # the heaviest cases (the Winograd programs print to about 8 MB after unroll-loop; parsing
    # that back takes minutes on 2 cores) round-trip in `make test-sweep` only
    return [pytest.param(case, id=case.name, marks=case_marks(case.name)) for case in cases()]


@pytest.mark.slow
@pytest.mark.parametrize("case", case_params())
def test_round_trip_after_each_pass(case: Path) -> None:
    try:
        module = parse((case / "expected.tir").read_text(), name=str(case / "expected.tir"))
    except DiagnosticError as error:
        pytest.skip(f"tirc cannot parse the case: {error.diagnostics[0].message}")
    hook = RoundTrip()
    try:
        run_pipeline(module, default_pipeline(target_of(case)).passes, hook)
    except DiagnosticError as error:
        if hook.failure is None:
            pytest.skip(f"tirc cannot lower the case: {error.diagnostics[0].message}")
    assert hook.failure is None, hook.failure

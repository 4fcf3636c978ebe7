"""Every program of the conformance cases (TVM's inputs and TVM's scheduled outputs) is valid:
the verifier finds no error in any of them."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from tirc.analysis.well_formed import verify_module
from tirc.diagnostics import DiagnosticError, Severity

CASES = Path(__file__).resolve().parents[3].parent / "shared" / "conformance" / "cases"
PROGRAMS = sorted(CASES.glob("*/input.tir")) + sorted(CASES.glob("*/expected.tir"))
HAS_PARSER = importlib.util.find_spec("tirc.text.parser") is not None


@pytest.mark.skipif(not PROGRAMS, reason="no conformance cases next to the repository")
@pytest.mark.skipif(not HAS_PARSER, reason="the parser is not there yet")
@pytest.mark.parametrize("path", PROGRAMS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_conformance_programs_verify_without_errors(path: Path) -> None:
    from tirc.text import parse

    try:
        module = parse(path.read_text(), name=str(path))
    except DiagnosticError as error:
        pytest.skip(f"does not parse yet: {error.diagnostics[0]}")
    errors = [d for d in verify_module(module) if d.severity is Severity.ERROR]
    assert errors == [], "\n".join(str(d) for d in errors)

"""Valid programs as text, low-level ones especially (the conformance cases are all s-tir):
each `valid/*.tir` verifies without a single diagnostic."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from tirc.analysis.well_formed import verify_module

PROGRAMS = sorted((Path(__file__).parent / "valid").glob("*.tir"))
HAS_PARSER = importlib.util.find_spec("tirc.text.parser") is not None


@pytest.mark.skipif(not HAS_PARSER, reason="the parser is not there yet")
@pytest.mark.parametrize("path", PROGRAMS, ids=lambda p: p.stem)
def test_valid_program_verifies_clean(path: Path) -> None:
    from tirc.text import parse

    assert [str(d) for d in verify_module(parse(path.read_text(), name=path.name))] == []

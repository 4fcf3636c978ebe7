"""Invalid programs as text: each `invalid/*.tir` marks the diagnostics it must draw with
`# error: message` or `# warning: message` at the end of the offending line."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

from tirc.analysis.well_formed import verify_module

PROGRAMS = sorted((Path(__file__).parent / "invalid").glob("*.tir"))
MARK = re.compile(r"#\s*(error|warning):\s*(.*?)\s*$")
HAS_PARSER = importlib.util.find_spec("tirc.text.parser") is not None


def expected_marks(text: str) -> list[tuple[int, str, str]]:
    marks = []
    for number, line in enumerate(text.splitlines(), start=1):
        found = MARK.search(line)
        if found is not None:
            marks.append((number, found.group(1), found.group(2)))
    return marks


@pytest.mark.skipif(not HAS_PARSER, reason="the parser is not there yet")
@pytest.mark.parametrize("path", PROGRAMS, ids=lambda p: p.stem)
def test_invalid_program_draws_its_marked_diagnostics(path: Path) -> None:
    from tirc.text import parse

    text = path.read_text()
    found = [
        (d.span.line if d.span is not None else 0, d.severity.value, d.message)
        for d in verify_module(parse(text, name=path.name))
    ]
    assert found == expected_marks(text)

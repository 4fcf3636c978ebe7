"""tests/conftest.py's LONGEST_FIRST names files that exist (a renamed file would quietly run
in its usual place again, where a long test can end the run on one worker)."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import LONGEST_FIRST

ROOT = Path(__file__).resolve().parents[1]


def test_the_longest_files_exist_once() -> None:
    assert [path for path in LONGEST_FIRST if not (ROOT / path).is_file()] == []
    assert len(set(LONGEST_FIRST)) == len(LONGEST_FIRST)

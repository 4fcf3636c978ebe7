"""The seed programs the mutator starts from: the conformance corpus and the samples."""

from __future__ import annotations

import functools
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CONFORMANCE = ROOT.parent / "shared" / "conformance" / "cases"
SAMPLES = ROOT / "samples"
REGRESSIONS = Path(__file__).resolve().parent / "regressions"


@functools.cache
def seed_paths() -> tuple[Path, ...]:
    """Every seed file, in a fixed order (so a seed number means the same campaign)."""
    paths: list[Path] = []
    if CONFORMANCE.is_dir():
        for case in sorted(CONFORMANCE.iterdir()):
            paths += [
                case / name for name in ("input.tir", "expected.tir") if (case / name).is_file()
            ]
    paths += sorted(SAMPLES.rglob("*.tir"))
    # The regressions are seeds too: mutating near a past crash finds its relatives.
    paths += sorted(REGRESSIONS.glob("*.tir"))
    return tuple(paths)


@functools.cache
def seeds() -> tuple[tuple[str, str], ...]:
    """(name, text) of every seed file."""
    return tuple(
        (str(path.relative_to(path.parents[1])), path.read_text()) for path in seed_paths()
    )

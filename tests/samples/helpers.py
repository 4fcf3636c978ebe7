"""Where the gallery lives and what it holds: the kernel list is the one samples/Makefile
builds, so the tests and the build cannot disagree about it."""

from __future__ import annotations

import re
import sys
from pathlib import Path

SAMPLES = Path(__file__).resolve().parents[2] / "samples"


def gallery_kernels() -> list[str]:
    """The names in samples/Makefile's `KERNELS := ...` (continuation lines included)."""
    text = (SAMPLES / "Makefile").read_text()
    match = re.search(r"^KERNELS\s*:=((?:.*\\\n)*.*)$", text, re.MULTILINE)
    assert match, "samples/Makefile has no KERNELS := line"
    return match.group(1).replace("\\\n", " ").split()


def tirc_command() -> str:
    """The tirc of the Python running the tests, as make's TIRC."""
    script = Path(sys.executable).with_name("tirc")
    return str(script) if script.exists() else f"{sys.executable} -m tirc"


def schedulable_samples() -> list[Path]:
    """samples/*.tir and samples/gpu/*.tir that a plan schedules (s-tir); the Hopper samples
    written as lowered tir (wgmma and TMA calls by hand) have no blocks to schedule or tune."""
    paths = sorted(SAMPLES.glob("*.tir")) + sorted((SAMPLES / "gpu").glob("*.tir"))
    return [path for path in paths if "s_tir=True" in path.read_text()]

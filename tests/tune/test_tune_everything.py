"""`tirc tune` with a tiny budget over every sample (CPU and CUDA) and the conformance cases
with inputs (../shared/conformance/cases/*/io.npz, which TVM ran on the CPU) finishes without
an internal error: a plan, or a diagnosed error (exit 1) where nothing built and matched."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.codegen_cuda.gpu_plans import defines_for_tests
from tests.samples.helpers import schedulable_samples

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = schedulable_samples()
CASES = sorted((ROOT.parent / "shared" / "conformance" / "cases").glob("*/io.npz"))
# CI's 20 minutes hold every eighteenth conformance case, two CPU samples (a GEMM, a two-stage
# reduction) and a GPU sample for CUDA (a SIMT GEMM; tests/tune/test_rules.py replays the Hopper
# GEMM's tuned plans); `make test-sweep` tunes the rest: every case, every sample, both targets
CI_SAMPLES = {("matmul.tir", "cpu"), ("softmax.tir", "cpu"), ("gpu/matmul.tir", "cuda")}


def _in_ci(path: Path, target: str) -> bool:
    return (path.relative_to(ROOT / "samples").as_posix(), target) in CI_SAMPLES


TARGETS = [
    pytest.param(
        path,
        target,
        id=f"{path.relative_to(ROOT).as_posix()}-{target}",
        marks=[] if _in_ci(path, target) else [pytest.mark.sweep],
    )
    for path in SAMPLES
    for target in ("cpu", "cuda")
]
CASE_PARAMS = [
    pytest.param(case, id=case.parent.name, marks=[] if index % 18 == 0 else [pytest.mark.sweep])
    for index, case in enumerate(CASES)
]

REQUIRED_ARCH = re.compile(r"^#.*--target 'cuda -arch=(sm_\w+)'", re.MULTILINE)

pytestmark = pytest.mark.slow


def tune(path: Path, target: str, directory: Path) -> int:
    """Exit status of `tirc tune` on `path`, at the shape its comment gives tests (the GPU
    samples' defaults are benchmark sizes: a 4096^3 GEMM would take the reference minutes)."""
    text = path.read_text()
    defines = [f"-D{name}={value}" for name, value in defines_for_tests(text)]
    arch = REQUIRED_ARCH.search(text)
    if target == "cuda" and arch is not None:  # a Hopper-only sample names its target
        target = f"cuda -arch={arch.group(1)}"
    # In a process of its own, as a user runs it: the tuner forks its candidates' processes,
    # and a fork of this test worker (its threads, an OpenMP pool that earlier tests started)
    # can hang on a lock the child inherits held.
    done = subprocess.run(
        [
            sys.executable, "-m", "tirc", "tune", str(path), *defines, "--target", target,
            "--trials", "3",
            "--workers", "local:2", "--timeout", "120", "--threads", "1",
            "--db", str(directory / "t.db"), "-o", str(directory / "plan.json"),
        ],
        capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    assert "Traceback" not in done.stderr and "internal error" not in done.stderr, done.stderr
    return done.returncode


@pytest.mark.parametrize(("path", "target"), TARGETS)
def test_every_sample_tunes(path: Path, target: str, tmp_path: Path) -> None:
    assert tune(path, target, tmp_path) == 0
    assert (tmp_path / "plan.json").exists()


@pytest.mark.parametrize("case", CASE_PARAMS)
def test_every_cpu_conformance_case_tunes(case: Path, tmp_path: Path) -> None:
    status = tune(case.parent / "input.tir", "cpu", tmp_path)
    assert status in (0, 1)
    assert (tmp_path / "plan.json").exists() == (status == 0)

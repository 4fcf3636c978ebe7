"""The conformance cases with TVM's inputs and outputs (io.npz): running the unscheduled
program (input.tir) and TVM's scheduled one (expected.tir) in the interpreter gives TVM's
outputs: exactly for integers, within rtol 1e-4 (atol 1e-5) for floats.

Skipped where ../shared/conformance is missing. Runs are sized by a static estimate of their
statement executions: long ones are marked `slow`, those beyond the interpreter are skipped.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

import numpy as np
import pytest

from tests.sweep import case_marks
from tirc import interp, text
from tirc.diagnostics import DiagnosticError
from tirc.interp.work import estimate_work
from tirc.ir.function import IRModule, PrimFunc

CASES = Path(__file__).resolve().parents[2] / ".." / "shared" / "conformance" / "cases"
SLOW_WORK = 1_000_000  # statement executions: a few seconds (2M took 11 s on a busy machine)
TOO_MUCH_WORK = 500_000_000  # hours


@cache
def load(path: Path) -> PrimFunc:
    module = text.parse(path.read_text(), name=str(path))
    return pick_function(module)


def pick_function(module: IRModule) -> PrimFunc:
    names = module.names()
    return module[names[0] if len(names) == 1 else "main"]


def work_of(path: Path) -> int:
    try:
        return estimate_work(load(path))
    except DiagnosticError:
        return 0  # the test itself reports the parse error


def parameters() -> list[object]:
    if not CASES.is_dir():
        return []
    found = []
    for case in sorted(CASES.iterdir()):
        if not (case / "io.npz").exists():
            continue
        for program in ("input.tir", "expected.tir"):
            marks = [pytest.mark.slow] if work_of(case / program) > SLOW_WORK else []
            marks += case_marks(case.name)
            found.append(pytest.param(case, program, id=f"{case.name}/{program}", marks=marks))
    return found


@pytest.mark.skipif(not CASES.is_dir(), reason="../shared/conformance is not there")
@pytest.mark.parametrize(("case", "program"), parameters())
def test_conformance_case(case: Path, program: str) -> None:
    meta = json.loads((case / "meta.json").read_text())
    fits = meta.get("io", {}).get("matches_unscheduled")
    if program == "input.tir" and fits is not True:
        pytest.skip(f"TVM's inputs are for the scheduled program's signature ({fits})")
    func = load(case / program)
    work = estimate_work(func)
    if work > TOO_MUCH_WORK:
        pytest.skip(f"about {work:,} statement executions: beyond the interpreter")
    arrays = np.load(case / "io.npz")
    args = {key.split(".in.", 1)[1]: arrays[key].copy() for key in arrays.files if ".in." in key}
    interp.run(func, args)  # type: ignore[arg-type]
    for key in arrays.files:
        if ".out." not in key:
            continue
        name = key.split(".out.", 1)[1]
        want, have = arrays[key], args[name]
        if np.issubdtype(want.dtype, np.floating):
            np.testing.assert_allclose(
                np.asarray(have, np.float64),
                want.astype(np.float64),
                rtol=1e-4,
                atol=1e-5,
                equal_nan=True,
            )
        else:
            np.testing.assert_array_equal(have, want)

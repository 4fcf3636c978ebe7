"""Golden before/after pairs for compute_at and reverse_compute_at, compared structurally,
and the interpreter's word that each scheduled program computes what the original did.

`golden/<primitive>/<name>.before.tir` names its plan (TVM's trace form) in a `# plan:`
header; `<name>.after.tir` is Apache TVM 0.27's result of it. A `# error:` header instead
gives a phrase the diagnostic must contain: the plan's last step must be refused.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from tests.schedule.golden_runner import (
    accepted,
    apply_golden,
    cases,
    check_golden,
    golden,
    header,
)
from tirc.interp import random_inputs, run
from tirc.text import parse

FOLDERS = ("compute_at", "reverse_compute_at")
CASES = cases(FOLDERS)


@golden("before", CASES)
def test_golden(before: Path) -> None:
    check_golden(before)


DIFFERENTIAL = accepted(CASES + cases(("sample_compute_location",), "reduction*.before.tir"))


@golden("before", DIFFERENTIAL)
def test_interpreter_agrees(before: Path) -> None:
    """The moved block computes exactly the region needed, before it is needed."""
    original = parse(before.read_text(), name=str(before))
    scheduled = apply_golden(before)
    func, new_func = original["main"], scheduled["main"]
    sizes = json.loads(header(before.read_text(), "sizes") or "{}")  # shape variables
    inputs = random_inputs(func, seed=7, sizes=sizes)
    want = {name: np.copy(value) for name, value in inputs.items()}
    got = {name: np.copy(value) for name, value in inputs.items()}
    run(func, want)
    run(new_func, got)
    for name in want:
        np.testing.assert_allclose(got[name], want[name], rtol=1e-5, atol=1e-6, err_msg=name)

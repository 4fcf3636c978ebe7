"""Golden before/after pairs for compute_at and reverse_compute_at, compared structurally,
and the interpreter's word that each scheduled program computes what the original did.

`golden/<primitive>/<name>.before.tir` names its plan (TVM's trace form) in a `# plan:`
header; `<name>.after.tir` is Apache TVM 0.27's result of it. A `# error:` header instead
gives a phrase the diagnostic must contain: the plan's last step must be refused.
"""

from __future__ import annotations

import difflib
import json
from pathlib import Path

import numpy as np
import pytest

from tirc.diagnostics import DiagnosticError
from tirc.interp import random_inputs, run
from tirc.ir.function import IRModule
from tirc.ir.structural import find_difference
from tirc.schedule.apply import apply_plan
from tirc.schedule.plan import read_plan
from tirc.text import parse, print_module

GOLDEN = Path(__file__).parent / "golden"
FOLDERS = ("compute_at", "reverse_compute_at")
CASES = [path for folder in FOLDERS for path in sorted((GOLDEN / folder).glob("*.before.tir"))]


def _header(text: str, key: str) -> str | None:
    for line in text.splitlines():
        if line.startswith(f"# {key}:"):
            return line.split(":", 1)[1].strip()
    return None


def _apply(before: Path) -> IRModule:
    text = before.read_text()
    plan_text = _header(text, "plan")
    assert plan_text is not None, f"{before} has no '# plan:' header"
    decisions = json.loads(_header(text, "decisions") or "[]")
    plan = read_plan(json.dumps([json.loads(plan_text), decisions]), name=str(before))
    return apply_plan(parse(text, name=str(before)), plan)[0]


@pytest.mark.parametrize("before", CASES, ids=lambda p: f"{p.parent.name}/{p.name[:-11]}")
def test_golden(before: Path) -> None:
    error = _header(before.read_text(), "error")
    if error is not None:
        with pytest.raises(DiagnosticError) as caught:
            _apply(before)
        assert error in str(caught.value), str(caught.value)
        return
    after = before.with_name(before.name.replace(".before.", ".after."))
    got = _apply(before)
    want = parse(after.read_text(), name=str(after))
    difference = find_difference(got, want)
    if difference is not None:
        diff = "\n".join(
            difflib.unified_diff(
                print_module(want).splitlines(),
                print_module(got).splitlines(),
                "expected (TVM)",
                "tirc",
                lineterm="",
            )
        )
        pytest.fail(f"{difference.message} at {difference.path}\n{diff}")
    assert find_difference(parse(print_module(got)), got) is None, "the result does not round-trip"


DIFFERENTIAL = [
    path
    for path in CASES + sorted((GOLDEN / "sample_compute_location").glob("reduction*.before.tir"))
    if _header(path.read_text(), "error") is None
]


@pytest.mark.parametrize("before", DIFFERENTIAL, ids=lambda p: f"{p.parent.name}/{p.name[:-11]}")
def test_interpreter_agrees(before: Path) -> None:
    """The moved block computes exactly the region needed, before it is needed."""
    original = parse(before.read_text(), name=str(before))
    scheduled = _apply(before)
    func, new_func = original["main"], scheduled["main"]
    sizes = json.loads(_header(before.read_text(), "sizes") or "{}")  # shape variables
    inputs = random_inputs(func, seed=7, sizes=sizes)
    want = {name: np.copy(value) for name, value in inputs.items()}
    got = {name: np.copy(value) for name, value in inputs.items()}
    run(func, want)
    run(new_func, got)
    for name in want:
        np.testing.assert_allclose(got[name], want[name], rtol=1e-5, atol=1e-6, err_msg=name)

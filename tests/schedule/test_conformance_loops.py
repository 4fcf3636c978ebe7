"""The conformance cases (../shared/conformance) whose plans use only the loop-level
primitives: the schedule result must equal TVM's expected.tir, and must_reject plans must
stop with a diagnostic. Cases needing a primitive not yet registered are expected failures.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.schedule.golden_runner import assert_equal
from tirc.diagnostics import DiagnosticError
from tirc.schedule import primitives
from tirc.schedule.apply import apply_plan
from tirc.schedule.plan import read_plan
from tirc.text import parse

CASES_DIR = Path(__file__).resolve().parents[3] / "shared" / "conformance" / "cases"
LOOP_LEVEL = {
    "GetSBlock", "GetLoops", "GetChildBlocks", "GetProducers", "GetConsumers",
    "Split", "Fuse", "Reorder", "Merge", "AddUnitLoop", "LoopPartition", "ReorderBlockIterVar",
    "Parallel", "Vectorize", "Unroll", "Bind", "Annotate", "Unannotate",
    "SamplePerfectTile", "SampleCategorical", "SampleComputeLocation", "EnterPostproc",
}  # fmt: skip


def _cases() -> list[Path]:
    if not CASES_DIR.is_dir():
        return []
    found = []
    for case in sorted(CASES_DIR.iterdir()):
        meta = json.loads((case / "meta.json").read_text())
        if set(meta["primitives"]) <= LOOP_LEVEL:
            found.append(case)
    return found


def _missing_primitives(case: Path) -> list[str]:
    meta = json.loads((case / "meta.json").read_text())
    return sorted(name for name in meta["primitives"] if primitives.by_tvm_name(name) is None)


@pytest.mark.skipif(not CASES_DIR.is_dir(), reason="the conformance cases are not checked out")
@pytest.mark.parametrize("case", _cases(), ids=lambda case: case.name)
def test_conformance(case: Path) -> None:
    missing = _missing_primitives(case)
    if missing:
        pytest.xfail(f"primitives not implemented yet: {', '.join(missing)}")
    module = parse((case / "input.tir").read_text(), name=str(case / "input.tir"))
    plan = read_plan((case / "plan.json").read_text(), name=str(case / "plan.json"))
    if (case / "error.json").exists():
        with pytest.raises(DiagnosticError):
            apply_plan(module, plan)
        return
    got, _ = apply_plan(module, plan)
    want = parse((case / "expected.tir").read_text(), name=str(case / "expected.tir"))
    assert_equal(got, want, "expected.tir")

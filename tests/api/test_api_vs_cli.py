"""The Python API applies a plan as `tirc schedule` does: every conformance case whose plan
has a TransformLayout step (index maps, pad values and their dtypes, assume_injective), through
tirc.schedule with the plan as a path and as a JSON value, and through the command line, gives
the same printed program, or the same error. Plans of more than 50 steps (the GPU matmul
rules, the tensor-core trace replays: seconds each) run with `make test-sweep`."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import tirc
from tirc.cli.main import main
from tirc.driver.program import module_text

ROOT = Path(__file__).resolve().parents[2]
CASES_DIR = ROOT.parent / "shared" / "conformance" / "cases"
EXAMPLES = ROOT / "docs" / "examples"
LONG_PLAN = 50  # steps
LONG = [pytest.mark.slow, pytest.mark.sweep]


def _transform_layout_plans() -> list[tuple[Path, bool]]:
    """Each case whose plan transforms a layout, and whether its plan is long."""
    found = []
    for plan in sorted(CASES_DIR.glob("*/plan.json")):
        steps = json.loads(plan.read_text())[0]
        if any(step[0] == "TransformLayout" for step in steps):
            found.append((plan.parent, len(steps) > LONG_PLAN))
    return found


PLANS = _transform_layout_plans()


def _by_api(case: Path, plan: Path | list[object], intrinsics: Path | None) -> str:
    """The scheduled program as tirc writes it, or the error as the command line prints it."""
    try:
        return module_text(tirc.schedule(case / "input.tir", plan, intrinsics=intrinsics))
    except tirc.CompileError as error:
        return str(error) + "\n"


def _by_cli(
    case: Path, intrinsics: Path | None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> str:
    """The same, through `tirc schedule` (its exit status 1 and no file on an error)."""
    out = tmp_path / "scheduled.tir"
    argv = ["schedule", str(case / "input.tir"), "--apply", str(case / "plan.json")]
    argv += ["--intrinsics", str(intrinsics)] if intrinsics is not None else []
    status = main([*argv, "-o", str(out)])
    err = capsys.readouterr().err
    if status == 0:
        return out.read_text()
    assert status == 1 and not out.exists(), err
    return err


@pytest.mark.parametrize(
    "case",
    [pytest.param(case, id=case.name, marks=LONG if long else []) for case, long in PLANS],
)
def test_api_and_command_line_apply_a_plan_alike(
    case: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    intrinsics = case / "intrinsics.json" if (case / "intrinsics.json").exists() else None
    by_cli = _by_cli(case, intrinsics, tmp_path, capsys)
    assert _by_api(case, case / "plan.json", intrinsics) == by_cli
    by_value = _by_api(case, json.loads((case / "plan.json").read_text()), intrinsics)
    if by_cli.startswith("error: "):  # the same error, located in the plan written out
        assert by_value.splitlines()[0] == by_cli.splitlines()[0]
        assert "--> <plan>:" in by_value
    else:
        assert by_value == by_cli


def test_the_cases_are_there() -> None:
    if not CASES_DIR.is_dir():
        pytest.skip(f"no conformance cases at {CASES_DIR}")
    assert sum(not long for _, long in PLANS) >= 10  # the quick ones CI runs


def test_build_takes_the_plans_intrinsics(tmp_path: Path) -> None:
    """tirc.build applies a tensorize plan with user intrinsics, as `tirc compile --plan P
    --intrinsics J` does (docs/examples' dot4, its impl four products in one expression
    instead of an extern call); without them the plan's intrinsic is unknown."""
    desc = json.loads((EXAMPLES / "dot4.intrinsics.json").read_text())["dot4"]["desc"]
    products = " + ".join(f"A[{k}] * B[{k}]" for k in range(4))
    impl = desc.split("        for k")[0].replace("def desc", "def impl")
    intrinsics = tmp_path / "dot4.json"
    body = f"        C[0] = C[0] + {products}\n"
    intrinsics.write_text(json.dumps({"dot4": {"desc": desc, "impl": impl + body}}))
    program, plan = EXAMPLES / "accumulate.tir", EXAMPLES / "accumulate.plan.json"
    built = tirc.build(program, plan=plan, intrinsics=intrinsics)
    a = np.arange(16, dtype=np.float32) / 8
    b = np.arange(16, 0, -1, dtype=np.float32) / 4
    c = np.zeros(1, dtype=np.float32)
    built.main(a, b, c)
    assert c[0] == float(a @ b)  # exact: multiples of 1/32, small sums
    with pytest.raises(tirc.CompileError, match="dot4"):
        tirc.build(program, plan=plan)

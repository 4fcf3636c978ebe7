"""The conformance cases with TVM's inputs and outputs (io.npz): TVM's scheduled program
(expected.tir) lowered by tirc's cpu pipeline and run in the interpreter gives TVM's outputs,
exactly for integers and within rtol 1e-4 for floats. Cases whose run is long are `slow`.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from tests.sweep import case_marks
from tests.transform.helpers import difference_report
from tirc import interp, text
from tirc.driver.lower import lower_module
from tirc.interp.work import estimate_work

CASES = Path(__file__).resolve().parents[2] / ".." / "shared" / "conformance" / "cases"
SLOW_WORK = 2_000_000
TOO_MUCH_WORK = 200_000_000


def cases() -> list[object]:
    if not CASES.is_dir():
        return []
    found = []
    for case in sorted(CASES.iterdir()):
        if not (case / "io.npz").exists():
            continue
        meta = json.loads((case / "meta.json").read_text())
        if meta.get("targets", "any") not in ("any", "cpu"):
            continue
        try:
            module = text.parse((case / "expected.tir").read_text())
            work = estimate_work(module["main"] if "main" in module else module.functions[0][1])
        except Exception:
            work = 0
        marks = [pytest.mark.slow] if work > SLOW_WORK else []
        marks += case_marks(case.name)
        found.append(pytest.param(case, id=case.name, marks=marks))
    return found


@pytest.mark.skipif(not CASES.is_dir(), reason="../shared/conformance is not there")
@pytest.mark.parametrize("case", cases())
def test_lowered_case_gives_tvm_outputs(case: Path) -> None:
    module = text.parse((case / "expected.tir").read_text(), name=str(case / "expected.tir"))
    lowered = lower_module(module, target="cpu", verify_each=True)
    report = difference_report(lowered, text.parse(text.print_module(lowered)), "printed")
    assert report is None, f"the lowered module does not round-trip:\n{report}"
    func = lowered["main"] if "main" in lowered else lowered.functions[0][1]
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
                err_msg=name,
            )
        else:
            np.testing.assert_array_equal(have, want, err_msg=name)

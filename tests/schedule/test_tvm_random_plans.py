"""A fixed, seeded slice of the random-plan differential against Apache TVM 0.27
(tests/schedule/tvm_random_plans.py): 60 plans drawn over the corpus inputs, the samples and
generated programs, applied by tirc and by TVM; each must agree (equal results, or both
refuse) unless its disagreement is one of the deliberate differences listed in docs/plans.md.

Runs where TVM's Python is at /work/tvm-venv/bin/python or `$TIRC_TVM_PYTHON`; skipped
otherwise. About 15 s on an idle machine (both sides together).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.schedule import tvm_random_plans as differential

SEED, COUNT = 11, 60


def test_seeded_plans_agree_with_tvm(tmp_path: Path) -> None:
    python = differential.TVM_PYTHON
    if not os.path.exists(python):
        pytest.skip(f"Apache TVM 0.27's Python is not at {python} (set TIRC_TVM_PYTHON)")
    records = differential.run(differential.sources(), COUNT, SEED, tmp_path, python)
    assert len(records) == COUNT
    unexpected = [
        f"p{r['id']} {r['class']} ({r['origin']}): {r['trace'][-1]} {str(r['detail'])[:200]}"
        for r in records
        if r["class"] not in differential.AGREE and not differential.is_deliberate(r)
    ]
    assert not unexpected, "\n".join(unexpected)
    # the slice exercises both outcomes
    classes = {r["class"] for r in records}
    assert {"equal", "both refuse"} <= classes

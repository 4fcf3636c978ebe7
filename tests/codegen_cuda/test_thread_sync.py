"""thread-sync in the cuda pipeline is what makes shared-memory samples race-free: without it
the interpreter's thread model reports the race a GPU would run into."""

from __future__ import annotations

import numpy as np
import pytest

from tests.codegen_cuda.helpers import GPU_SAMPLES
from tirc.diagnostics import DiagnosticError
from tirc.driver.schedule import apply_plan_file
from tirc.interp import random_inputs, run
from tirc.text import parse
from tirc.transform import default_pipeline
from tirc.transform.runner import run_pipeline


def lowered_matmul(with_sync: bool):  # type: ignore[no-untyped-def]
    path = GPU_SAMPLES / "matmul.tir"
    scheduled, _ = apply_plan_file(parse(path.read_text()), str(GPU_SAMPLES / "matmul.plan.json"))
    passes = [p for p in default_pipeline("cuda").passes if with_sync or p.name != "thread-sync"]
    return run_pipeline(scheduled, passes)


def test_without_barriers_the_matmul_races() -> None:
    func = lowered_matmul(with_sync=False)["main"]
    with pytest.raises(DiagnosticError, match="data race on shared memory"):
        run(func, random_inputs(func, 0))


def test_with_barriers_it_does_not() -> None:
    func = lowered_matmul(with_sync=True)["main"]
    args = random_inputs(func, 0)
    run(func, args)
    assert np.isfinite(args["C"]).all()

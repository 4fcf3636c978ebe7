"""The benchmark kernels of samples/bench with their plans, compiled for the CPU, equal the
interpreter and the unscheduled kernel. The kernels are too large to interpret, so each runs
shrunk: its sizes rewritten in the text to sizes its plan's factors still divide (the same
schedule, smaller loops)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from tests.codegen.helpers import SAMPLES, run_both
from tirc.driver.schedule import apply_plan_file
from tirc.interp import random_inputs, run
from tirc.ir.functor import Visitor
from tirc.ir.stmt import For, ForKind
from tirc.text import parse

BENCH = SAMPLES / "bench"

# every size in a kernel's text -> the size of its shrunk copy
SHRINK = {
    "matmul1024": {"1024": "128"},
    "conv2d56": {"64": "16", "56": "8", "57": "9", "58": "10"},
    "add16m": {"16777216": "4096"},
    "softmax4096": {"4096": "8", "1024": "64"},
}


def shrunk(name: str) -> str:
    sizes = SHRINK[name]
    pattern = re.compile(r"\b(" + "|".join(sorted(sizes, key=len, reverse=True)) + r")\b")
    return pattern.sub(lambda match: sizes[match.group(1)], (BENCH / f"{name}.tir").read_text())


def test_every_bench_kernel_is_covered() -> None:
    assert sorted(p.name.removesuffix(".tir") for p in BENCH.glob("*.tir")) == sorted(SHRINK)


class _LoopKinds(Visitor):
    def __init__(self) -> None:
        self.kinds: list[ForKind] = []

    def visit_For(self, node: For) -> None:  # noqa: N802 - the Visitor's naming
        self.kinds.append(node.kind)
        self.generic_visit(node)


@pytest.mark.parametrize("name", sorted(SHRINK))
def test_bench_kernel_with_its_plan_matches_the_interpreter(name: str, tmp_path: Path) -> None:
    kernel = tmp_path / f"{name}.tir"
    kernel.write_text(shrunk(name))
    plan = BENCH / f"{name}.plan.json"
    json.loads(plan.read_text())  # the plan is plain JSON, as TVM's side of the bench reads it
    original = parse(kernel.read_text(), name=kernel.name)
    scheduled, _ = apply_plan_file(original, str(plan))
    loops = _LoopKinds()
    loops.visit(scheduled["main"].body)
    assert ForKind.PARALLEL in loops.kinds and ForKind.VECTORIZED in loops.kinds
    inputs = random_inputs(original["main"], 0)
    compiled = run_both(scheduled, {k: np.array(v, copy=True) for k, v in inputs.items()})
    # and the schedule kept the meaning: the unscheduled kernel, interpreted, agrees
    want = {k: np.array(v, copy=True) for k, v in inputs.items()}
    run(original["main"], want)
    for key, value in want.items():
        np.testing.assert_allclose(compiled[key], value, rtol=1e-5, atol=1e-5, err_msg=key)

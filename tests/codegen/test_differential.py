"""Compiled CPU code equals the interpreter: every sample (unscheduled, and matmul with its
plan), and conformance cases run on their recorded inputs against TVM's outputs."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from tests.codegen.helpers import ROOT, SAMPLES, run_both
from tests.samples.helpers import schedulable_samples
from tirc.driver.inputs import complete_arguments
from tirc.driver.run_cpu import jit_function
from tirc.driver.schedule import apply_plan_file
from tirc.interp import random_inputs
from tirc.interp.work import estimate_work
from tirc.text import parse

INTERPRETER_BUDGET = 10_000_000  # statements: a few seconds
CONFORMANCE = ROOT.parent / "shared" / "conformance" / "cases"


# the s-tir samples: the Hopper ones written as lowered tir launch GPU threads (wgmma, TMA),
# which the cpu target cannot run; tests/codegen_cuda/test_wgmma.py and test_tma.py run them
@pytest.mark.parametrize(
    "sample", sorted(str(p.relative_to(SAMPLES)) for p in schedulable_samples())
)
def test_sample_unscheduled(sample: str) -> None:
    module = parse((SAMPLES / sample).read_text(), name=sample)
    if estimate_work(module["main"]) > INTERPRETER_BUDGET:
        pytest.skip("too large for the interpreter; the plan's test checks it against numpy")
    run_both(module)


# plans under samples/gpu and the gallery's K.cuda.plan.json bind GPU threads: tests/codegen_cuda
# and tests/samples check them; K.cpu.plan.json (or K.plan.json) schedules K.tir for the CPU
PLANS = sorted(
    str(p.relative_to(SAMPLES))
    for p in SAMPLES.rglob("*.plan.json")
    if p.relative_to(SAMPLES).parts[0] != "gpu" and not p.name.endswith(".cuda.plan.json")
)


@pytest.mark.parametrize("plan", PLANS)
def test_sample_with_its_plan(plan: str) -> None:
    kernel = SAMPLES / plan.replace(".cpu.plan.json", ".plan.json").replace(".plan.json", ".tir")
    module = parse(kernel.read_text(), name=kernel.name)
    scheduled, _ = apply_plan_file(module, str(SAMPLES / plan))
    if estimate_work(module["main"]) > INTERPRETER_BUDGET:  # numpy is the judge
        if "matmul" not in kernel.name:
            pytest.skip("too large for the interpreter; test_bench_samples checks it shrunk")
        args = {k: np.array(v) for k, v in random_inputs(scheduled["main"], 0).items()}
        assert jit_function(scheduled, "main", "cpu")(args) == 0
        want = args["A"].astype(np.float64) @ args["B"].astype(np.float64)
        assert np.allclose(args["C"], want, rtol=1e-4, atol=1e-4)
        return
    run_both(scheduled)


def _conformance_cases() -> list[str]:
    if not CONFORMANCE.is_dir():
        return []
    cases = []
    for case in sorted(CONFORMANCE.iterdir()):
        io = case / "io.npz"
        if io.exists() and io.stat().st_size < 64 * 1024:
            cases.append(case.name)
    return cases[::4]  # a spread of them; shared/tools/conformance.py runs all


@pytest.mark.parametrize("case", _conformance_cases())
def test_conformance_case_matches_tvm(case: str) -> None:
    folder = CONFORMANCE / case
    module = parse((folder / "expected.tir").read_text(), name=f"{case}/expected.tir")
    arrays = np.load(folder / "io.npz")
    inputs = {k.split(".in.", 1)[1]: arrays[k] for k in arrays.files if k.startswith("main.in.")}
    expected = {
        k.split(".out.", 1)[1]: arrays[k] for k in arrays.files if k.startswith("main.out.")
    }
    args = complete_arguments(module["main"], inputs, 0, str(folder))
    assert jit_function(module, "main", "cpu")(args) == 0
    for name, want in expected.items():
        have = np.asarray(args[name])
        if np.issubdtype(want.dtype, np.floating):
            assert np.allclose(have, want, rtol=1e-4, atol=1e-5, equal_nan=True), name
        else:
            assert np.array_equal(have, want), name
    assert json.loads((folder / "meta.json").read_text())["kind"] == "schedule"


def test_conformance_cases_exist_here() -> None:
    if not CONFORMANCE.is_dir():
        pytest.skip("no ../shared/conformance in this checkout")
    assert _conformance_cases()


def test_run_file_check_and_bench(capsys: pytest.CaptureFixture[str]) -> None:
    from tirc.driver.run import run_file

    run_file(
        str(SAMPLES / "matmul.tir"),
        target="cpu",
        func=None,
        inputs=None,
        save=None,
        seed=0,
        defines={},
        plan=str(SAMPLES / "matmul.cpu.plan.json"),
        check=True,
        bench=True,
    )
    out = capsys.readouterr().out
    assert "check: the compiled code agrees with the interpreter" in out
    assert "GFLOP/s" in out


def test_save_from_cpu_run_matches_interp(tmp_path: Path) -> None:
    from tirc.driver.run import run_file

    saved = {}
    for target in ("cpu", "interp"):
        out = tmp_path / f"{target}.npz"
        run_file(
            str(SAMPLES / "softmax.tir"),
            target=target,
            func=None,
            inputs=None,
            save=str(out),
            seed=3,
            defines={},
        )
        saved[target] = np.load(out)
    assert np.allclose(saved["cpu"]["B"], saved["interp"]["B"], rtol=1e-5, atol=1e-6)

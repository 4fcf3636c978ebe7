"""The gallery computes what it says: each kernel with its cpu plan, compiled and run, agrees
with the interpreter (`tirc run --target cpu --check`); with its cuda plan, lowered for cuda
and run in the interpreter's thread model (which catches a missing barrier), it computes
what the unscheduled kernel does."""

from __future__ import annotations

import numpy as np
import pytest

from tests.samples.helpers import SAMPLES, gallery_kernels
from tirc.cli.main import main
from tirc.codegen.cuda import emit_cuda
from tirc.driver.lower import lower_module
from tirc.driver.schedule import apply_plan_file
from tirc.interp import random_inputs, run
from tirc.interp.work import estimate_work
from tirc.text import parse

KERNELS = gallery_kernels()
THREAD_MODEL_BUDGET = 2_500_000  # estimate_work of the unscheduled kernel: a few seconds


def test_every_kernel_has_its_program_plans_and_an_entry_in_the_readme() -> None:
    readme = (SAMPLES / "README.md").read_text()
    for name in KERNELS:
        for suffix in (".tir", ".cpu.plan.json", ".cuda.plan.json"):
            assert (SAMPLES / f"{name}{suffix}").is_file(), f"samples/{name}{suffix}"
        assert f"`{name}`" in readme, f"samples/README.md does not list {name}"
    planned = {path.name.split(".")[0] for path in SAMPLES.glob("*.*.plan.json")}
    assert planned == set(KERNELS), "a plan without a kernel in samples/Makefile"


@pytest.mark.parametrize("name", KERNELS)
def test_cpu_plan_compiled_agrees_with_the_interpreter(
    name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    status = main(
        [
            "run",
            str(SAMPLES / f"{name}.tir"),
            "--plan",
            str(SAMPLES / f"{name}.cpu.plan.json"),
            "--target",
            "cpu",
            "--check",
        ]
    )
    out, err = capsys.readouterr()
    assert status == 0, err
    assert "check: the compiled code agrees with the interpreter" in out


def _cases_by_work() -> list[object]:
    """Every kernel; those that take the interpreter more than a few seconds marked slow."""
    cases: list[object] = []
    for name in KERNELS:
        module = parse((SAMPLES / f"{name}.tir").read_text(), name=name)
        slow = estimate_work(module["main"]) > THREAD_MODEL_BUDGET
        cases.append(pytest.param(name, marks=[pytest.mark.slow] if slow else []))
    return cases


@pytest.mark.parametrize("name", _cases_by_work())
def test_cuda_plan_in_the_thread_model_matches_the_original(name: str) -> None:
    path = SAMPLES / f"{name}.tir"
    original = parse(path.read_text(), name=str(path))
    scheduled, _ = apply_plan_file(original, str(SAMPLES / f"{name}.cuda.plan.json"))
    lowered = lower_module(scheduled, target="cuda")
    source = emit_cuda(lowered)
    assert "blockIdx" in source and "threadIdx" in source, "the cuda plan binds no threads"
    inputs = random_inputs(original["main"], 0)
    want = {key: np.array(value, copy=True) for key, value in inputs.items()}
    have = {key: np.array(value, copy=True) for key, value in inputs.items()}
    run(original["main"], want)
    run(lowered["main"], have, module=lowered)  # the host launches the kernel functions
    for key in want:
        np.testing.assert_allclose(have[key], want[key], rtol=1e-5, atol=1e-5, err_msg=key)


@pytest.mark.parametrize("name", _cases_by_work())
def test_cpu_plan_computes_what_the_unscheduled_kernel_does(name: str) -> None:
    """The schedule differential: the kernel scheduled by its cpu plan, run in the interpreter
    (s-tir as the plan leaves it, and lowered for cpu), equals the unscheduled kernel."""
    path = SAMPLES / f"{name}.tir"
    original = parse(path.read_text(), name=str(path))
    scheduled, _ = apply_plan_file(original, str(SAMPLES / f"{name}.cpu.plan.json"))
    lowered = lower_module(scheduled, target="cpu")
    inputs = random_inputs(original["main"], 1)
    want = {key: np.array(value, copy=True) for key, value in inputs.items()}
    run(original["main"], want)
    for module in (scheduled, lowered):
        have = {key: np.array(value, copy=True) for key, value in inputs.items()}
        run(module["main"], have)
        for key in want:
            np.testing.assert_allclose(have[key], want[key], rtol=1e-5, atol=1e-5, err_msg=key)

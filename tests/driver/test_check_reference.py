"""`tirc run --target cuda --check`: which program the interpreter runs as the reference.

The GPU is simulated by a device that computes exactly what the lowered program means (the
interpreter on the CUDA pipeline's output), or one that computes wrong: the check is then
what is under test, without a GPU.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tirc.cli.main import main
from tirc.driver import run_cuda
from tirc.driver.lower import lower_module
from tirc.interp import run as interpret
from tirc.ir.function import IRModule, PrimFunc
from tirc.ir.target import Target

SAMPLES = Path(__file__).resolve().parents[2] / "samples" / "gpu"


def _simulated_gpu(wrong: bool):
    def run_on_cuda(
        module: IRModule,
        name: str,
        function: PrimFunc,
        target: Target | str,
        args: dict[str, np.ndarray | int],
        **_: object,
    ) -> tuple[float, None, str]:
        lowered = lower_module(module, target=str(target))
        interpret(lowered[name], args, module=lowered)
        if wrong:
            args["C"][0, 0] += 1000.0
        return 0.0, None, "a simulated GPU"

    return run_on_cuda


def _check(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    program: str,
    plan: str,
    *,
    defines: tuple[str, ...] = ("-D", "N=32"),
    wrong: bool = False,
) -> tuple[int, str]:
    """(exit status, what was printed) of `tirc run --check` on the simulated GPU."""
    monkeypatch.setattr(run_cuda, "run_on_cuda", _simulated_gpu(wrong))
    args = ["run", str(SAMPLES / f"{program}.tir"), "--plan", str(SAMPLES / f"{plan}.plan.json")]
    status = main([*args, *defines, "--target", "cuda", "--check"])
    printed = capsys.readouterr()
    return status, printed.out + printed.err


def test_a_tensorized_plan_is_checked_against_the_program_before_it(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # The scheduled s-tir runs ldmatrix and mma.sync in thread loops outside any kernel,
    # which the interpreter refuses; the check used to fail there with that refusal.
    status, printed = _check(monkeypatch, capsys, "matmul_fp16_mma", "matmul_fp16_mma")
    assert status == 0, printed
    assert "check: the GPU agrees with the interpreter" in printed
    assert "checked against the program before the plan" in printed
    assert "T.ptx_ldmatrix is a warp instruction" in printed


def test_the_fallback_still_finds_a_wrong_result(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    status, printed = _check(monkeypatch, capsys, "matmul_fp16_mma", "matmul_fp16_mma", wrong=True)
    assert status != 0
    assert "C: 1 of 1024 values differ; first at [0, 0]" in printed
    assert "Traceback" not in printed


def test_a_plan_the_interpreter_runs_is_its_own_reference(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    status, printed = _check(monkeypatch, capsys, "matmul", "matmul", defines=())
    assert status == 0, printed
    assert "check: the GPU agrees with the interpreter" in printed
    assert "before the plan" not in printed

"""`tirc run --check` on a program that reads memory it never wrote: the language leaves fresh
memory's contents unspecified, the interpreter zero-fills it, compiled code finds whatever was
there. When the check fails, the interpreter runs again with garbage in fresh memory; if its
results change, the error says so and names the allocations read before written."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tirc.cli.main import main
from tirc.driver import run as run_module
from tirc.driver.run import CompiledForCpu, Ran
from tirc.interp import run
from tirc.interp.memory.storage import garbage_in_fresh_memory
from tirc.ir.function import PrimFunc
from tirc.text import parse

REAL_RUN_ON_CPU = run_module._run_on_cpu

# C is written; D never is: B reads both
READS_UNWRITTEN = """
@T.prim_func(s_tir=True)
def main(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32")):
    C = T.sblock_alloc_buffer((8,))
    D = T.sblock_alloc_buffer((8,))
    for i in range(8):
        with T.sblock("c"):
            vi = T.axis.spatial(8, i)
            C[vi] = A[vi] * T.float32(2.0)
    for i in range(8):
        with T.sblock("b"):
            vi = T.axis.spatial(8, i)
            B[vi] = C[vi] + D[vi]
"""


def _values() -> dict[str, np.ndarray | int]:
    return {"A": np.arange(8, dtype=np.float32), "B": np.zeros(8, np.float32)}


def _all_nan(b: np.ndarray) -> None:
    b[:] = np.nan  # what a CPU finding NaN bytes in D computes


def _one_off(b: np.ndarray) -> None:
    b[0] += 1.0


def _cpu_then(spoil: Callable[[np.ndarray], None]) -> Callable[..., Ran]:
    """The CPU backend's run, with B then spoiled."""

    def run_on_cpu(
        name: str,
        function: PrimFunc,
        compiled: CompiledForCpu,
        args: dict[str, np.ndarray | int],
        *rest: Any,
    ) -> Ran:
        ran = REAL_RUN_ON_CPU(name, function, compiled, args, *rest)
        b = args["B"]
        assert isinstance(b, np.ndarray)
        spoil(b)
        return ran

    return run_on_cpu


def test_garbage_in_fresh_memory_reaches_the_allocations_named() -> None:
    func = parse(READS_UNWRITTEN)["main"]
    zeros = _values()
    run(func, zeros)
    np.testing.assert_array_equal(zeros["B"], np.arange(8) * 2.0)
    for names in (None, ["D"]):
        garbage = _values()
        with garbage_in_fresh_memory(names):
            run(func, garbage)
        assert np.isnan(garbage["B"]).all()  # every float type's garbage is NaN
    written_only = _values()
    with garbage_in_fresh_memory(["C"]):  # C is written before it is read
        run(func, written_only)
    np.testing.assert_array_equal(written_only["B"], zeros["B"])
    after = _values()
    run(func, after)  # the default again, once the context is left
    np.testing.assert_array_equal(after["B"], zeros["B"])


def test_a_failed_check_names_what_was_read_before_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The CPU's own D is whatever memory held; the check's error points at D's allocation."""
    path = tmp_path / "unwritten.tir"
    path.write_text(READS_UNWRITTEN)
    monkeypatch.setattr(run_module, "_run_on_cpu", _cpu_then(_all_nan))
    status = main(["run", str(path), "--target", "cpu", "--check"])
    err = capsys.readouterr().err
    assert status == 1
    assert "reads memory it never wrote (D)" in err
    assert "D = T.sblock_alloc_buffer((8,))" in err  # located at D's allocation
    assert "the compiled code differs from the interpreter" in err
    assert "Traceback" not in err


def test_a_failed_check_of_a_program_that_writes_all_it_reads_says_only_that(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "written.tir"
    path.write_text(READS_UNWRITTEN.replace("C[vi] + D[vi]", "C[vi]"))
    monkeypatch.setattr(run_module, "_run_on_cpu", _cpu_then(_one_off))
    status = main(["run", str(path), "--target", "cpu", "--check"])
    err = capsys.readouterr().err
    assert status == 1
    assert "the compiled code differs from the interpreter" in err
    assert "never wrote" not in err

"""`tirc run` on a function that returns a value: the summary says the value, and `--check`
compares the compiled code's with the interpreter's."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tirc.cli.main import main
from tirc.driver.run import compare_returned

PROGRAM = """
@T.prim_func
def main(A: T.Buffer((8,), "int32"), limit: T.int32) -> T.int32:
    for i in range(8):
        if A[i] >= limit:
            return i
    return -1
"""


@pytest.mark.parametrize("target", [["--target", "interp"], ["--target", "cpu", "--check"]])
def test_run_says_the_returned_value(
    target: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source, inputs = tmp_path / "search.tir", tmp_path / "in.npz"
    source.write_text(PROGRAM)
    np.savez(inputs, A=np.array([0, 1, 2, 1, 5, 7, 0, 3], np.int32))
    assert main(["run", str(source), "--inputs", str(inputs), "--size", "limit=3", *target]) == 0
    out = capsys.readouterr().out
    assert "  returned 4 (int32)" in out, out
    if "--check" in target:
        assert "check: the compiled code agrees with the interpreter" in out


def test_check_compares_the_returned_values() -> None:
    assert compare_returned(2, 2, "cpu", 1e-4, 1e-5) == []
    assert compare_returned(1.0, 1.00001, "cpu", 1e-4, 1e-5) == []
    assert compare_returned(float("nan"), float("nan"), "cpu", 1e-4, 1e-5) == []
    assert compare_returned(True, False, "cpu", 1e-4, 1e-5) == [
        "the returned value differs: cpu true, interpreter false"
    ]
    assert compare_returned(3, 2, "cpu", 1e-4, 1e-5) == [
        "the returned value differs: cpu 3, interpreter 2"
    ]

"""`tirc compile` and `tirc run` for the cpu target on a program bound to GPU threads: exit 1,
the loop's `file:line:col`, a pointer to --target cuda, no traceback and no output file."""

from __future__ import annotations

from pathlib import Path

import pytest

from tirc.cli.main import main

KERNEL = """\
@T.prim_func(s_tir=True)
def main(A: T.Buffer((64,), "float32"), B: T.Buffer((64,), "float32")):
    for bx in T.thread_binding(8, thread="blockIdx.x"):
        for tx in T.thread_binding(8, thread="threadIdx.x"):
            with T.sblock("B"):
                vi = T.axis.spatial(64, bx * 8 + tx)
                B[vi] = A[vi] + T.float32(1)
"""


def _run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = main(args)
    captured = capsys.readouterr()
    return code, captured.err + captured.out


@pytest.mark.parametrize("emit", ["ll", "obj"])
def test_compile_for_cpu_points_at_the_bound_loop(
    emit: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source, out = tmp_path / "kernel.tir", tmp_path / f"kernel.{emit}"
    source.write_text(KERNEL)
    code, output = _run(["compile", str(source), "--emit", emit, "-o", str(out)], capsys)
    assert code == 1, output
    assert "the cpu target cannot run a loop bound to blockIdx.x" in output
    assert f"{source}:3:5" in output
    assert "--target cuda" in output
    assert "Traceback" not in output and "is used where it is not defined" not in output
    assert not out.exists()


def test_run_for_cpu_points_at_the_bound_loop(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "kernel.tir"
    source.write_text(KERNEL)
    code, output = _run(["run", str(source), "--target", "cpu"], capsys)
    assert code == 1, output
    assert f"{source}:3:5" in output and "blockIdx.x" in output
    assert "Traceback" not in output

"""A buffer whose strides or element offset are variables (`T.match_buffer(..., strides=(s0,
s1), elem_offset=off)`, as TVM's tests write them) runs compiled on the arrays `tirc run` gives:
they are dense and start at their first element, so the strides are the dense ones and the offset
0. The CPU run said 'cannot tell the value of shape variable off' (70 of TVM's test functions)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tirc.cli.main import main

PROGRAM = """
@T.prim_func
def main(a: T.handle, b: T.handle):
    s0 = T.int32()
    s1 = T.int32()
    off = T.int32()
    A = T.match_buffer(a, (4, 8), "float32", strides=(s0, s1), elem_offset=off)
    B = T.match_buffer(b, (4, 8), "float32")
    for i, j in T.grid(4, 8):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] * T.float32(2) + T.float32(vj)
"""


def test_variable_strides_and_offset_run_compiled(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "layout.tir"
    source.write_text(PROGRAM)
    a = np.arange(32, dtype=np.float32).reshape(4, 8)
    np.savez(tmp_path / "in.npz", a=a)
    out = tmp_path / "out.npz"
    argv = ["run", str(source), "--target", "cpu", "--check", "--inputs", str(tmp_path / "in.npz")]
    assert main([*argv, "--save", str(out)]) == 0, capsys.readouterr().err
    assert "agrees with the interpreter" in capsys.readouterr().out
    np.testing.assert_array_equal(np.load(out)["b"], a * 2 + np.arange(8, dtype=np.float32))

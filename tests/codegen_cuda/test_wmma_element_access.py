"""A wmma fragment accessed element by element (a tensorize step never applied) is the
program's error, at the access, on both PTX paths: not a complaint about fragment shapes."""

from __future__ import annotations

from pathlib import Path

import pytest

from tirc.cli.main import main

KERNEL = Path(__file__).parent / "kernels" / "wmma_element_access.tir"

READ_AFTER_FILL = """@T.prim_func
def main(B: T.Buffer((256,), "float32")):
    for t in T.thread_binding(32, thread="threadIdx.x"):
        C = T.decl_buffer((256,), "float32", scope="wmma.accumulator")
        T.evaluate(T.tvm_fill_fragment(C.data, 16, 16, 16, 0, T.float32(0)))
        for i in range(8):
            B[t * 8 + i] = C[t * 8 + i]
"""


@pytest.mark.parametrize("emit", [["--emit", "cu"], ["--emit", "ptx", "--ptx-via", "llvm"]])
def test_written_element_by_element(
    emit: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "k.out"
    assert main(["compile", str(KERNEL), "--target", "cuda", *emit, "-o", str(out)]) == 1
    err = capsys.readouterr().err
    assert "error: wmma fragment C is written element by element, which tirc cannot lower" in err
    assert f"--> {KERNEL}:10:17" in err  # C[vi, vj] = A[vi, vj] * T.float32(2)
    assert "note: tensorize the block that writes it with a wmma intrinsic" in err
    assert "says the shape" not in err and "Traceback" not in err
    assert not out.exists()


def test_read_element_by_element_after_a_wmma_fill(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The fill gives the fragment its shape; the element read is still refused, where
    before it reached the CUDA C as an index into a fragment array."""
    source = tmp_path / "read.tir"
    source.write_text(READ_AFTER_FILL)
    out = tmp_path / "k.cu"
    assert main(["compile", str(source), "--target", "cuda", "--emit", "cu", "-o", str(out)]) == 1
    err = capsys.readouterr().err
    assert "error: wmma fragment C is read element by element" in err
    assert f"--> {source}:7:28" in err
    assert "note: tensorize the block that reads it" in err
    assert "Traceback" not in err

"""`tirc check` and `tirc compile` refuse a loop nest whose constant bounds index past a
buffer's end, showing the loop and the buffer; `compile` writes nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from tirc.cli.main import main

SAMPLE = Path(__file__).resolve().parents[2] / "samples" / "batch_matmul.tir"


@pytest.fixture
def overrun(tmp_path: Path) -> Path:
    text = SAMPLE.read_text()
    assert "T.grid(4, 64, 64, 64)" in text
    path = tmp_path / "bmm.tir"
    path.write_text(text.replace("T.grid(4, 64, 64, 64)", "T.grid(4, 64, 65, 64)"))
    return path


@pytest.mark.parametrize(
    "options", [["check"], ["compile"], ["compile", "--target", "cuda"]], ids=" ".join
)
def test_an_overrunning_loop_is_refused(
    options: list[str], overrun: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    output = tmp_path / "bmm.out"
    argv = [*options, str(overrun)] + (["-o", str(output)] if options[0] == "compile" else [])
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert (
        "error: 'C' is indexed past its end: index 64 on axis 2, of extent 64, when j = 64" in err
    )
    assert "note: loop 'j' reaches 64" in err and "T.grid(4, 64, 65, 64)" in err
    assert "note: 'C' has shape (4, 64, 64)" in err
    assert not output.exists()

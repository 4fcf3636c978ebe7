"""Bad input through the command line: exit 1, `file:line:col`, the message, no traceback.

Every marked case of the parser's error suite runs again here as a user meets it, through
`tirc check` and `tirc print -o`: the diagnostic names the place in the file and nothing is
written.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.text.parse_helpers import marked_error
from tests.text.test_parse_errors import CASES
from tirc.cli.main import main


def _run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = main(args)
    captured = capsys.readouterr()
    return code, captured.err + captured.out


@pytest.mark.parametrize("text", list(CASES.values()), ids=list(CASES))
def test_check_reports_the_place_and_exits_1(
    text: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    line, column, message = marked_error(text)
    source = tmp_path / "kernel.tir"
    source.write_text(text)
    code, output = _run(["check", str(source)], capsys)
    assert code == 1, output
    assert f"{source}:{line}:{column}" in output, output
    assert message.split(";")[0] in output, output
    assert "Traceback" not in output


@pytest.mark.parametrize(
    "name", ["unterminated string", "bad dedent", "remap arity", "recursive macro"]
)
def test_print_writes_nothing_on_error(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source, out = tmp_path / "kernel.tir", tmp_path / "out.tir"
    source.write_text(CASES[name])
    code, output = _run(["print", str(source), "-o", str(out)], capsys)
    assert code == 1 and not out.exists(), output


def test_bad_define_is_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / "kernel.tir"
    source.write_text(
        "N = 4\n" + CASES["empty file"].replace("# error@1: no function in file\n", "")
    )
    code, output = _run(["print", str(source), "-D", "N"], capsys)
    assert code == 1
    assert "invalid -D definition 'N': expected NAME=VALUE" in output


def test_define_naming_no_parameter_suggests_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "kernel.tir"
    source.write_text(
        'N = 4\n@T.prim_func\ndef main(A: T.Buffer((N,), "float32")):\n    A[0] = T.float32(1.0)\n'
    )
    code, output = _run(["print", str(source), "-D", "M=8"], capsys)
    assert code == 1 and "M" in output and "N" in output, output


def test_binary_garbage_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / "garbage.tir"
    source.write_bytes(bytes(range(256)) * 4)
    code, output = _run(["check", str(source)], capsys)
    assert code == 1 and str(source) in output and "Traceback" not in output, output


def test_megabyte_single_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / "long.tir"
    source.write_text("x = " + "1 + " * 250_000 + "\n")
    code, output = _run(["check", str(source)], capsys)
    assert code == 1 and f"{source}:1:" in output and "Traceback" not in output, output[:500]


def test_running_an_empty_module_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "empty.tir"
    source.write_text("@I.ir_module\nclass Module:\n    pass\n")
    code, output = _run(["run", str(source), "--target", "interp"], capsys)
    assert code == 1 and "the module has no function to run" in output, output

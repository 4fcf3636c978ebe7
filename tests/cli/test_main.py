"""The command line end to end over stand-in layers: outputs, diagnostics and exit statuses."""

from __future__ import annotations

import io
import os
from pathlib import Path

import pytest

from tirc import __version__
from tirc.cli import main as cli_main
from tirc.cli.main import main

pytestmark = pytest.mark.usefixtures("fake_layers")

Capture = pytest.CaptureFixture[str]


def write(directory: Path, name: str, text: str) -> str:
    path = directory / name
    path.write_text(text)
    return str(path)


def feed_stdin(monkeypatch: pytest.MonkeyPatch, data: bytes) -> None:
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(data)))


def test_version(capsys: Capture) -> None:
    assert main(["--version"]) == 0
    assert capsys.readouterr().out == f"tirc {__version__}\n"


@pytest.mark.parametrize(
    "argv", [[], ["frobnicate"], ["print"], ["print", "--bogus", "x"], ["diff", "a"], ["check"]]
)
def test_bad_usage_exits_2(argv: list[str], capsys: Capture) -> None:
    assert main(argv) == 2
    assert "Usage:" in capsys.readouterr().err


def test_print_writes_stdout_by_default(tmp_path: Path, capsys: Capture) -> None:
    path = write(tmp_path, "k.tir", "x = 1\n")
    assert main(["print", path]) == 0
    assert capsys.readouterr() == ("x = 1\n", "")


def test_print_reads_stdin_and_passes_definitions(
    monkeypatch: pytest.MonkeyPatch, capsys: Capture
) -> None:
    feed_stdin(monkeypatch, b"x = N\n")
    assert main(["print", "-", "-D", "N=8", "-D", "dtype=float16", "-o", "-"]) == 0
    assert capsys.readouterr().out == "# N = 8\n# dtype = float16\nx = N\n"


def test_print_to_a_file(tmp_path: Path, capsys: Capture) -> None:
    path = write(tmp_path, "k.tir", "x = 1\n")
    out = tmp_path / "out.tir"
    assert main(["print", path, "-o", str(out)]) == 0
    assert out.read_text() == "x = 1\n"
    assert capsys.readouterr() == ("", "")


def test_syntax_error_is_rendered_and_nothing_is_written(tmp_path: Path, capsys: Capture) -> None:
    path = write(tmp_path, "k.tir", "x = 1\ny = oops\n")
    out = tmp_path / "out.tir"
    out.write_text("previous build")
    assert main(["print", path, "-o", str(out)]) == 1
    assert out.read_text() == "previous build"
    assert capsys.readouterr().err == (
        f"error: unexpected token 'oops'\n --> {path}:2:5\n  |\n2 | y = oops\n  |     ^~~~\n"
    )


def test_bad_definition_exits_1_and_writes_nothing(tmp_path: Path, capsys: Capture) -> None:
    path = write(tmp_path, "k.tir", "x = 1\n")
    out = tmp_path / "out.tir"
    assert main(["print", path, "-D", "N", "-o", str(out)]) == 1
    assert not out.exists()
    assert capsys.readouterr().err == "error: invalid -D definition 'N': expected NAME=VALUE\n"


@pytest.mark.parametrize(
    ("name", "reason"), [("missing.tir", "no such file or directory"), (".", "is a directory")]
)
def test_unreadable_input_exits_1(tmp_path: Path, capsys: Capture, name: str, reason: str) -> None:
    path = str(tmp_path / name)
    assert main(["print", path]) == 1
    assert capsys.readouterr().err == f"error: cannot read '{path}': {reason}\n"


def test_non_utf8_input_exits_1_with_a_location(tmp_path: Path, capsys: Capture) -> None:
    path = tmp_path / "k.tir"
    path.write_bytes(b"x = 1\ny = \xe9\n")
    assert main(["print", str(path)]) == 1
    err = capsys.readouterr().err
    assert "not valid UTF-8" in err and f"{path}:2:5" in err


def test_unwritable_output_exits_1(tmp_path: Path, capsys: Capture) -> None:
    path = write(tmp_path, "k.tir", "x = 1\n")
    assert main(["print", path, "-o", str(tmp_path / "no" / "out.tir")]) == 1
    assert "cannot write" in capsys.readouterr().err


def test_internal_error_exits_3_without_a_trace(tmp_path: Path, capsys: Capture) -> None:
    path = write(tmp_path, "k.tir", "crash\n")
    assert main(["print", path]) == 3
    assert capsys.readouterr().err == (
        "internal error: ZeroDivisionError: division by zero\n"
        "this is a bug in tirc; rerun with --traceback (or TIRC_TRACEBACK=1) to see the trace\n"
    )


def test_traceback_flag_and_variable_show_the_trace(
    tmp_path: Path, capsys: Capture, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write(tmp_path, "k.tir", "crash\n")
    assert main(["--traceback", "print", path]) == 3
    err = capsys.readouterr().err
    assert "Traceback (most recent call last)" in err
    assert err.endswith("internal error: ZeroDivisionError: division by zero\n")

    monkeypatch.setenv("TIRC_TRACEBACK", "1")
    assert main(["print", path]) == 3
    assert "Traceback (most recent call last)" in capsys.readouterr().err


def test_interrupt_exits_130_quietly(tmp_path: Path, capsys: Capture) -> None:
    path = write(tmp_path, "k.tir", "interrupt\n")
    assert main(["print", path]) == 130
    assert "Traceback" not in capsys.readouterr().err


def test_interrupt_outside_a_command_exits_130(monkeypatch: pytest.MonkeyPatch) -> None:
    def interrupted(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(cli_main.cli, "main", interrupted)
    assert main(["--version"]) == 130


def test_main_never_raises(monkeypatch: pytest.MonkeyPatch, capsys: Capture) -> None:
    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("wiring")

    monkeypatch.setattr(cli_main.cli, "main", broken)
    assert main(["--version"]) == 3
    assert "internal error: RuntimeError: wiring" in capsys.readouterr().err


def test_closed_stdout_exits_141(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Capture
) -> None:
    class ClosedPipe(io.BytesIO):
        def write(self, data: object) -> int:
            raise BrokenPipeError(32, "Broken pipe")

    class Stdout(io.TextIOWrapper):
        def fileno(self) -> int:
            raise io.UnsupportedOperation("no descriptor")

    path = write(tmp_path, "k.tir", "x = 1\n")
    monkeypatch.setattr("sys.stdout", Stdout(ClosedPipe()))
    assert main(["print", path]) == 141


def test_check_prints_nothing_for_good_files(tmp_path: Path, capsys: Capture) -> None:
    paths = [write(tmp_path, "a.tir", "x = 1\n"), write(tmp_path, "b.tir", "y = 2\n")]
    assert main(["check", *paths]) == 0
    assert capsys.readouterr() == ("", "")
    assert main(["check", "-v", *paths]) == 0
    assert capsys.readouterr().out == f"{paths[0]}: ok\n{paths[1]}: ok\n"


def test_check_reports_every_error_in_every_file(tmp_path: Path, capsys: Capture) -> None:
    syntax = write(tmp_path, "a.tir", "oops\n")
    good = write(tmp_path, "b.tir", "fine\n")
    invalid = write(tmp_path, "c.tir", "x = bad\n")
    assert main(["check", "-v", syntax, good, invalid]) == 1
    captured = capsys.readouterr()
    assert captured.out == f"{good}: ok\n"
    assert "error: unexpected token 'oops'" in captured.err
    assert f" --> {syntax}:1:1" in captured.err
    assert "error: 'bad' is not defined" in captured.err
    assert f" --> {invalid}:1:5" in captured.err


def test_check_warnings_alone_do_not_fail(tmp_path: Path, capsys: Capture) -> None:
    path = write(tmp_path, "a.tir", "warn\n")
    assert main(["check", path]) == 0
    assert "warning: unused 'warn'" in capsys.readouterr().err


def test_check_stdin_twice_is_an_error(capsys: Capture) -> None:
    assert main(["check", "-", "-"]) == 1
    assert "only once" in capsys.readouterr().err


def test_diff_equal_modules(tmp_path: Path, capsys: Capture) -> None:
    a = write(tmp_path, "a.tir", "x = 1\ny = 2\n")
    b = write(tmp_path, "b.tir", "x = 1\ny = 2\n")
    assert main(["diff", a, b]) == 0
    assert capsys.readouterr() == ("", "")


def test_diff_shows_the_first_difference_in_both_files(tmp_path: Path, capsys: Capture) -> None:
    a = write(tmp_path, "a.tir", "x = 1\ny = 2\nz = 3\n")
    b = write(tmp_path, "b.tir", "x = 1\ny = 20\nz = 4\n")
    assert main(["diff", a, b]) == 1
    out = capsys.readouterr().out
    assert out.startswith(f"{a} and {b} differ at main.body.seq[1]: statements differ\n")
    assert "error" not in out
    assert f"note: {a} has `y = 2`\n --> {a}:2:1\n" in out
    assert f"note: {b} has `y = 20`\n --> {b}:2:1\n" in out


def test_diff_reports_parse_errors_of_both_files(tmp_path: Path, capsys: Capture) -> None:
    a = write(tmp_path, "a.tir", "oops\n")
    b = write(tmp_path, "b.tir", "x = oops\n")
    assert main(["diff", a, b]) == 1
    err = capsys.readouterr().err
    assert f" --> {a}:1:1" in err and f" --> {b}:1:5" in err


def test_outputs_are_deterministic(tmp_path: Path) -> None:
    path = write(tmp_path, "k.tir", "x = 1\n")
    outs = [tmp_path / "one.tir", tmp_path / "two.tir"]
    for out in outs:
        assert main(["print", path, "-o", str(out)]) == 0
    assert outs[0].read_bytes() == outs[1].read_bytes()
    assert sorted(os.listdir(tmp_path)) == ["k.tir", "one.tir", "two.tir"]

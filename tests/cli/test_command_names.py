"""A misspelt command name is a usage error (exit 2) that names the command meant, as click
suggests it: `No such command 'compiel'. Did you mean 'compile'?`."""

from __future__ import annotations

import pytest

from tirc.cli.main import cli, main

MISSPELT = {
    "compile": "compiel",
    "check": "chekc",
    "print": "prnt",
    "schedule": "shedule",
    "run": "rnu",
    "diff": "dif",
    "intrinsics": "intrinsic",
    "explain": "explian",
    "tune": "tnue",
}


def test_every_command_has_a_misspelling_here() -> None:
    assert sorted(MISSPELT) == sorted(cli.commands)


@pytest.mark.parametrize(("command", "typo"), sorted(MISSPELT.items()))
def test_misspelt_command_gets_a_suggestion(
    command: str, typo: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([typo, "x.tir"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert f"Error: No such command '{typo}'. Did you mean '{command}'?" in captured.err


def test_a_name_like_no_command_gets_no_suggestion(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["xyzzy"]) == 2
    err = capsys.readouterr().err
    assert "No such command 'xyzzy'." in err and "Did you mean" not in err

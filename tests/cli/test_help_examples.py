"""Every example that `tirc --help` and `tirc COMMAND --help` print runs as written.

Each command's examples run in order in a scratch directory holding links to samples/ and
docs/ (so outputs such as `-o mm.o` land there, and a later example may read an earlier
one's output), and exit 0, or 1 where the example's comment says `exit 1`. Examples that run
on a GPU are left to `make gpu-check`.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from tirc.cli.main import cli

REPOSITORY = Path(__file__).resolve().parents[2]
COMMANDS = [None, *sorted(cli.commands)]


def help_text(command: str | None) -> str:
    args = [command, "--help"] if command else ["--help"]
    result = CliRunner().invoke(cli, args, prog_name="tirc")
    assert result.exit_code == 0, result.output
    return result.output


def examples(text: str) -> list[str]:
    """The command lines of a help text's `Examples:` section."""
    _, found, section = text.partition("Examples:\n")
    assert found, "no Examples section"
    lines = [line.strip() for line in section.splitlines()]
    return [line for line in lines if line.startswith(("tirc ", "eval "))]


def expected_status(example: str) -> int:
    _, _, comment = example.partition("#")
    return 1 if re.search(r"\bexit 1\b", comment) else 0


def needs_gpu(example: str) -> bool:
    return example.startswith("tirc run") and "--target cuda" in example


def test_every_command_has_examples() -> None:
    for command in COMMANDS:
        assert examples(help_text(command)), f"tirc {command or ''} --help shows no example"


def test_no_example_names_a_missing_file() -> None:
    for command in COMMANDS:
        for example in examples(help_text(command)):
            for word in example.split():
                if word.startswith(("samples/", "docs/")):
                    assert list(REPOSITORY.glob(word)), f"{example!r} names {word}"


@pytest.mark.slow
@pytest.mark.parametrize("command", COMMANDS, ids=lambda name: name or "tirc")
def test_help_examples_run_as_written(command: str | None, tmp_path: Path) -> None:
    (tmp_path / "samples").symlink_to(REPOSITORY / "samples")
    (tmp_path / "docs").symlink_to(REPOSITORY / "docs")
    bin_dir = str(Path(sys.executable).parent)
    env = {**os.environ, "PATH": bin_dir + os.pathsep + os.environ.get("PATH", "")}
    env.pop("TIRC_TRACEBACK", None)
    for example in examples(help_text(command)):
        if needs_gpu(example):
            continue  # the GPU runs are checked by make gpu-check
        done = subprocess.run(
            ["bash", "-c", example],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        wanted = expected_status(example)
        assert done.returncode == wanted, (
            f"`{example}` exited {done.returncode}, not {wanted}\n{done.stdout}\n{done.stderr}"
        )


def test_a_misspelt_choice_gets_a_suggestion() -> None:
    result = CliRunner().invoke(cli, ["compile", "k.tir", "--emit", "objj"], prog_name="tirc")
    assert result.exit_code == click.UsageError.exit_code
    assert "Did you mean 'obj'?" in result.output

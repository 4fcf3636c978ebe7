"""`tirc explain`, --help examples, shell completion, and "did you mean" suggestions for the
names a user types: primitives, passes, pipeline options, dtypes, targets."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tirc.cli.main import cli, main

Capture = pytest.CaptureFixture[str]
SAMPLES = Path(__file__).resolve().parents[2] / "samples"


def test_explain_primitive(capsys: Capture) -> None:
    assert main(["explain", "split"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("split (schedule primitive)\n")
    assert "TVM trace name: `Split`" in out
    assert "- `factors`: a list of integers" in out
    assert "- `disable_predication`: true or false (optional, default `false`)" in out


def test_explain_by_tvm_name_and_dashes(capsys: Capture) -> None:
    assert main(["explain", "ComputeAt"]) == 0
    assert capsys.readouterr().out.startswith("compute_at (schedule primitive)")
    assert main(["explain", "compute-at"]) == 0
    assert capsys.readouterr().out.startswith("compute_at (schedule primitive)")


def test_explain_pass_with_options(capsys: Capture) -> None:
    assert main(["explain", "unroll-loop"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("unroll-loop (pass)")
    assert "Expects tir; leaves tir." in out
    assert "- `auto_max_step`: int, default `0`" in out
    assert main(["explain", "flatten_buffer"]) == 0
    assert capsys.readouterr().out.startswith("flatten-buffer (pass)")


def test_explain_lists_everything(capsys: Capture) -> None:
    from tirc.driver.explain import all_names

    assert main(["explain"]) == 0
    out = capsys.readouterr().out
    for name in all_names():
        assert f"  {name} " in out, name


def test_explain_unknown_suggests(capsys: Capture) -> None:
    assert main(["explain", "compute_inlne"]) == 1
    err = capsys.readouterr().err
    assert "error: no schedule primitive or pass is called 'compute_inlne'" in err
    assert "did you mean 'compute_inline'" in err
    assert main(["explain", "flaten-buffer"]) == 1
    assert "did you mean 'flatten-buffer'" in capsys.readouterr().err
    assert main(["explain", "zzzzzz"]) == 1
    err = capsys.readouterr().err
    assert "did you mean" not in err and "lists every primitive and pass" in err


@pytest.mark.parametrize("command", sorted(cli.commands))
def test_every_command_help_has_examples(command: str, capsys: Capture) -> None:
    assert main([command, "--help"]) == 0
    out = capsys.readouterr().out
    assert "\nExamples:\n" in out.replace("  Examples:", "Examples:")
    assert f"tirc {command}" in out.split("Examples:", 1)[1]


def test_top_level_help_mentions_completion(capsys: Capture) -> None:
    assert main(["--help"]) == 0
    assert "_TIRC_COMPLETE=bash_source tirc" in capsys.readouterr().out


def complete(words: str) -> list[str]:
    environment = dict(os.environ, _TIRC_COMPLETE="bash_complete", COMP_WORDS=words)
    environment["COMP_CWORD"] = str(len(words.split()) - (0 if words.endswith(" ") else 1))
    result = subprocess.run(
        [sys.executable, "-m", "tirc.cli.main"],
        env=environment,
        capture_output=True,
        text=True,
        check=False,
    )
    return [line.split(",", 1)[1] for line in result.stdout.splitlines()]


def test_completion_of_names() -> None:
    assert "compute_at" in complete("tirc explain comp")
    assert "compact-buffer-allocation" in complete("tirc explain comp")
    assert complete("tirc print --print-after flat") == ["flatten-buffer"]
    assert complete("tirc run x.tir --target cu") == ["cuda"]
    assert "explain" in complete("tirc ex")


def test_completion_script() -> None:
    environment = dict(os.environ, _TIRC_COMPLETE="bash_source")
    result = subprocess.run(
        [sys.executable, "-m", "tirc.cli.main"],
        env=environment,
        capture_output=True,
        text=True,
        check=False,
    )
    assert "_tirc_completion" in result.stdout
    assert "complete -o nosort -F _tirc_completion" in result.stdout


# -- did you mean --------------------------------------------------------------------------


def test_misspelt_primitive_in_a_plan(tmp_path: Path, capsys: Capture) -> None:
    plan = tmp_path / "p.json"
    plan.write_text(json.dumps({"steps": [{"op": "splt", "loop": "i"}]}))
    assert main(["schedule", str(SAMPLES / "matmul.tir"), "--apply", str(plan)]) == 1
    assert "unknown schedule primitive 'splt'; did you mean 'split'?" in capsys.readouterr().err


def test_misspelt_pass_and_option_in_a_pipeline(tmp_path: Path, capsys: Capture) -> None:
    pipeline = tmp_path / "p.toml"
    pipeline.write_text('passes = ["lower-init-blok", "unroll-loop{auto_max_steps=4}"]\n')
    argv = ["print", "--lower", str(SAMPLES / "matmul.tir"), "--pipeline", str(pipeline)]
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert "unknown pass 'lower-init-blok'" in err
    assert "did you mean 'lower-init-block'?" in err
    assert "pass 'unroll-loop' has no option 'auto_max_steps'" in err
    assert "did you mean 'auto_max_step'?" in err


def test_misspelt_dtype(tmp_path: Path, capsys: Capture) -> None:
    program = tmp_path / "k.tir"
    program.write_text(
        '@T.prim_func\ndef main(A: T.Buffer((4,), "flot32")):\n'
        "    for i in range(4):\n        A[i] = T.float32(0)\n"
    )
    assert main(["check", str(program)]) == 1
    assert "unknown data type 'flot32'; did you mean 'float32'?" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "message", "suggestion"),
    [
        (["run", "--target", "cpux"], "unknown target 'cpux'", "'cpu'"),
        (["compile", "--target", "cdua", "-o", "-"], "unknown target 'cdua'", "'cuda'"),
        (["print", "--lower", "--target", "cpy"], "unknown target 'cpy'", "'cpu'"),
        (
            ["run", "--target", "cpu -mcpux=native"],
            "unknown target option '-mcpux=native'",
            "'-mcpu='",
        ),
    ],
)
def test_misspelt_target(argv: list[str], message: str, suggestion: str, capsys: Capture) -> None:
    assert main([*argv, str(SAMPLES / "matmul.tir")]) == 1
    err = capsys.readouterr().err
    assert message in err
    assert f"note: did you mean {suggestion}?" in err

"""Remarks: a vectorize, unroll or parallel that lowering cannot honour is said on stderr at
the loop, once; `-W error` makes it an error; a library caller hears nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tirc.cli.main import main
from tirc.driver.lower import lower_module
from tirc.text import parse

PROGRAM = """@T.prim_func
def main(A: T.Buffer((64,), "float32"), n: T.int32):
    for io in range(8):
        for ii in T.vectorized(8):
            x: T.float32 = A[io * 8 + ii]
            A[io * 8 + ii] = x * x
    for i in T.unroll(n):
        A[i] = T.float32(0)
    for i in T.parallel(4):
        for j in T.parallel(16):
            A[i * 16 + j] = T.float32(1)
    for i in T.vectorized(8):
        A[i] = A[i] + T.float32(1)
"""

Capture = pytest.CaptureFixture[str]


def remarks_of(err: str) -> list[tuple[str, str]]:
    """(message, location) of each remark in rendered stderr."""
    lines = err.splitlines()
    found = []
    for index, line in enumerate(lines):
        if line.startswith("remark: "):
            location = lines[index + 1].split("--> ")[-1] if index + 1 < len(lines) else ""
            found.append((line.removeprefix("remark: "), location))
    return found


def test_each_unhonoured_request_is_a_located_remark(tmp_path: Path, capsys: Capture) -> None:
    source = tmp_path / "k.tir"
    source.write_text(PROGRAM)
    assert main(["compile", str(source), "-o", str(tmp_path / "k.o")]) == 0
    found = remarks_of(capsys.readouterr().err)
    assert [message.split(":")[0] for message, _ in found] == [
        "vectorized loop 'ii' runs serially",
        "unrolled loop 'i' runs as an ordinary loop",
        "parallel loop 'j' runs serially",
    ]
    assert [location for _, location in found] == [
        f"{source}:4:9",
        f"{source}:7:5",
        f"{source}:10:9",
    ]


def test_each_remark_is_said_once_per_command(tmp_path: Path, capsys: Capture) -> None:
    source = tmp_path / "k.tir"
    source.write_text(PROGRAM)
    assert main(["run", str(source), "--target", "cpu", "--size", "n=4", "--bench"]) == 0
    messages = [message for message, _ in remarks_of(capsys.readouterr().err)]
    assert len(messages) == len(set(messages)) == 3


def test_minus_w_error_makes_remarks_errors(tmp_path: Path, capsys: Capture) -> None:
    source = tmp_path / "k.tir"
    source.write_text(PROGRAM)
    output = tmp_path / "k.o"
    assert main(["compile", str(source), "-o", str(output), "-W", "error"]) == 1
    err = capsys.readouterr().err
    assert "error: vectorized loop 'ii' runs serially" in err
    assert "-W error makes it an error" in err
    assert not output.exists()


def test_a_loop_a_schedule_built_is_located_at_what_it_runs(
    tmp_path: Path, capsys: Capture
) -> None:
    source = tmp_path / "k.tir"
    source.write_text(
        "@T.prim_func(s_tir=True)\n"
        'def main(A: T.Buffer((64,), "float32"), B: T.Buffer((64,), "float32")):\n'
        "    for i in range(64):\n"
        '        with T.sblock("B"):\n'
        "            vi = T.axis.spatial(64, i)\n"
        "            x: T.float32 = A[vi]\n"
        "            B[vi] = x * x\n"
    )
    plan = tmp_path / "plan.json"
    plan.write_text(
        json.dumps(
            [
                {"op": "get_sblock", "name": "B", "out": "b"},
                {"op": "get_loops", "block": "b", "out": ["i"]},
                {"op": "split", "loop": "i", "factors": [None, 8], "out": ["io", "ii"]},
                {"op": "vectorize", "loop": "ii"},
            ]
        )
    )
    argv = ["print", "--lower", str(source), "--plan", str(plan), "-o", str(tmp_path / "l.tir")]
    assert main(argv) == 0
    ((message, location),) = remarks_of(capsys.readouterr().err)
    assert message.startswith("vectorized loop 'i_1' runs serially")
    assert location.startswith(f"{source}:6:")


def test_library_callers_hear_nothing(capsys: Capture) -> None:
    lower_module(parse(PROGRAM))
    assert capsys.readouterr() == ("", "")


def test_lowered_functions_are_not_marked_s_tir() -> None:
    sample = Path(__file__).resolve().parents[2] / "samples" / "elementwise.tir"
    module = parse(sample.read_text())
    assert module["main"].is_s_tir
    assert not lower_module(module)["main"].is_s_tir


def test_vectorized_loop_of_symbolic_extent_is_valid_and_runs_serially(
    tmp_path: Path, capsys: Capture
) -> None:
    """TVM's test_tir_loop_steps: T.vectorized over a symbolic range, with a step."""
    source = tmp_path / "steps.tir"
    source.write_text(
        "@T.prim_func\n"
        'def main(A: T.Buffer((64,), "float32"), tid: T.int32):\n'
        "    for i in T.vectorized(tid, 64, step=4):\n"
        "        A[i] = A[i] + T.float32(1)\n"
    )
    args = ["run", str(source), "--target", "cpu", "--size", "tid=3", "--check"]
    assert main(args) == 0
    captured = capsys.readouterr()
    assert "check: the compiled code agrees with the interpreter" in captured.out
    (found,) = remarks_of(captured.err)
    assert found == (
        "vectorized loop 'i' runs serially: its extent is not a constant",
        f"{source}:3:5",
    )

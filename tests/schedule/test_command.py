"""`tirc schedule` end to end: outputs, --trace replay, --intrinsics, exit statuses, and
nothing written when a step cannot apply."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tirc.cli.main import main
from tirc.ir.structural import find_difference
from tirc.text import parse

Capture = pytest.CaptureFixture[str]

KERNEL = """# from tvm.script import tirx as T

N = 128

@T.prim_func(s_tir=True)
def main(A: T.Buffer((N, N)), B: T.Buffer((N, N)), C: T.Buffer((N, N))):
    for i, j, k in T.grid(N, N, N):
        with T.sblock("C"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            T.reads(A[vi, vk], B[vk, vj])
            T.writes(C[vi, vj])
            with T.init():
                C[vi, vj] = T.float32(0.0)
            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]
"""

GOOD = [
    [
        ["GetSBlock", [], ["C", "main"], ["b0"]],
        ["GetLoops", ["b0"], [], ["l1", "l2", "l3"]],
        ["SamplePerfectTile", ["l1"], [2, 64], ["v4", "v5"]],
        ["Split", ["l1", "v4", "v5"], [True, False], ["l6", "l7"]],
        ["Parallel", ["l6"], [], []],
        ["Annotate", ["l7", 16], ["pragma_auto_unroll_max_step"], []],
        ["Unroll", ["l3"], [], []],
    ],
    [[2, [8, 16]]],
]

BAD = [
    [
        ["GetSBlock", [], ["C", "main"], ["b0"]],
        ["GetLoops", ["b0"], [], ["l1", "l2", "l3"]],
        ["Parallel", ["l1"], [], []],
        ["Vectorize", ["l3"], [], []],
    ],
    [],
]

INTRINSIC = """# from tvm.script import tirx as T

@T.prim_func(s_tir=True)
def desc(A: T.Buffer((4,), "float32"), B: T.Buffer((4,), "float32")):
    with T.sblock("root"):
        T.reads(A[0:4])
        T.writes(B[0:4])
        for i in range(4):
            with T.sblock("copy"):
                vi = T.axis.spatial(4, i)
                B[vi] = A[vi]
"""


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    paths = {
        "kernel": tmp_path / "k.tir",
        "good": tmp_path / "good.json",
        "bad": tmp_path / "bad.json",
        "out": tmp_path / "out.tir",
        "trace": tmp_path / "trace.json",
    }
    paths["kernel"].write_text(KERNEL)
    paths["good"].write_text(json.dumps(GOOD))
    paths["bad"].write_text(json.dumps(BAD))
    return paths


def test_schedule_writes_the_module_and_the_trace(files: dict[str, Path]) -> None:
    argv = ["schedule", str(files["kernel"]), "--apply", str(files["good"])]
    assert main(argv + ["-o", str(files["out"]), "--trace", str(files["trace"])]) == 0
    text = files["out"].read_text()
    assert "for i_0 in T.parallel(8):" in text
    assert "T.unroll(128)" in text
    trace = json.loads(files["trace"].read_text())
    assert trace["steps"][2]["decision"] == [8, 16]
    # Replaying the written trace gives the same module.
    again = files["out"].with_name("again.tir")
    argv = ["schedule", str(files["kernel"]), "--apply", str(files["trace"])]
    assert main(argv + ["-o", str(again)]) == 0
    assert find_difference(parse(again.read_text()), parse(text)) is None


def test_schedule_prints_to_stdout_by_default(files: dict[str, Path], capsys: Capture) -> None:
    assert main(["schedule", str(files["kernel"]), "--apply", str(files["good"])]) == 0
    assert "T.parallel(8)" in capsys.readouterr().out


def test_definitions_reach_the_program(files: dict[str, Path], capsys: Capture) -> None:
    argv = ["schedule", str(files["kernel"]), "--apply", str(files["good"]), "-D", "N=64"]
    # The decision tiles 128; with N=64 it no longer does, and the step says so.
    assert main(argv) == 1
    assert "multiply to 128, the extent is 64" in capsys.readouterr().err


def test_failing_step_exits_1_and_writes_nothing(files: dict[str, Path], capsys: Capture) -> None:
    argv = ["schedule", str(files["kernel"]), "--apply", str(files["bad"])]
    assert main(argv + ["-o", str(files["out"]), "--trace", str(files["trace"])]) == 1
    assert not files["out"].exists() and not files["trace"].exists()
    err = capsys.readouterr().err
    assert "error: step 4 (vectorize) cannot apply" in err
    assert "a reduction cannot be vectorized" in err
    assert f"{files['bad']}:1:" in err  # the step in the plan
    assert f"{files['kernel']}:8:" in err  # the loop in the program
    assert "Traceback" not in err


def test_failing_step_keeps_an_existing_output(files: dict[str, Path]) -> None:
    files["out"].write_text("previous build\n")
    argv = ["schedule", str(files["kernel"]), "--apply", str(files["bad"])]
    assert main(argv + ["-o", str(files["out"])]) == 1
    assert files["out"].read_text() == "previous build\n"


def test_malformed_plan_exits_1(files: dict[str, Path], capsys: Capture) -> None:
    files["bad"].write_text(
        '[[["GetSBlock", [], ["C", "main"], ["b0"]],\n  ["Paralel", ["l1"]]], []]'
    )
    argv = ["schedule", str(files["kernel"]), "--apply", str(files["bad"])]
    assert main(argv + ["-o", str(files["out"])]) == 1
    err = capsys.readouterr().err
    assert "an instruction is [kind, inputs, attrs, outputs]" in err
    assert f"{files['bad']}:2:3" in err
    assert not files["out"].exists()


def test_missing_apply_is_bad_usage(files: dict[str, Path], capsys: Capture) -> None:
    assert main(["schedule", str(files["kernel"])]) == 2
    assert "--apply" in capsys.readouterr().err


def test_intrinsics_are_read_and_validated(
    files: dict[str, Path], tmp_path: Path, capsys: Capture
) -> None:
    good = tmp_path / "intrinsics.json"
    good.write_text(json.dumps({"copy4": {"desc": INTRINSIC, "impl": INTRINSIC}}))
    argv = ["schedule", str(files["kernel"]), "--apply", str(files["good"])]
    assert main(argv + ["--intrinsics", str(good), "-o", str(files["out"])]) == 0

    broken = tmp_path / "broken.json"
    broken.write_text(
        json.dumps({"copy4": {"desc": INTRINSIC.replace("range(4)", "range(4"), "impl": INTRINSIC}})
    )
    assert main(argv + ["--intrinsics", str(broken), "-o", str(tmp_path / "x.tir")]) == 1
    assert f"{broken}[copy4.desc]:8:" in capsys.readouterr().err

    incomplete = tmp_path / "incomplete.json"
    incomplete.write_text(json.dumps({"copy4": {"desc": INTRINSIC}}))
    assert main(argv + ["--intrinsics", str(incomplete)]) == 1
    assert 'intrinsic "copy4" needs exactly "desc" and "impl"' in capsys.readouterr().err


def test_as_a_process(files: dict[str, Path]) -> None:
    argv = [sys.executable, "-m", "tirc.cli.main", "schedule", str(files["kernel"])]
    done = subprocess.run(argv + ["--apply", str(files["bad"])], capture_output=True, text=True)
    assert done.returncode == 1 and done.stdout == ""
    assert "cannot apply" in done.stderr

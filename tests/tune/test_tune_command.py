"""`tirc tune` end to end on a small kernel: the plan it writes compiles and computes what the
program does, the database resumes, --report lists it, bad input is a located error."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tirc.schedule.apply import apply_plan
from tirc.schedule.plan import read_plan
from tirc.text import parse

SAMPLES = Path(__file__).resolve().parents[2] / "samples"
KERNEL = """
@T.prim_func(s_tir=True)
def main(A: T.Buffer((64, 32), "float32"), B: T.Buffer((32, 64), "float32"),
         C: T.Buffer((64, 64), "float32")):
    for i, j, k in T.grid(64, 64, 32):
        with T.sblock("C"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                C[vi, vj] = T.float32(0.0)
            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]
"""


def tirc(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tirc", *args], cwd=cwd, capture_output=True, text=True, timeout=600
    )


@pytest.fixture(scope="module")
def tuned(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("tune")
    (directory / "mm.tir").write_text(KERNEL)
    done = tirc(
        "tune", "mm.tir", "--trials", "6", "--workers", "local:2", "--db", "t.db",
        "-o", "mm.plan.json", "--threads", "1", cwd=directory,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "best:" in done.stderr and "GFLOP/s" in done.stderr
    return directory


def test_the_tuned_plan_computes_what_the_program_does_and_is_reported(tuned: Path) -> None:
    from tirc.interp import random_inputs, run

    module = parse(KERNEL)
    plan = (tuned / "mm.plan.json").read_text()
    assert json.loads(plan)["version"] == 1
    scheduled, _ = apply_plan(module, read_plan(plan))
    want, got = random_inputs(module["main"], 3), random_inputs(module["main"], 3)
    run(module["main"], want, module=module)
    run(scheduled["main"], got, module=scheduled)
    np.testing.assert_allclose(got["C"], want["C"], rtol=1e-5)
    done = tirc("compile", "mm.tir", "--plan", "mm.plan.json", "-o", "mm.o", cwd=tuned)
    assert done.returncode == 0, done.stderr
    assert (tuned / "mm.o").stat().st_size > 0

    # --report in the same test: a second test on the module fixture would make xdist run the
    # tuning on both workers
    done = tirc("tune", "--report", "--db", "t.db", cwd=tuned)
    assert done.returncode == 0, done.stderr
    assert "main:" in done.stdout and " cpu threads=1" in done.stdout
    assert "best:" in done.stdout and '"op": "sample_perfect_tile"' in done.stdout


@pytest.mark.slow  # a second tuning run (resumed) on top of the shared one
def test_the_database_has_a_row_per_candidate_and_resumes(tuned: Path) -> None:
    with sqlite3.connect(tuned / "t.db") as connection:
        before = connection.execute("SELECT COUNT(*), COUNT(DISTINCT plan) FROM measurements")
        count, distinct = before.fetchone()
    assert count == distinct == 6
    done = tirc(
        "tune", "mm.tir", "--trials", "2", "--db", "t.db", "-o", "again.json", "--threads", "1",
        cwd=tuned,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "resumed: 6 candidates measured before" in done.stderr
    with sqlite3.connect(tuned / "t.db") as connection:
        rows = connection.execute("SELECT COUNT(*), COUNT(DISTINCT plan) FROM measurements")
        assert rows.fetchone() == (8, 8)
        best = connection.execute(
            "SELECT plan FROM measurements WHERE status = 'ok' ORDER BY seconds LIMIT 1"
        ).fetchone()[0]
    assert (tuned / "again.json").read_text() == best


# (arguments, the error's words, whether in a `tirc` process): two run as a process, for the exit
# status and the absence of a traceback there; the others call the command line in this process
# (a process each took about 3 s to start and import tirc)
BAD_INPUTS = [
    (["missing.tir", "-o", "p.json"], "cannot read 'missing.tir'", True),
    (["mm.tir", "--target", "interp", "-o", "p.json"], "cannot tune for 'interp'", False),
    (["mm.tir", "--workers", "many", "-o", "p.json"], "bad --workers 'many'", False),
    (["mm.tir", "--workers", "ray:", "-o", "p.json"], "bad --workers 'ray:'", False),
    (["mm.tir", "--trials", "0", "-o", "p.json"], "--trials must be at least 1", False),
    (["mm.tir", "--func", "nope", "-o", "p.json"], "no function 'nope'", False),
    (["bad.tir", "-o", "p.json"], "error", True),
    (["mm.tir", "--db", "notadb.db", "-o", "p.json"], "cannot use 'notadb.db'", False),
    (["--report", "--db", "absent.db"], "no tuning database at 'absent.db'", False),
]


@pytest.mark.parametrize(("args", "message", "as_process"), BAD_INPUTS)
def test_bad_input_is_a_diagnosed_error(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    args: list[str],
    message: str,
    as_process: bool,
) -> None:
    from tirc.cli.main import main

    (tmp_path / "mm.tir").write_text(KERNEL)
    (tmp_path / "bad.tir").write_text(KERNEL.replace("T.grid(64, 64, 32)", "T.grid(64, 64"))
    (tmp_path / "notadb.db").write_text("this is not a database" * 100)
    if as_process:
        done = tirc("tune", *args, cwd=tmp_path)
        code, stderr = done.returncode, done.stderr
    else:
        monkeypatch.chdir(tmp_path)
        code, stderr = main(["tune", *args]), capsys.readouterr().err
    assert code == 1, stderr
    assert message in stderr
    assert "Traceback" not in stderr and "internal error" not in stderr
    assert not (tmp_path / "p.json").exists()


def test_usage_without_an_output_is_exit_2(tmp_path: Path) -> None:
    (tmp_path / "mm.tir").write_text(KERNEL)
    done = tirc("tune", "mm.tir", cwd=tmp_path)
    assert done.returncode == 2
    assert "-o PLAN.json" in done.stderr


def test_a_cuda_task_too_big_to_interpret_takes_its_reference_from_the_cpu(
    tmp_path: Path,
) -> None:
    from tirc.driver.target import parse_target
    from tirc.tune import measure
    from tirc.tune.task import load_task

    task = load_task(KERNEL, "mm.tir", {}, None, parse_target("cuda"), 0)
    reference = measure.make_reference(task, str(tmp_path), 120, interp_limit=0)
    assert reference.source == "unscheduled program compiled for the CPU"
    with np.load(reference.path) as data:
        a, b, c = data["in:A"], data["in:B"], data["out:C"]
    np.testing.assert_allclose(c, a.astype(np.float64) @ b, rtol=1e-5)

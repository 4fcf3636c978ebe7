"""`--workers`: its spellings, the machine's timing lock that Ray tasks take turns with, a
missing Ray said with the extra that brings it, and a tuning run whose candidates are Ray
tasks on a local Ray instance."""

from __future__ import annotations

import fcntl
import os
import sqlite3
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tirc.cli.main import main
from tirc.diagnostics import DiagnosticError
from tirc.tune.task import cpu_count
from tirc.tune.workers import Workers, check_reachable, machine_turn, parse_workers

KERNEL = """
@T.prim_func(s_tir=True)
def main(A: T.Buffer((256, 64), "float32"), B: T.Buffer((256, 64), "float32")):
    for i, j in T.grid(256, 64):
        with T.sblock("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] * T.float32(2.0)
"""


def has_ray() -> bool:
    try:
        import ray  # noqa: F401  (the optional extra, only to know whether to skip)
    except ImportError:
        return False
    return True


@pytest.mark.parametrize(
    ("spec", "parsed"),
    [
        (None, Workers("local", cpu_count())),
        ("local", Workers("local", cpu_count())),
        ("local:3", Workers("local", 3)),
    ],
)
def test_local_spellings(spec: str | None, parsed: Workers) -> None:
    assert parse_workers(spec) == parsed


@pytest.mark.skipif(not has_ray(), reason="ray (the tirc[ray] extra) is not installed")
@pytest.mark.parametrize(
    ("spec", "address"), [("ray", None), ("ray:10.0.0.5:6379", "10.0.0.5:6379")]
)
def test_ray_spellings(spec: str, address: str | None) -> None:
    assert parse_workers(spec) == Workers("ray", address=address)


@pytest.mark.parametrize("spec", ["local:0", "local:x", "ray:", "many", "local:"])
def test_bad_spellings_are_errors(spec: str) -> None:
    with pytest.raises(DiagnosticError, match=f"bad --workers '{spec}'"):
        parse_workers(spec)


def test_without_ray_the_error_names_the_extra(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` raises ImportError
    (tmp_path / "k.tir").write_text(KERNEL)
    code = main(["tune", str(tmp_path / "k.tir"), "--workers", "ray", "-o", str(tmp_path / "p")])
    error = capsys.readouterr().err
    assert code == 1
    assert error.startswith("error: --workers ray needs Ray, which is not installed")
    assert "pip install 'tirc[ray]'" in error and "Traceback" not in error


def test_an_address_where_no_cluster_answers_is_said_at_once() -> None:
    import socket

    with socket.create_server(("127.0.0.1", 0)) as server:  # something listens here
        check_reachable(f"127.0.0.1:{server.getsockname()[1]}")
        check_reachable(f"ray://127.0.0.1:{server.getsockname()[1]}")
        closed = server.getsockname()[1]
    with pytest.raises(DiagnosticError, match=f"no Ray cluster answers at 127.0.0.1:{closed}"):
        check_reachable(f"127.0.0.1:{closed}", seconds=5)
    check_reachable("auto")  # Ray's own spelling: Ray resolves it


def test_the_machine_turn_is_one_holder_at_a_time() -> None:
    path = os.path.join(tempfile.gettempdir(), "tirc-timer-test-turn.lock")
    with machine_turn("test-turn"), open(path, "a") as other:
        with pytest.raises(BlockingIOError):  # another process's (or task's) try now fails
            fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)
    with open(path, "a") as other:  # given back: the next one gets it
        fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)


@pytest.fixture(scope="module")
def ray_instance() -> Iterator[None]:
    ray = pytest.importorskip("ray", reason="ray (the tirc[ray] extra) is not installed")
    # one GPU as Ray counts them (a resource): the fake driver stands for it
    ray.init(
        num_cpus=2, num_gpus=1, include_dashboard=False, log_to_driver=False, logging_level="ERROR"
    )
    yield
    ray.shutdown()


def test_candidates_are_measured_as_ray_tasks(
    ray_instance: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import ray

    (tmp_path / "k.tir").write_text(KERNEL)
    plan = tmp_path / "k.plan.json"
    db = tmp_path / "t.db"
    args = ["tune", str(tmp_path / "k.tir"), "--workers", "ray", "--trials", "3"]
    code = main([*args, "--threads", "1", "--db", str(db), "-o", str(plan)])
    output = capsys.readouterr().err
    assert code == 0, output
    assert (
        "note: workers: Ray tasks on the Ray instance this process had started (2 CPUs, 1 GPU)"
        in output
    )
    assert ray.is_initialized()  # a Ray instance already there is used, and left running
    with sqlite3.connect(db) as connection:
        rows = list(connection.execute("SELECT plan, status, seconds FROM measurements"))
    assert len(rows) == 3 and {status for _, status, _ in rows} == {"ok"}, rows
    assert all(seconds > 0 for *_, seconds in rows)
    assert plan.read_text() == min(rows, key=lambda row: row[2])[0]


@pytest.mark.slow  # ~20 s: six CUDA candidates in Ray tasks
def test_cuda_candidates_are_timed_in_ray_tasks_on_its_gpu(
    ray_instance: None, tmp_path: Path
) -> None:
    from tests.runtime.fake_cuda import FakeGpu
    from tests.tune.test_measure_gpu import kernel_ms, rows, run_kernel, tune

    log = tmp_path / "launches.jsonl"
    gpu = FakeGpu(run_kernel, kernel_ms, str(log))
    code, output = tune(tmp_path, gpu, trials=8, workers="ray")
    assert code == 0, output
    assert "note: workers: Ray tasks on" in output
    assert "timed on the GPU (sm_90) by CUDA events" in output
    measured = rows(tmp_path)
    assert sorted(status for _, status, _, _ in measured) == ["ok"] * 4 + ["run-error", "wrong"]
    best_plan, _, best_seconds, _ = min((r for r in measured if r[1] == "ok"), key=lambda r: r[2])
    assert best_seconds == pytest.approx(1e-6)  # blocks of 256 threads, as locally
    assert (tmp_path / "k.plan.json").read_text() == best_plan
    pids = {line.split('"pid": ')[1].split(",")[0] for line in log.read_text().splitlines()}
    assert len(pids) == 6  # each candidate in a process of its own, on the Ray worker

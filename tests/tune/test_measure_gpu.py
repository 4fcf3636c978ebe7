"""`tirc tune --target cuda` times candidates on the GPU: against the fake driver
(tests/runtime/fake_cuda.py), whose kernels compute what the test says and take the time it
says, each candidate is built, launched in its own process, checked against the reference
before it is timed by CUDA events, a wrong one or one that faults is rejected untimed, and
the fastest correct one is the best in the database and the plan written. On a real GPU
(marked `gpu`), the same on this machine's device."""

from __future__ import annotations

import json
import math
import sqlite3
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest

from tests.runtime.fake_cuda import CUresult, FakeDriver, FakeGpu, Launch
from tirc.diagnostics import DiagnosticError
from tirc.driver.target import parse_target
from tirc.tune.command import tune_file

N = 4096
KERNEL = f"""
@T.prim_func(s_tir=True)
def main(A: T.Buffer(({N},), "float32"), B: T.Buffer(({N},), "float32")):
    for i in range({N}):
        with T.sblock("B"):
            vi = T.axis.remap("S", [i])
            B[vi] = A[vi] * T.float32(2.0) + T.float32(1.0)
"""
WRONG_BLOCK = 128  # candidates launched with blocks of this many threads compute garbage
FAULT_BLOCK = 64  # and with these, fault


def run_kernel(driver: FakeDriver, launch: Launch) -> None:
    """B = A * 2 + 1, as the kernel would; B = A * 2 for blocks of WRONG_BLOCK threads, and
    an illegal address for blocks of FAULT_BLOCK threads."""
    if launch.kernel == "tirc_spin":
        return
    if launch.block[0] == FAULT_BLOCK:
        driver.pending = CUresult.CUDA_ERROR_ILLEGAL_ADDRESS  # said at the next synchronization
        return
    a, b = (_pointer(value) for _, value in launch.args)
    values = np.frombuffer(driver.read(a, N * 4), np.float32)
    result = values * 2 if launch.block[0] == WRONG_BLOCK else values * 2 + 1
    driver.write(b, result.astype(np.float32).tobytes())


def _pointer(value: object) -> int:
    assert isinstance(value, int)  # the fake driver passes device pointers as integers
    return value


def kernel_ms(launch: Launch) -> float:
    """Blocks of 256 threads are the fastest; each factor of two away costs a microsecond."""
    return 1e-3 * (1 + abs(math.log2(launch.block[0]) - 8))


def no_gpu() -> FakeDriver:
    raise DiagnosticError.at(None, "--target cuda: the CUDA driver is not available (test)")


def tune(
    tmp_path: Path, open_gpu: object, trials: int, workers: str = "local:2"
) -> tuple[int, str]:
    import io

    (tmp_path / "k.tir").write_text(KERNEL)
    stream = io.StringIO()
    code = tune_file(
        str(tmp_path / "k.tir"),
        target=parse_target("cuda"),
        defines={},
        func=None,
        trials=trials,
        time_budget=None,
        workers=workers,
        db=str(tmp_path / "t.db"),
        output=str(tmp_path / "k.plan.json"),
        threads=0,
        timeout=120,
        seed=0,
        stream=stream,
        open_gpu=open_gpu,  # type: ignore[arg-type]  # a fake's factory
    )
    return code, stream.getvalue()


def rows(tmp_path: Path) -> list[tuple[str, str, float | None, str]]:
    with sqlite3.connect(tmp_path / "t.db") as connection:
        query = "SELECT plan, status, seconds, message FROM measurements"
        return list(connection.execute(query))


def test_each_candidate_is_launched_checked_timed_and_the_fastest_written(
    tmp_path: Path,
) -> None:
    log = tmp_path / "launches.jsonl"
    code, output = tune(tmp_path, FakeGpu(run_kernel, kernel_ms, str(log)), trials=8)
    assert code == 0, output
    assert "timed on the GPU (sm_90) by CUDA events" in output
    assert "the design space has no candidate left" in output  # six: blocks of 32 to 1024
    launches: dict[int, list[tuple[str, int]]] = defaultdict(list)
    for line in log.read_text().splitlines():
        record = json.loads(line)
        launches[record["pid"]].append((record["kernel"], record["block"][0]))
    measured = rows(tmp_path)
    assert len(measured) == len(launches) == 6  # a process of its own for each candidate
    timed = set()
    for records in launches.values():
        (block,) = {block for kernel, block in records if kernel != "tirc_spin"}
        if block in (WRONG_BLOCK, FAULT_BLOCK):
            assert records == [("main_kernel", block)]  # run once, failed, never timed
        else:
            # checked; then its first call again, a warm-up and 20 calls behind one spin
            assert records.count(("main_kernel", block)) == 1 + 1 + 1 + 20
            assert records.count(("tirc_spin", 1)) == 1
            timed.add(block)
    assert timed == {32, 256, 512, 1024}
    (wrong,) = [r for r in measured if r[1] == "wrong"]
    assert wrong[2] is None and "B: 4096 of 4096 values differ" in wrong[3]
    (fault,) = [r for r in measured if r[1] == "run-error"]
    assert fault[2] is None
    assert fault[3].startswith("kernel main_kernel faulted on the GPU (launch 1 of main")
    assert "CUDA_ERROR_ILLEGAL_ADDRESS" in fault[3]
    good = [r for r in measured if r[1] == "ok"]
    assert all(message == "timed by CUDA events" for *_, message in good)
    # each good candidate's time: the median of its calls by the fake's events, in seconds
    assert sorted(seconds for _, _, seconds, _ in good) == pytest.approx(
        sorted(kernel_ms(Launch("k", (1, 1, 1), (b, 1, 1), 0, ())) / 1e3 for b in timed)
    )
    best_plan, _, best_seconds, _ = min(good, key=lambda r: r[2])
    assert best_seconds == pytest.approx(1e-6)  # blocks of 256 threads
    assert '"thread": "threadIdx.x"' in best_plan
    assert (tmp_path / "k.plan.json").read_text() == best_plan
    assert "best: 0.0010 ms" in output


def test_without_a_gpu_the_candidates_are_built_and_checked_only(tmp_path: Path) -> None:
    code, output = tune(tmp_path, no_gpu, trials=2)
    assert code == 0, output
    assert (
        "no GPU was measured (--target cuda: the CUDA driver is not available (test)): "
        "candidates were built and checked only" in output
    )
    assert {status for _, status, _, _ in rows(tmp_path)} == {"built"}
    assert (tmp_path / "k.plan.json").exists()


def _has_device() -> bool:
    try:
        from tirc.runtime.cuda_driver import Device

        Device()
    except (DiagnosticError, ImportError):
        return False
    return True


@pytest.mark.gpu
@pytest.mark.skipif(not _has_device(), reason="no CUDA device (or no cuda-python)")
def test_on_the_gpu_every_good_candidate_has_a_time(tmp_path: Path) -> None:
    from tirc.runtime.cuda_driver import Device

    code, output = tune(tmp_path, Device, trials=4)
    assert code == 0, output
    assert "timed on the GPU" in output
    good = [r for r in rows(tmp_path) if r[1] == "ok"]
    assert good and all(seconds is not None and 0 < seconds < 1 for _, _, seconds, _ in good)

"""The progress line of long measurements: on a terminal's stderr only, erased when done, and
the printed results the same with or without it."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest
from rich.console import Console

from tirc.driver.progress import Meter, meter_for, terminal_console
from tirc.driver.run import run_file
from tirc.driver.run_cpu import bench

KERNEL = """\
@T.prim_func(s_tir=True)
def main(A: T.Buffer((16,), "float32"), B: T.Buffer((16,), "float32")):
    for i in range(16):
        with T.sblock("B"):
            vi = T.axis.spatial(16, i)
            B[vi] = A[vi] * T.float32(2.0)
"""

# timings, and the load average a busy machine is reported with: they differ between runs
TIMINGS = re.compile(r"\d+\.\d+(?: (?:ms|s|GB/s|GFLOP/s))?")


class Terminal(io.StringIO):
    """A stream that says it is a terminal."""

    def isatty(self) -> bool:
        return True


def forced() -> tuple[Console, io.StringIO]:
    stream = io.StringIO()
    return Console(file=stream, force_terminal=True, width=100), stream


def test_no_console_where_the_stream_is_not_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FORCE_COLOR", "1")  # CI logs set it; a log is still not a terminal
    assert terminal_console(io.StringIO()) is None
    assert not meter_for(io.StringIO()).shown


def test_no_console_on_a_dumb_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TERM", "dumb")
    assert terminal_console(Terminal()) is None
    monkeypatch.setenv("TERM", "xterm-256color")
    assert terminal_console(Terminal()) is not None


def test_a_hidden_meter_does_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    with Meter(None) as meter:
        meter.stage("timing", total=1.0)
        meter.update(0.5)
        meter.advance()
        meter.print("result")
    captured = capsys.readouterr()
    assert (captured.out, captured.err) == ("result\n", "")


def test_bench_fills_the_bar_on_a_terminal() -> None:
    console, stream = forced()
    with Meter(console) as meter:
        meter.stage("timing main", total=1.0)
        timing = bench(lambda: None, min_time=0.01, max_repeats=50, meter=meter)
    shown = stream.getvalue()
    assert "timing main" in shown
    assert "100%" in shown  # the last frame, drawn as the display stops
    assert shown.endswith("\x1b[1A\x1b[2K")  # transient: the line erased as it stops
    assert timing.repeats >= 5


def test_meter_print_writes_exactly_the_text(capsys: pytest.CaptureFixture[str]) -> None:
    console, stream = forced()
    with Meter(console, total=2) as meter:
        meter.stage("step one", total=2)
        meter.print("matmul  1 thr: tirc 10.0 GFLOP/s")
        meter.advance()
    assert capsys.readouterr().out == "matmul  1 thr: tirc 10.0 GFLOP/s\n"
    assert "step one" in stream.getvalue()


def _run(path: Path, target: str) -> None:
    run_file(
        str(path),
        target=target,
        func=None,
        inputs=None,
        save=None,
        seed=0,
        defines={},
        bench=True,
    )


@pytest.mark.parametrize("target", ["interp", "cpu"])
def test_run_bench_prints_nothing_extra_off_a_terminal(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], target: str
) -> None:
    kernel = tmp_path / "k.tir"
    kernel.write_text(KERNEL)
    _run(kernel, target)
    captured = capsys.readouterr()
    assert captured.err == ""
    assert "bench: median" in captured.out


def test_run_bench_shows_its_stages_on_a_terminal(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    kernel = tmp_path / "k.tir"
    kernel.write_text(KERNEL)
    _run(kernel, "cpu")
    plain = capsys.readouterr().out
    terminal = Terminal()
    monkeypatch.setattr("sys.stderr", terminal)
    monkeypatch.delenv("TERM", raising=False)
    _run(kernel, "cpu")
    shown = terminal.getvalue()
    assert "timing main" in shown
    # the results are the same lines, bar the numbers measured
    assert TIMINGS.sub("#", capsys.readouterr().out) == TIMINGS.sub("#", plain)


@pytest.fixture
def bench_kernels(monkeypatch: pytest.MonkeyPatch) -> object:
    """benchmarks/bench_kernels.py with its child processes replaced by fixed numbers."""
    import importlib
    import sys

    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[2] / "benchmarks"))
    module = importlib.import_module("bench_kernels")
    monkeypatch.setattr(sys, "argv", ["bench_kernels.py", "--quick"])
    measured = {"tirc": 1e-3, "tirc_cpu": 1e-3, "numpy": 2e-3, "numpy_cpu": 2e-3, "build_s": 1.0}
    monkeypatch.setattr(module, "run_tirc", lambda name, threads, seconds: measured)
    monkeypatch.setattr(module, "run_tvm", lambda name, threads, seconds: "TVM skipped")
    monkeypatch.setattr(module, "peak_fraction", lambda workload, tirc: "  peak: 50%")
    monkeypatch.setattr(module, "compile_times", lambda runs: "compile: 1.00 s")
    return module


def test_bench_kernels_names_each_measurement_on_a_terminal(
    bench_kernels: object, capsys: pytest.CaptureFixture[str]
) -> None:
    plain = list(bench_kernels.report(quick=True))  # type: ignore[attr-defined]
    console, stream = forced()
    with Meter(console, total=bench_kernels.steps()) as meter:  # type: ignore[attr-defined]
        shown = list(bench_kernels.report(quick=True, meter=meter))  # type: ignore[attr-defined]
    assert shown == plain
    display = stream.getvalue()
    assert "compile times: tirc and TVM" in display
    assert "100%" in display  # every step advanced the bar


def test_bench_kernels_prints_only_the_report_off_a_terminal(
    bench_kernels: object, capsys: pytest.CaptureFixture[str]
) -> None:
    bench_kernels.main()  # type: ignore[attr-defined]
    captured = capsys.readouterr()
    assert captured.err == ""
    lines = captured.out.splitlines()
    assert lines == list(bench_kernels.report(quick=True))  # type: ignore[attr-defined]
    assert lines[-1] == "compile: 1.00 s"

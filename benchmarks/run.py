"""`make bench`: tirc's benchmarks, each printed as one line.

Whole-process start-up (`tirc --version`, `tirc print`), text throughput, scheduling, and the
CPU kernels against numpy and TVM (bench_kernels.py, several lines).
"""

from __future__ import annotations

import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

RUNS = 10
BYTECODE_DIRECTORY = os.path.join(tempfile.gettempdir(), "tirc-bench-bytecode")


def tirc_command() -> list[str]:
    """The installed `tirc` script next to this Python, else `python -m tirc`."""
    script = shutil.which("tirc", path=str(Path(sys.executable).parent))
    return [script] if script else [sys.executable, "-m", "tirc"]


def installed_environment() -> dict[str, str]:
    """The environment of an installed tirc: Python reads bytecode that the installer
    compiled. Kept out of the source tree (PYTHONPYCACHEPREFIX), and measured even where
    PYTHONDONTWRITEBYTECODE is set, which would make every run compile every module."""
    environment = dict(os.environ)
    environment.pop("PYTHONDONTWRITEBYTECODE", None)
    environment["PYTHONPYCACHEPREFIX"] = BYTECODE_DIRECTORY
    return environment


def time_process(command: list[str], runs: int = RUNS) -> tuple[list[float], list[float]]:
    """CPU seconds (user + system) and wall seconds of each run of `command`. CPU time is
    the figure to compare: on a shared, loaded machine wall time mostly measures the load."""
    environment = installed_environment()
    # warm the file cache and write the bytecode
    subprocess.run(command, check=True, capture_output=True, env=environment)
    cpu, wall = [], []
    for _ in range(runs):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        begin = time.perf_counter()
        subprocess.run(command, check=True, capture_output=True, env=environment)
        wall.append(time.perf_counter() - begin)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return cpu, wall


def startup(label: str, command: list[str], goal: str = "") -> str:
    cpu, wall = time_process(command)
    return (
        f"{label}: {statistics.median(cpu) * 1e3:.1f} ms CPU, median of {len(cpu)} with bytecode "
        f"(fastest {min(cpu) * 1e3:.1f} ms; wall {statistics.median(wall) * 1e3:.1f} ms{goal})"
    )


def version_startup() -> str:
    return startup("tirc --version", [*tirc_command(), "--version"])


def print_sample() -> str:
    sample = Path(__file__).resolve().parents[1] / "samples" / "matmul.tir"
    command = [*tirc_command(), "print", str(sample)]
    return startup("tirc print samples/matmul.tir", command, "; goal <= 150 ms")


def parse_print() -> str:
    from bench_text import measure

    numbers = measure()
    return (
        f"parse+print of a {numbers['lines']:,}-line module: "
        f"{numbers['parse_print_lines_per_s']:,.0f} lines/s "
        f"(parse {numbers['parse_lines_per_s']:,.0f}, "
        f"print {numbers['print_lines_per_s']:,.0f}; goal >= 10,000)"
    )


def interp_matmul() -> str:
    from bench_interp import matmul_128

    return matmul_128()


def schedule_plan() -> str:
    from bench_schedule import summary  # a sibling: run.py runs as a script

    return summary()


def cpu_kernels() -> str:
    """matmul, conv2d, add and softmax compiled for the CPU against numpy and TVM 0.27 with
    the same plans, and whole-process compile time against TVM's (bench_kernels.py)."""
    from bench_kernels import report

    return "\n".join(report(quick=True))


BENCHMARKS: list[Callable[[], str]] = [
    version_startup,
    print_sample,
    parse_print,
    interp_matmul,
    schedule_plan,
    cpu_kernels,
]


def main() -> None:
    for benchmark in BENCHMARKS:
        print(benchmark(), flush=True)


if __name__ == "__main__":
    import argparse

    argparse.ArgumentParser(description=__doc__).parse_args()  # --help; no stray options
    main()

"""`make bench`: tirc's benchmarks, each printed as one line.

Whole-process start-up (`tirc --version`, `tirc print`), text throughput, scheduling; kernel
benchmarks against numpy and TVM join the BENCHMARKS list as they land.
"""

from __future__ import annotations

import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

RUNS = 10


def tirc_command() -> list[str]:
    """The installed `tirc` script next to this Python, else `python -m tirc`."""
    script = shutil.which("tirc", path=str(Path(sys.executable).parent))
    return [script] if script else [sys.executable, "-m", "tirc"]


def time_process(command: list[str], runs: int = RUNS) -> list[float]:
    subprocess.run(command, check=True, capture_output=True)  # warm the file cache
    times = []
    for _ in range(runs):
        begin = time.perf_counter()
        subprocess.run(command, check=True, capture_output=True)
        times.append(time.perf_counter() - begin)
    return times


def version_startup() -> str:
    times = time_process([*tirc_command(), "--version"])
    median, fastest = statistics.median(times) * 1e3, min(times) * 1e3
    return f"tirc --version: {median:.1f} ms median of {len(times)} (fastest {fastest:.1f} ms)"


def print_sample() -> str:
    sample = Path(__file__).resolve().parents[1] / "samples" / "matmul.tir"
    times = time_process([*tirc_command(), "print", str(sample)])
    median, fastest = statistics.median(times) * 1e3, min(times) * 1e3
    return f"tirc print samples/matmul.tir: {median:.1f} ms median of {len(times)} (fastest {fastest:.1f} ms; goal <= 150 ms)"


def parse_print() -> str:
    from bench_text import measure

    numbers = measure()
    return (
        f"parse+print of a {numbers['lines']:,}-line module: "
        f"{numbers['parse_print_lines_per_s']:,.0f} lines/s (parse {numbers['parse_lines_per_s']:,.0f}, "
        f"print {numbers['print_lines_per_s']:,.0f}; goal >= 10,000)"
    )


def interp_matmul() -> str:
    from bench_interp import matmul_128

    return matmul_128()


def schedule_plan() -> str:
    from bench_schedule import summary  # a sibling: run.py runs as a script

    return summary()


BENCHMARKS: list[Callable[[], str]] = [
    version_startup,
    print_sample,
    parse_print,
    interp_matmul,
    schedule_plan,
]


def main() -> None:
    for benchmark in BENCHMARKS:
        print(benchmark(), flush=True)


if __name__ == "__main__":
    main()

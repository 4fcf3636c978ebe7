"""`make bench`: tirc's benchmarks, each printed as one line.

For now the start-up time of the whole `tirc --version` process; kernel benchmarks against
numpy and TVM join the BENCHMARKS list as they land.
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


def schedule_plan() -> str:
    from bench_schedule import summary  # a sibling: run.py runs as a script

    return summary()


BENCHMARKS: list[Callable[[], str]] = [version_startup, schedule_plan]


def main() -> None:
    for benchmark in BENCHMARKS:
        print(benchmark(), flush=True)


if __name__ == "__main__":
    main()

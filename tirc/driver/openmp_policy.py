"""How `tirc run --bench` keeps OpenMP from timing the machine instead of the kernel.

libgomp's idle threads spin before they sleep. On a machine with more runnable threads than
cores, a spinning thread burns the time slice the work needed, and a parallel kernel times
far worse than a serial one (7.98 ms against 0.236 ms with `GOMP_SPINCOUNT=1000`, measured on
a busy 2-core machine). So on a busy machine, unless the user chose a wait policy, the bench
run makes idle threads sleep soon; either way its report says the machine was busy.
"""

from __future__ import annotations

import os

# What libgomp reads when it loads; set only where the user set neither.
POLICY_VARIABLES = ("GOMP_SPINCOUNT", "OMP_WAIT_POLICY")
BUSY_SPINCOUNT = "1000"


def machine_load() -> tuple[float, int] | None:
    """The 1-minute load average and the cores this process may use; None where unknown."""
    try:
        load = os.getloadavg()[0]
    except (AttributeError, OSError):
        return None
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:
        cores = os.cpu_count() or 1
    return load, cores


def prepare_for_bench() -> str | None:
    """Call before the kernel's OpenMP runtime loads. On a busy machine (a load average of at
    least one runnable thread per core), set `GOMP_SPINCOUNT=1000` unless the user chose a
    wait policy, and return a note for the bench report; on a quiet one, None."""
    measured = machine_load()
    if measured is None:
        return None
    load, cores = measured
    if load < cores:
        return None
    busy = f"the machine is busy (load average {load:.1f} on {cores} cores)"
    chosen = [name for name in POLICY_VARIABLES if os.environ.get(name)]
    if chosen:
        return f"{busy}, and {chosen[0]} is set as you chose: times may vary"
    os.environ["GOMP_SPINCOUNT"] = BUSY_SPINCOUNT
    return (
        f"{busy}: idle OpenMP threads sleep soon (GOMP_SPINCOUNT={BUSY_SPINCOUNT}) rather "
        "than spin; times may vary"
    )

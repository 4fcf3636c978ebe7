"""Where candidates are built and timed: `--workers local[:K]` or `--workers ray[:ADDRESS]`.

Local: a pool of K candidate processes on this machine (tirc.tune.measure.LocalRunner). Ray:
one Ray task per candidate, anywhere on the cluster (ray.init(ADDRESS), or a Ray instance
started here without one). The task runs the candidate as the local pool does, in a process
of its own with the timeout, so a crash or a hang is the candidate's status; builds run on
every CPU the cluster has, but a built candidate waits for its machine's timing lock (one
file lock per machine, and per GPU there) before it is timed: one timing at a time per
machine, as locally. Ray is an optional extra (`pip install 'tirc[ray]'`).
"""

from __future__ import annotations

import fcntl
import functools
import os
import socket
import tempfile
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Protocol

from tirc.diagnostics import DiagnosticError, Note
from tirc.tune.measure import CRASH, Gpu, Job, LocalRunner, Reference, Result, probe_gpu
from tirc.tune.task import Task, cpu_count

if TYPE_CHECKING:
    from tirc.runtime.cuda_driver import Device

RAY_INSTALL = "pip install 'tirc[ray]'"
GPU_SHARE = 0.25  # of a GPU each CUDA candidate's Ray task asks for: 4 build at once per GPU


@dataclass(frozen=True)
class Workers:
    """A parsed --workers: `local` with a process count, or `ray` with a cluster address
    (None: start a Ray instance on this machine)."""

    kind: str
    count: int = 1
    address: str | None = None


def parse_workers(spec: str | None) -> Workers:
    """`local`, `local:K` (K processes; default: this machine's cores), `ray` or
    `ray:ADDRESS`."""
    if spec is None or spec == "local":
        return Workers("local", cpu_count())
    kind, colon, rest = spec.partition(":")
    if kind == "local" and rest.isdigit() and int(rest) >= 1:
        return Workers("local", int(rest))
    if kind == "ray" and (rest or not colon):
        import_ray()  # missing: said now, not after the reference is computed
        return Workers("ray", address=rest or None)
    raise DiagnosticError.at(
        None,
        f"bad --workers '{spec}'",
        Note("expected local, local:K with K >= 1, ray, or ray:ADDRESS (a Ray cluster)"),
    )


class Runner(Protocol):
    """What the tuning loop measures a batch with."""

    parallelism: int  # candidates measured at once, for the size of a batch
    gpu: Gpu | None
    description: str  # where candidates are measured, for a note

    def find_gpu(self, open_device: Callable[[], Device]) -> Gpu | str: ...

    def run(self, jobs: Sequence[Job]) -> list[Result]: ...

    def close(self) -> None: ...


def make_runner(workers: Workers, task: Task, reference: Reference, timeout: float) -> Runner:
    if workers.kind == "ray":
        return RayRunner(workers.address, task, reference, timeout)
    return LocalRunner(task, reference, workers.count, timeout)


def import_ray() -> Any:
    """The ray module, or a DiagnosticError naming the extra that brings it."""
    try:
        import ray  # deferred: an optional extra, imported only for --workers ray
    except ImportError:
        raise DiagnosticError.at(
            None,
            "--workers ray needs Ray, which is not installed",
            Note(f"install it: {RAY_INSTALL}; or use --workers local:K"),
        ) from None
    return ray


class RayRunner:
    """One Ray task per candidate on a Ray cluster (`--workers ray[:ADDRESS]`)."""

    def __init__(self, address: str | None, task: Task, reference: Reference, timeout: float):
        ray = import_ray()
        self.ray, self.task, self.timeout = ray, task, timeout
        self.started = not ray.is_initialized()
        if self.started:
            if address is not None:
                check_reachable(address)
            try:
                ray.init(
                    address=address,
                    include_dashboard=False,
                    log_to_driver=False,
                    logging_level="ERROR",
                )
            except Exception as error:  # no cluster at the address, a version mismatch...
                what = f"connect to the Ray cluster at {address}" if address else "start Ray"
                raise DiagnosticError.at(
                    None,
                    f"--workers ray: cannot {what}: {str(error).strip()[:500]}",
                    Note("start a cluster with `ray start --head` (docs/tune.md, Workers)"),
                ) from None
        resources = ray.cluster_resources()
        self.parallelism = max(int(resources.get("CPU", 1)), 1)
        self.gpus = int(resources.get("GPU", 0))
        if not self.started:
            where = "the Ray instance this process had started"
        else:
            where = f"the Ray cluster at {address}" if address else "a Ray instance started here"
        counts = f"{_count(self.parallelism, 'CPU')}, {_count(self.gpus, 'GPU')}"
        self.description = f"Ray tasks on {where} ({counts})"
        self.gpu: Gpu | None = None
        with open(reference.path, "rb") as file:  # the nodes do not share this machine's files
            self.reference = (ray.put(file.read()), replace(reference, path=""))
        self.measure = ray.remote(_measure_on_node)

    def find_gpu(self, open_device: Callable[[], Device]) -> Gpu | str:
        """The GPU of a node that has one, opened by a Ray task there."""
        if not self.gpus:
            return "the Ray cluster has no GPU"
        probe = self.ray.remote(probe_gpu).options(num_cpus=1, num_gpus=1)
        try:
            found: Gpu | str = self.ray.get(probe.remote(open_device, self.timeout))
        except Exception as error:  # the task itself failed: a node lost, say
            return f"the probe's Ray task failed: {str(error).strip()[:300]}"
        self.gpu = found if isinstance(found, Gpu) else None
        return found

    def run(self, jobs: Sequence[Job]) -> list[Result]:
        options: dict[str, Any] = {"num_cpus": 1, "max_retries": 0}
        if self.gpu is not None:
            options["num_gpus"] = GPU_SHARE
        data, reference = self.reference
        remote = self.measure.options(**options)
        pending = [
            remote.remote(self.task, data, reference, job, self.timeout, self.gpu) for job in jobs
        ]
        results = []
        for ref in pending:
            try:
                results.append(self.ray.get(ref))
            except Exception as error:  # the task's worker died, or its node
                message = f"the candidate's Ray task failed: {str(error).strip()[:1500]}"
                results.append(Result(CRASH, message=message))
        return results

    def close(self) -> None:
        if self.started:
            self.ray.shutdown()


def _measure_on_node(
    task: Task, data: bytes, reference: Reference, job: Job, timeout: float, gpu: Gpu | None
) -> Result:
    """A Ray task: the candidate measured as the local pool measures it, timed in its turn on
    this machine (and its GPU, for CUDA)."""
    with tempfile.TemporaryDirectory(prefix="tirc-ray-") as directory:
        path = os.path.join(directory, "reference.npz")
        with open(path, "wb") as file:
            file.write(data)
        which = f"gpu{os.environ.get('CUDA_VISIBLE_DEVICES', '')}" if gpu else "cpu"
        runner = LocalRunner(
            task,
            replace(reference, path=path),
            1,
            timeout,
            gpu,
            turn=functools.partial(machine_turn, which),
        )
        (result,) = runner.run([job])
    return result


def check_reachable(address: str, seconds: float = 10.0) -> None:
    """A located error where HOST:PORT (or ray://HOST:PORT) takes no connection: ray.init
    retries such an address for minutes. Other spellings (auto) are Ray's to resolve."""
    host, colon, port = address.removeprefix("ray://").rpartition(":")
    if not colon or not port.isdigit():
        return
    try:
        socket.create_connection((host, int(port)), timeout=seconds).close()
    except OSError as error:
        raise DiagnosticError.at(
            None,
            f"--workers ray: no Ray cluster answers at {address} ({error})",
            Note("start one with `ray start --head` there (docs/tune.md, Workers)"),
        ) from None


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}{'' if number == 1 else 's'}"


@contextmanager
def machine_turn(which: str) -> Iterator[None]:
    """Holds this machine's timing lock for `which` (cpu, or one GPU): a file lock, so that
    every process here, from any Ray worker or node on the machine, takes turns."""
    path = os.path.join(tempfile.gettempdir(), f"tirc-timer-{which}.lock")
    with open(path, "a") as file:
        fcntl.flock(file, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(file, fcntl.LOCK_UN)

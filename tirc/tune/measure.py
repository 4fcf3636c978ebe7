"""Building, checking and timing candidates, each in a process of its own with a timeout.

A candidate's process replays its plan (read back from the JSON the user will commit),
compiles it through the driver's JIT, runs it once on the reference inputs and compares the
outputs with the reference's (the interpreter's on small programs, the unscheduled program
compiled for the CPU on large ones), and only then times it: one warm-up, then the median of
repeated calls. Up to `workers` candidates build at once; a built candidate waits for its
turn to be timed, one at a time, and the timeout counts the build and the timing, not the
wait. A candidate whose checked run is over ten times slower than the best so far keeps
that run as its time. With `--threads 1` the time is the thread's CPU time (a shared
machine's load hardly moves it), with more threads the wall clock. A crash, a hang or an
exception is the candidate's status, never the tuner's.

For CUDA with a GPU (`probe_gpu` opened one), a candidate is built for it (PTX, and a cubin
where ptxas is installed) and, in its turn, run once and checked, then timed as `tirc run
--bench` times: the calls queued behind a spinning kernel, each between two CUDA events, the
median taken. Without a GPU, a candidate is built (CUDA C, compiled by nvcc where it is
installed, so ptxas checks it) and, for the first few, run in the interpreter.
"""

from __future__ import annotations

import multiprocessing
import os
import shutil
import statistics
import subprocess
import tempfile
import time
import traceback
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, ExitStack
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from tirc.analysis.well_formed import verify_module
from tirc.codegen.cuda import emit_cuda
from tirc.diagnostics import DiagnosticError, Severity
from tirc.driver.lower import lower_module
from tirc.driver.run import npz_bytes
from tirc.driver.run_cpu import compare, jit_function
from tirc.driver.run_cuda import module_image, pick_arch
from tirc.interp import random_inputs
from tirc.interp import run as interpret
from tirc.ir.target import DEFAULT_CUDA_ARCH
from tirc.runtime.cuda_module import call_on_device
from tirc.runtime.jit import aligned_copy
from tirc.runtime.throughput import count_flops
from tirc.schedule.apply import apply_plan
from tirc.schedule.plan import read_plan
from tirc.transform import default_pipeline, run_pipeline
from tirc.tune.task import Task, iteration_count

if TYPE_CHECKING:
    from tirc.runtime.cuda_driver import Device

INTERP_LIMIT = 2_000_000  # iterations above which the reference is compiled, not interpreted
OK, WRONG, BUILD_ERROR, RUN_ERROR, TIMEOUT, CRASH, BUILT = (
    "ok",
    "wrong",
    "build-error",
    "run-error",
    "timeout",
    "crash",
    "built",
)


@dataclass
class Result:
    status: str
    seconds: float | None = None  # the median time of a call (CPU), None if not timed
    message: str = ""
    build_seconds: float = 0.0


@dataclass
class Reference:
    path: str  # an .npz of the inputs ("in:NAME") and the expected outputs ("out:NAME")
    flops: int | None
    nbytes: int
    source: str  # "interpreter" or "unscheduled program compiled for the CPU"


@dataclass(frozen=True)
class Gpu:
    """The GPU that candidates are timed on: how a candidate's process opens it (picklable:
    tirc.runtime.cuda_driver.Device, or a test's fake), and what `probe_gpu` found."""

    open: Callable[[], Device]
    arch: str  # the device's, e.g. sm_90
    load_ptx: bool  # the driver is handed PTX rather than a cubin


@dataclass
class Job:
    plan_json: str
    interpret: bool = False  # CUDA without a GPU: also run it in the interpreter
    best: float | None = None  # the best median so far: a far slower candidate is not timed


# Candidates start from a fork server, a clean process, not from a fork of the caller: a
# caller with threads (OpenMP's pool once a parallel kernel ran, a test runner's) leaves locks
# held in a plain fork's child, which then hangs. The server preloads nothing: Python 3.11's
# imports there with its own sys.path, whose '' lets a `tirc/` folder in the working
# directory hide the package; a child imports tirc after taking the caller's sys.path.
_CONTEXT = multiprocessing.get_context("forkserver")
_CONTEXT.set_forkserver_preload([])


def _worker_setup(task: Task) -> None:
    """In a fresh candidate process: the OpenMP thread count before libgomp loads."""
    if task.threads:
        os.environ["OMP_NUM_THREADS"] = str(task.threads)
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


def _in_process(
    function: Callable[..., Any], args: tuple[Any, ...], timeout: float
) -> tuple[str, Any]:
    """function(*args) in a process of its own: ("ok", value), ("error", text), ("timeout", None)
    or ("crash", exit code)."""
    receiver, sender = _CONTEXT.Pipe(duplex=False)
    process = _CONTEXT.Process(target=_child, args=(function, args, sender), daemon=True)
    process.start()
    sender.close()
    return _collect(process, receiver, time.monotonic() + timeout)


def _child(function: Callable[..., Any], args: tuple[Any, ...], sender: Connection) -> None:
    try:
        value = ("ok", function(*args))
    except BaseException as error:  # the candidate's failure, reported, not raised
        value = ("error", _describe(error))
    sender.send(value)
    sender.close()


def _describe(error: BaseException) -> str:
    if isinstance(error, DiagnosticError):
        return "; ".join(d.message for d in error.diagnostics)[:2000]
    lines = traceback.format_exception_only(type(error), error)
    return "".join(lines).strip()[:2000]


def _collect(process: Any, receiver: Connection, deadline: float) -> tuple[str, Any]:
    try:
        if receiver.poll(max(deadline - time.monotonic(), 0)):
            try:
                outcome: tuple[str, Any] = receiver.recv()
                return outcome
            except EOFError:
                pass
        else:
            process.kill()
            process.join()
            return ("timeout", None)
        process.join()
        return ("crash", process.exitcode)
    finally:
        receiver.close()
        if process.is_alive():
            process.kill()
        process.join()


# -- the reference ---------------------------------------------------------------------------


def make_reference(
    task: Task, directory: str, timeout: float, interp_limit: int = INTERP_LIMIT
) -> Reference:
    """Inputs and expected outputs for checking candidates, computed in a child process (so
    that this one never loads OpenMP before a candidate chooses its thread count): by the
    interpreter up to `interp_limit` iterations, else by the unscheduled program compiled."""
    path = os.path.join(directory, "reference.npz")
    status, value = _in_process(_reference, (task, path, interp_limit), timeout)
    if status != "ok":
        reason = value if status == "error" else f"{status} ({value})"
        raise DiagnosticError.at(
            None, f"cannot compute the reference result of {task.func}: {reason}"
        )
    flops, nbytes, source = value
    return Reference(path, flops, nbytes, source)


def _reference(task: Task, path: str, interp_limit: int) -> tuple[int | None, int, str]:
    _worker_setup(task)
    module = task.parse()
    func = module[task.func]
    inputs = random_inputs(func, seed=0)
    arrays = {k: np.array(v, copy=True) for k, v in inputs.items() if isinstance(v, np.ndarray)}
    work = iteration_count(func)
    outputs = {k: np.array(v, copy=True) for k, v in inputs.items()}
    if work is not None and work <= interp_limit:
        interpret(func, outputs, module=module)
        source = "interpreter"
    else:
        call = _jit(module, task)
        status = call(outputs)
        if status != 0:
            raise RuntimeError(f"the unscheduled program returned {status}")
        source = "unscheduled program compiled for the CPU"
    saved = {f"in:{k}": v for k, v in arrays.items()}
    saved.update({f"out:{k}": np.asarray(v) for k, v in outputs.items() if k in arrays})
    # npz keeps numpy's own dtypes only: bfloat16 comes back as 2 bytes of void without this
    saved.update({f"dtype:{k}": np.array(str(v.dtype)) for k, v in arrays.items()})
    Path(path).write_bytes(npz_bytes(saved))
    return _flops(module, task), sum(a.nbytes for a in arrays.values()), source


def _flops(module: Any, task: Task) -> int | None:
    try:
        lowered = run_pipeline(module, default_pipeline("cpu").passes)
    except Exception:  # a program only CUDA lowers: no count
        return None
    return count_flops(lowered[task.func]) if task.func in lowered else None


def _load(path: str) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    with np.load(path) as data:
        dtypes = {k[6:]: np.dtype(str(data[k])) for k in data.files if k.startswith("dtype:")}
        inputs = {k[3:]: data[k] for k in data.files if k.startswith("in:")}
        outputs = {k[4:]: data[k] for k in data.files if k.startswith("out:")}
    inputs = {k: v.view(dtypes[k]) if k in dtypes else v for k, v in inputs.items()}
    outputs = {k: v.view(dtypes[k]) if k in dtypes else v for k, v in outputs.items()}
    return inputs, outputs


def _jit(module: Any, task: Task) -> Callable[[dict[str, Any]], int | float]:
    """The function compiled for the task's CPU target (for the host, for a CUDA task's
    reference)."""
    return jit_function(module, task.func, task.target if task.kind == "cpu" else "cpu")


def probe_gpu(open_device: Callable[[], Device], timeout: float) -> Gpu | str:
    """The GPU `open_device` opens, tried in a child process (this one keeps no CUDA context),
    or why there is none (no cuda-python, no driver, no device)."""
    status, value = _in_process(_probe, (open_device,), timeout)
    if status == "ok":
        arch, load_ptx = value
        return Gpu(open_device, arch, load_ptx)
    return str(value) if status == "error" else f"the probe ended: {status} ({value})"


def _probe(open_device: Callable[[], Device]) -> tuple[str, bool]:
    device = open_device()
    return device.arch, device.load_ptx


# -- one candidate ---------------------------------------------------------------------------


def _scheduled(task: Task, plan_json: str) -> Any:
    module, _ = apply_plan(task.parse(), read_plan(plan_json, "<candidate>"))
    errors = [d for d in verify_module(module) if d.severity is Severity.ERROR]
    if errors:
        raise DiagnosticError(errors)
    return module


SLOWER = 10.0  # a checked run this many times slower than the best is not timed further
MIN_TIME = 0.1  # seconds of repeated calls to time (at least MIN_REPEATS of them)
MIN_REPEATS = 3
LONG_RUN = 1.0  # seconds: a run this long is timed once (the program as written, often)


def _measure_cpu(
    task: Task, job: Job, reference: Reference, gpu: Gpu | None, channel: Connection
) -> Result:
    _worker_setup(task)
    started = time.perf_counter()
    try:
        module = _scheduled(task, job.plan_json)
        call = _jit(module, task)
    except Exception as error:
        return Result(BUILD_ERROR, message=_describe(error))
    built = time.perf_counter() - started
    inputs, expected = _load(reference.path)
    args: dict[str, Any] = {k: aligned_copy(v) for k, v in inputs.items()}
    channel.send(("ready", None))
    channel.recv()  # our turn: nothing else is timed now
    # One thread: the thread's CPU time, which the other work of a shared machine disturbs far
    # less than the wall clock; several: the wall clock (CPU time would add up the threads).
    clock = time.thread_time if task.threads == 1 else time.perf_counter
    begin = clock()
    status = call(args)  # also the warm-up
    first = clock() - begin
    if status != 0:
        return Result(RUN_ERROR, message=f"returned {status}", build_seconds=built)
    problems = compare(module[task.func], args, expected, label="candidate")
    if problems:
        return Result(WRONG, message="; ".join(problems)[:2000], build_seconds=built)
    if job.best is not None and first > SLOWER * job.best:
        return Result(OK, first, "timed once: far slower than the best", built)
    if first > LONG_RUN:
        return Result(OK, first, "timed once: a long run", built)
    samples: list[float] = []
    started = time.perf_counter()
    while len(samples) < MIN_REPEATS or time.perf_counter() - started < MIN_TIME:
        begin = clock()
        call(args)
        samples.append(clock() - begin)
    return Result(OK, statistics.median(samples), build_seconds=built)


def _measure_cuda(
    task: Task, job: Job, reference: Reference, gpu: Gpu | None, channel: Connection
) -> Result:
    if gpu is not None:
        return _measure_on_gpu(task, job, reference, gpu, channel)

    started = time.perf_counter()
    try:
        module = _scheduled(task, job.plan_json)
        lowered = run_pipeline(module, default_pipeline("cuda").passes)
        source = emit_cuda(lowered)
        problem = _compile_cuda(source, task.target.arch or DEFAULT_CUDA_ARCH)
    except Exception as error:
        return Result(BUILD_ERROR, message=_describe(error))
    built = time.perf_counter() - started
    if problem:
        return Result(BUILD_ERROR, message=problem, build_seconds=built)
    if not job.interpret:
        return Result(BUILT, build_seconds=built)

    inputs, expected = _load(reference.path)
    args: dict[str, Any] = {k: np.array(v, copy=True) for k, v in inputs.items()}
    try:
        interpret(module[task.func], args, module=module, gpu_model="auto")
    except Exception as error:
        return Result(RUN_ERROR, message=_describe(error), build_seconds=built)
    problems = compare(module[task.func], args, expected, label="candidate")
    if problems:
        return Result(WRONG, message="; ".join(problems)[:2000], build_seconds=built)
    return Result(BUILT, message="matches in the interpreter", build_seconds=built)


GPU_REPEATS = 20  # timed calls of a candidate on the GPU (tirc run --bench's count)


def _measure_on_gpu(
    task: Task, job: Job, reference: Reference, gpu: Gpu, channel: Connection
) -> Result:
    """Built for the GPU's architecture here, in parallel with other candidates; opened, run,
    checked and timed in this candidate's turn, so that one candidate at a time uses the GPU."""
    started = time.perf_counter()
    try:
        module = _scheduled(task, job.plan_json)
        lowered = lower_module(module, target=task.target, for_backend=True)
        image = module_image(lowered, pick_arch(task.target, gpu.arch), ptx=gpu.load_ptx)
    except Exception as error:
        return Result(BUILD_ERROR, message=_describe(error))
    built = time.perf_counter() - started
    inputs, expected = _load(reference.path)
    channel.send(("ready", None))
    channel.recv()  # our turn: no other candidate uses the GPU now
    try:
        device = gpu.open()
        args: dict[str, Any] = {k: np.array(v, copy=True) for k, v in inputs.items()}
        first, _ = call_on_device(device, lowered, image, task.func, args)
        problems = compare(module[task.func], args, expected, label="candidate")
        if problems:
            return Result(WRONG, message="; ".join(problems)[:2000], build_seconds=built)
        # a fresh copy of the inputs: the timed calls start from the state the checked one
        # started from (a kernel that accumulates into its output, say)
        args = {k: np.array(v, copy=True) for k, v in inputs.items()}
        repeats = MIN_REPEATS if first > LONG_RUN else GPU_REPEATS  # a long call: a few
        _, timing = call_on_device(
            device, lowered, image, task.func, args, bench=True, repeats=repeats
        )
    except Exception as error:
        return Result(RUN_ERROR, message=_describe(error), build_seconds=built)
    assert timing is not None  # bench=True times
    return Result(OK, timing.median, f"timed by {timing.clock}", built)


def _compile_cuda(source: str, arch: str) -> str:
    """What nvcc says against the CUDA C compiled for `arch` (to an object: ptxas runs too),
    or ''."""
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        return ""
    with tempfile.TemporaryDirectory(prefix="tirc-tune-") as directory:
        path = os.path.join(directory, "kernel.cu")
        with open(path, "w") as file:
            file.write(source)
        command = [nvcc, "-c", f"-arch={arch}", "-o", os.path.join(directory, "k.o"), path]
        done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    return "" if done.returncode == 0 else f"nvcc: {done.stderr.strip()[:1500]}"


# -- many candidates -------------------------------------------------------------------------


@dataclass
class _Running:
    index: int
    process: Any
    channel: Connection
    deadline: float
    ready: bool = False  # built and waiting for its turn to be timed


class LocalRunner:
    """A pool of candidate processes on this machine (`--workers local:K`).

    `gpu` is the GPU that CUDA candidates are timed on (None: built and checked only);
    `turn`, where given, is taken before a built candidate is timed and given back when it
    ends (a Ray task's hold on its machine: tirc/tune/workers.py)."""

    def __init__(
        self,
        task: Task,
        reference: Reference,
        workers: int,
        timeout: float,
        gpu: Gpu | None = None,
        turn: Callable[[], AbstractContextManager[object]] | None = None,
    ):
        self.task, self.reference, self.gpu, self.turn = task, reference, gpu, turn
        self.workers, self.timeout = max(workers, 1), timeout
        self.parallelism = self.workers
        self.description = f"{self.workers} processes on this machine"

    def find_gpu(self, open_device: Callable[[], Device]) -> Gpu | str:
        """The GPU to time CUDA candidates on, opened in a child process here, or why not."""
        found = probe_gpu(open_device, self.timeout)
        self.gpu = found if isinstance(found, Gpu) else None
        return found

    def close(self) -> None:
        pass

    def run(self, jobs: Sequence[Job]) -> list[Result]:
        results: list[Result | None] = [None] * len(jobs)
        pending = list(enumerate(jobs))
        running: list[_Running] = []
        timing: _Running | None = None
        with ExitStack() as held:  # the turn, while a candidate is timed
            while pending or running:
                while pending and len(running) < self.workers:
                    index, job = pending.pop(0)
                    running.append(self._start(index, job))
                if timing is None:
                    timing = next((r for r in running if r.ready), None)
                    if timing is not None:
                        if self.turn is not None:
                            held.enter_context(self.turn())
                        timing.channel.send("go")
                        timing.deadline = time.monotonic() + self.timeout
                running, ended = _poll(running, results)
                if any(item is timing for item in ended):
                    timing = None
                    held.close()
        return [r if r is not None else Result(CRASH) for r in results]

    def _start(self, index: int, job: Job) -> _Running:
        function = _measure_cuda if self.task.kind == "cuda" else _measure_cpu
        parent, child = _CONTEXT.Pipe(duplex=True)
        process = _CONTEXT.Process(
            target=_serve,
            args=(function, (self.task, job, self.reference, self.gpu), child),
            daemon=True,
        )
        process.start()
        child.close()
        return _Running(index, process, parent, time.monotonic() + self.timeout)


def _poll(
    running: list[_Running], results: list[Result | None]
) -> tuple[list[_Running], list[_Running]]:
    """Waits up to half a second for news from the candidates: those still running, and
    those that ended (their results put in `results`)."""
    ready = wait([r.channel for r in running], timeout=0.5)
    still: list[_Running] = []
    ended: list[_Running] = []
    for item in running:
        if item.channel in ready and not item.ready:
            message = _receive(item.channel)
            if message is not None and message[0] == "ready":
                item.ready = True
                item.deadline = float("inf")  # waiting its turn is not its fault
                still.append(item)
                continue
            results[item.index] = _as_result(message or ("crash", _exit(item.process)))
        elif item.channel in ready or time.monotonic() > item.deadline:
            outcome = _collect(item.process, item.channel, item.deadline)
            results[item.index] = _as_result(outcome)
        else:
            still.append(item)
            continue
        _stop(item.process)
        ended.append(item)
    return still, ended


def _serve(function: Callable[..., Any], args: tuple[Any, ...], channel: Connection) -> None:
    try:
        value = ("ok", function(*args, channel))
    except BaseException as error:  # the candidate's failure, reported, not raised
        value = ("error", _describe(error))
    channel.send(value)
    channel.close()


def _receive(channel: Connection) -> Any:
    try:
        return channel.recv()
    except (EOFError, OSError):
        return None


def _exit(process: Any) -> int | None:
    process.join(1)
    code: int | None = process.exitcode
    return code


def _stop(process: Any) -> None:
    if process.is_alive():
        process.kill()
    process.join()


def _as_result(outcome: tuple[str, Any]) -> Result:
    status, value = outcome
    if status == "ok":
        assert isinstance(value, Result)
        return value
    if status == "error":
        return Result(CRASH, message=str(value))
    if status == "timeout":
        return Result(TIMEOUT, message="ran past the timeout")
    return Result(CRASH, message=f"the candidate's process died (exit code {value})")

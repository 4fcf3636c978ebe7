"""`tirc run`: execute one function of a file on given or random inputs, save the buffers.

Inputs come from an npz keyed by parameter name (buffer parameters, outputs' initial contents
included; scalars as 0-d arrays); what is not given is drawn at random from the seed. The
function runs in the interpreter (`interp`) or compiled for this CPU (`cpu`, `cpu -mcpu=...`),
where `--check` compares it with the interpreter and `--bench` times it.
"""

from __future__ import annotations

import io
import sys
import time
from collections.abc import Mapping

import numpy as np

from tirc.diagnostics import DiagnosticError, Note
from tirc.driver.exit_code import ExitCode
from tirc.driver.output import STDOUT, write_output
from tirc.driver.progress import Meter, meter_for
from tirc.driver.source import read_source
from tirc.ir.buffer import Buffer
from tirc.ir.expr import Var
from tirc.ir.function import IRModule, PrimFunc

TARGETS_AVAILABLE = ("interp", "cpu", "cuda")


def run_file(
    path: str,
    *,
    target: str,
    func: str | None,
    inputs: str | None,
    save: str | None,
    seed: int,
    defines: Mapping[str, str],
    plan: str | None = None,
    check: bool = False,
    bench: bool = False,
    opt_level: int = 3,
    gpu_model: str = "threads",
) -> int:
    """Runs `func` (default: the only function, or `main`) of the file at `path`, scheduled
    by `plan`; writes every buffer parameter to `save` (an npz, atomically) and prints a
    summary. Returns 0; a failed `check` is a DiagnosticError. `gpu_model` is how the
    interpreter runs GPU kernels (tirc.interp.lockstep.GPU_MODELS)."""
    kind = target.split()[0] if target.split() else ""
    if kind == "llvm":
        kind = "cpu"
    if kind not in TARGETS_AVAILABLE:
        import difflib

        close = difflib.get_close_matches(kind, TARGETS_AVAILABLE, n=1)
        raise DiagnosticError.at(
            None,
            f"target {target} is not available yet (available: {', '.join(TARGETS_AVAILABLE)})",
            *([Note(f"did you mean '{close[0]}'?")] if close else []),
        )
    if check and kind == "interp":
        raise DiagnosticError.at(
            None,
            "--check compares a compiled target with the interpreter; give --target cpu or cuda",
        )
    # with --bench (which takes a while) a transient progress line on a terminal's stderr
    meter = meter_for() if bench else Meter(None)
    from tirc.interp.lockstep import gpu_model as model

    with meter, model(gpu_model):
        name, function, args, given, elapsed, notes = _execute(
            path, target, kind, func, inputs, seed, defines, plan, check, bench, opt_level, meter
        )
    buffers = {
        param.name: args[param.name]
        for param in function.params
        if _buffer_of(function, param) is not None
    }
    if save is not None:
        write_output(save, npz_bytes(buffers))  # type: ignore[arg-type]
    # with `--save -` the npz goes to stdout, so the summary goes to stderr
    stream = sys.stderr if save == STDOUT else sys.stdout
    print(summary(name, target, elapsed, function, args, given, save), file=stream)
    for note in notes:
        print(note, file=stream)
    return ExitCode.OK


def _execute(
    path: str,
    target: str,
    kind: str,
    func: str | None,
    inputs: str | None,
    seed: int,
    defines: Mapping[str, str],
    plan: str | None,
    check: bool,
    bench: bool,
    opt_level: int,
    meter: Meter,
) -> tuple[str, PrimFunc, dict[str, np.ndarray | int], dict[str, np.ndarray], float, list[str]]:
    """Parses, schedules and runs the function on `kind`: its name, the function, the
    arguments after the run, the inputs given, the seconds of the run and the bench notes."""
    from tirc.driver.commands import parse_source

    meter.stage("parsing")
    module = parse_source(read_source(path), defines)
    original = module
    if plan is not None:
        from tirc.driver.schedule import apply_plan_file

        meter.stage("applying the plan")
        module, _ = apply_plan_file(module, plan)
    name, function = pick_function(module, func)
    given = load_inputs(inputs) if inputs is not None else {}
    args = complete_arguments(function, given, seed, inputs or "")
    reference = {key: np.array(value, copy=True) for key, value in args.items()} if check else None
    notes: list[str] = []

    if kind == "interp":
        from tirc.interp import run

        meter.stage(f"running {name} in the interpreter")
        start = time.perf_counter()
        run(function, args, module=module)
        elapsed = time.perf_counter() - start
        if bench:
            from tirc.driver.run_cpu import bench as time_calls

            snapshot = {key: np.array(value, copy=True) for key, value in args.items()}
            meter.stage(f"timing {name} in the interpreter", total=1.0)
            timing = time_calls(
                lambda: run(function, dict(snapshot), module=module), 0.5, 20, meter
            )
            notes.append(f"bench: {timing.describe(None, _buffer_bytes(args))}")
    elif kind == "cuda":
        from tirc.driver.run_cuda import run_cuda_target

        meter.stage(f"compiling and running {name} on {target}")
        elapsed = run_cuda_target(
            module,
            original,
            name,
            function,
            target,
            args,
            reference,
            bench,
            notes,
            lambda values: _interpret(module, function, values),
        )
    else:
        elapsed = _run_on_cpu(
            module, name, function, target, args, reference, bench, opt_level, notes, meter
        )
    return name, function, args, given, elapsed, notes


def _run_on_cpu(
    module: IRModule,
    name: str,
    function: PrimFunc,
    target: str,
    args: dict[str, np.ndarray | int],
    reference: dict[str, np.ndarray] | None,
    bench: bool,
    opt_level: int,
    notes: list[str],
    meter: Meter,
) -> float:
    """Compiles and calls the function on `args`; checks and times it as asked."""
    from tirc.driver.run_cpu import bench as time_calls
    from tirc.driver.run_cpu import compare, jit_function

    meter.stage(f"compiling {name} for {target}")
    call = jit_function(module, name, target, opt_level)
    pristine = {key: np.array(value, copy=True) for key, value in args.items()} if bench else None
    meter.stage(f"running {name}")
    start = time.perf_counter()
    status = call(args)
    elapsed = time.perf_counter() - start
    if status != 0:
        raise DiagnosticError.at(None, f"{name} failed an assertion (it returned {status})")
    if reference is not None:
        from tirc.interp import run

        interp_args: dict[str, np.ndarray | int] = {
            key: (
                value.item()
                if value.ndim == 0 and _buffer_of(function, _param(function, key)) is None
                else value
            )
            for key, value in reference.items()
        }
        meter.stage("checking against the interpreter")
        run(function, interp_args, module=module)
        problems = compare(function, args, interp_args)
        if problems:
            raise DiagnosticError.at(
                None, "the compiled code differs from the interpreter: " + "; ".join(problems)
            )
        notes.append("check: the compiled code agrees with the interpreter")
    if pristine is not None:
        from tirc.driver.lower import lower_module
        from tirc.runtime.jit import aligned_copy
        from tirc.runtime.throughput import count_flops

        # aligned as the ABI wants them, so that the calls timed copy nothing
        scratch = {key: aligned_copy(value) for key, value in pristine.items()}
        meter.stage(f"timing {name}", total=1.0)
        timing = time_calls(lambda: call(scratch), meter=meter)
        lowered = lower_module(module, target=target)[name]
        notes.append(f"bench: {timing.describe(count_flops(lowered), _buffer_bytes(args))}")
        meter.stage("timing a numpy copy of the buffers", total=1.0)
        notes.append(f"bench: {_numpy_baseline(function, args, timing.median, meter)}")
    return elapsed


def _interpret(module: IRModule, function: PrimFunc, values: dict[str, np.ndarray]) -> None:
    """Runs the function in the interpreter on `values` (scalars as Python numbers), in place."""
    from tirc.interp import run

    scalars = {
        key: value.item()
        for key, value in values.items()
        if value.ndim == 0 and _buffer_of(function, _param(function, key)) is None
    }
    arguments: dict[str, np.ndarray | int] = {**values, **scalars}
    run(function, arguments, module=module)
    values.update({key: value for key, value in arguments.items() if key not in scalars})


def _param(function: PrimFunc, name: str) -> Var:
    return next(p for p in function.params if p.name == name)


def _buffer_bytes(args: Mapping[str, object]) -> int:
    return sum(value.nbytes for value in args.values() if isinstance(value, np.ndarray))


def _numpy_baseline(
    function: PrimFunc, args: Mapping[str, object], median: float, meter: Meter | None = None
) -> str:
    """A copy of every argument through numpy, as a memory-bandwidth yardstick."""
    from tirc.driver.run_cpu import bench as time_calls

    arrays = [value for value in args.values() if isinstance(value, np.ndarray)]
    targets = [np.empty_like(a) for a in arrays]

    def copy_all() -> None:
        for source, target in zip(arrays, targets, strict=True):
            np.copyto(target, source)

    timing = time_calls(copy_all, meter=meter)
    return f"numpy copy of the same buffers takes {timing.median * 1e3:.4f} ms"


def pick_function(module: IRModule, name: str | None) -> tuple[str, PrimFunc]:
    names = module.names()
    if name is not None:
        if name not in module:
            raise DiagnosticError.at(
                None, f"no function '{name}' in the module (it has {', '.join(names)})"
            )
        return name, module[name]
    if len(names) == 1:
        return names[0], module[names[0]]
    if "main" in module:
        return "main", module["main"]
    raise DiagnosticError.at(
        None, f"the module has several functions ({', '.join(names)}); choose one with --func"
    )


def load_inputs(path: str) -> dict[str, np.ndarray]:
    try:
        with np.load(path, allow_pickle=False) as data:
            return {key: data[key] for key in data.files}
    except (OSError, ValueError) as error:
        raise DiagnosticError.at(None, f"cannot read inputs from '{path}': {error}") from None


def complete_arguments(
    func: PrimFunc, given: Mapping[str, np.ndarray], seed: int, source: str
) -> dict[str, np.ndarray | int]:
    """An argument per parameter: the given ones checked, the rest drawn at random."""
    from tirc.interp.inputs import random_argument
    from tirc.interp.memory import array_type
    from tirc.ir.expr import Var

    names = {param.name for param in func.params}
    buffer_names = {
        buffer.name: param.name for param, buffer in func.buffer_map if buffer.name not in names
    }
    unknown = [key for key in given if key not in names and key not in buffer_names]
    if unknown:
        raise DiagnosticError.at(
            None,
            f"'{source}' has arrays for {', '.join(sorted(unknown))}, "
            "which are not parameters of the "
            f"function (its parameters: {', '.join(p.name for p in func.params)})",
        )
    by_param = {buffer_names.get(key, key): value for key, value in given.items()}
    known: dict[str, int] = {}
    args: dict[str, np.ndarray | int] = {}
    for param in func.params:
        if param.name not in by_param:
            continue
        value = by_param[param.name]
        buffer = _buffer_of(func, param)
        if buffer is None:
            args[param.name] = value.item() if value.ndim == 0 else value
            if value.ndim == 0 and np.issubdtype(value.dtype, np.integer):
                known[param.name] = int(value)
            continue
        want = array_type(buffer.dtype)
        if value.dtype.kind == "V" and value.dtype.itemsize == want.itemsize:
            value = value.view(want)  # npz keeps bfloat16 and float8 as raw bytes
        if value.dtype != want:
            raise DiagnosticError.at(
                None,
                f"input {param.name} in '{source}' is {value.dtype}, "
                f"but {buffer.name} holds {buffer.dtype}",
            )
        if value.ndim != len(buffer.shape) + (1 if buffer.dtype.lanes > 1 else 0):
            raise DiagnosticError.at(
                None,
                f"input {param.name} in '{source}' has shape {value.shape}, "
                f"but {buffer.name} has {len(buffer.shape)} dimensions",
            )
        for extent, actual in zip(buffer.shape, value.shape, strict=False):
            if isinstance(extent, Var):
                known.setdefault(extent.name, int(actual))
        args[param.name] = np.array(value, copy=True)
    for index, param in enumerate(func.params):
        if param.name not in args:
            args[param.name] = random_argument(func, index, seed, known)
    return args


def npz_bytes(arrays: Mapping[str, np.ndarray]) -> bytes:
    stream = io.BytesIO()
    np.savez(stream, **arrays)  # type: ignore[arg-type]
    return stream.getvalue()


def summary(
    name: str,
    target: str,
    elapsed: float,
    func: PrimFunc,
    args: Mapping[str, object],
    given: Mapping[str, object],
    save: str | None,
) -> str:
    lines = [f"ran {name} on {target} in {elapsed:.3f} s"]
    for param in func.params:
        buffer = _buffer_of(func, param)
        value = args[param.name]
        origin = (
            "given"
            if param.name in given or (buffer is not None and buffer.name in given)
            else "random"
        )
        if buffer is not None and isinstance(value, np.ndarray):
            lines.append(f"  {param.name}: {buffer.dtype}{list(value.shape)} ({origin})")
        else:
            lines.append(f"  {param.name} = {value} ({origin})")
    if save is not None:
        lines.append(
            f"saved {sum(_buffer_of(func, p) is not None for p in func.params)} buffers to {save}"
        )
    return "\n".join(lines)


def _buffer_of(func: PrimFunc, param: Var) -> Buffer | None:
    """The buffer over a parameter: its buffer_map entry, or in a lowered function (make-c-abi)
    the buffer its body declares over the pointer."""
    from tirc.transform.passes.make_c_abi import parameter_buffers

    return parameter_buffers(func).get(param)

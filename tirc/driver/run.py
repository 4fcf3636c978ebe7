"""`tirc run`: execute one function of a file on given or random inputs, save the buffers.

Inputs come from an npz keyed by parameter name (buffer parameters, outputs' initial contents
included; scalars as 0-d arrays); what is not given is drawn at random from the seed, with
the sizes of symbolic shapes from `--size n=16` (or 0-d arrays named like the variables in
the npz): `tirc.driver.inputs`. The function runs in the interpreter (`interp`), compiled
for this CPU (`cpu`, `cpu -mcpu=...`) or on the GPU (`cuda`), where `--check` compares it
with the interpreter and `--bench` times it. The function run is the one named, else the
only one, else `main`, private or not.
"""

from __future__ import annotations

import dataclasses
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from tirc.diagnostics import DiagnosticError, Note, Span
from tirc.driver.compile_cuda import check_cuda_opt_level, check_ptx_via
from tirc.driver.entry_point import entry_point
from tirc.driver.exit_code import ExitCode
from tirc.driver.inputs import complete_arguments, load_inputs, npz_bytes
from tirc.driver.openmp_policy import prepare_for_bench
from tirc.driver.output import STDOUT, write_output
from tirc.driver.program import parse_source, verify_program
from tirc.driver.progress import Meter, meter_for
from tirc.driver.run_cpu import FLOAT_ATOL, FLOAT_RTOL, compare
from tirc.driver.run_cpu import bench as time_calls
from tirc.driver.source import read_source
from tirc.driver.target import parse_target
from tirc.ir.abi import is_kernel, parameter_buffers, returned_type
from tirc.ir.buffer import Buffer
from tirc.ir.expr import Var
from tirc.ir.function import IRModule, PrimFunc
from tirc.ir.functor import walk
from tirc.ir.node import Node
from tirc.ir.stmt import AllocBuffer, AttrStmt, DeclBuffer, For, ForKind, SBlock
from tirc.ir.target import Target
from tirc.runtime.throughput import Timing, moved_bytes, multiply_add_flops


@dataclass(frozen=True)
class Ran:
    """What a backend's run gives the summary: the seconds of the call, its timing with
    --bench (and the bytes and float operations of a call to say it in), notes before the
    check's and after the timing's, and the value the function returned."""

    elapsed: float
    timing: Timing | None = None
    flops: int | None = None
    first_notes: tuple[str, ...] = ()
    last_notes: tuple[str, ...] = ()
    moved: int = 0
    returned: object = None  # the value the function returned (T.ret); None: it returns none


@dataclass(frozen=True)
class CheckRule:
    """How `--check` compares a backend's results with the interpreter's, and says so."""

    label: str
    rtol: float
    atol: float
    relative_atol: bool
    differs: str
    agrees: str


# Tensor cores and GPU reductions add in their own order (and round products of 16-bit floats
# on the way), so the GPU's floats are compared relative to the largest value of the result.
GPU_RTOL = 1e-3
GPU_ATOL = 1e-5
CHECK_RULES = {
    "llvm": CheckRule(
        "cpu",
        FLOAT_RTOL,
        FLOAT_ATOL,
        False,
        "the compiled code differs from the interpreter",
        "the compiled code agrees with the interpreter",
    ),
    "cuda": CheckRule(
        "cuda",
        GPU_RTOL,
        GPU_ATOL,
        True,
        "the GPU's results differ from the interpreter's",
        f"the GPU agrees with the interpreter (floats within rtol {GPU_RTOL:g}, "
        f"atol {GPU_ATOL:g} x the largest magnitude)",
    ),
}


def run_file(
    path: str,
    *,
    target: Target | str = "interp",
    func: str | None = None,
    inputs: str | None = None,
    save: str | None = None,
    seed: int = 0,
    defines: Mapping[str, str] | None = None,
    plan: str | None = None,
    check: bool = False,
    bench: bool = False,
    opt_level: int | None = None,
    gpu_model: str | None = None,
    sizes: Mapping[str, int] | None = None,
    flops: int | None = None,
    ptx_via: str | None = None,
) -> int:
    """Runs `func` (default: the only function, or `main`) of the file at `path` on
    `target`, scheduled by `plan`, on inputs from `inputs` and random ones shaped by `sizes`
    (shape variables by name); writes every buffer parameter to `save` (an npz, atomically)
    and prints a summary. Returns 0; a failed `check` is a DiagnosticError. `opt_level` is
    LLVM's (default 3); `ptx_via` how CUDA's PTX is made (nvrtc or llvm; default NVRTC where
    cuda-python has it); `gpu_model` is how the interpreter runs GPU kernels
    (tirc.interp.lockstep GPU_MODELS; default threads). With `bench`, the timing is said as
    GB/s of the bytes the buffer parameters move (each read once, each written once) and,
    with `flops` (a call's float operations) or for a GEMM-like program (counted:
    tirc.runtime.throughput.multiply_add_flops), as TFLOP/s."""
    target = parse_target(target)
    check_run_options(
        target, check=check, opt_level=opt_level, gpu_model=gpu_model, ptx_via=ptx_via
    )
    if flops is not None and not bench:
        raise DiagnosticError.at(
            None, "--flops says what --bench divides by its time; add --bench, or drop --flops"
        )
    # with --bench (which takes a while) a transient progress line on a terminal's stderr
    meter = meter_for() if bench else Meter(None)
    # deferred: the interpreter (about a second), only when it runs
    from tirc.interp.lockstep.kernel import gpu_model as model

    with meter, model(gpu_model or "threads"):
        name, function, args, given, ran = _execute(
            path,
            target,
            func,
            inputs,
            seed,
            defines or {},
            plan,
            check,
            bench,
            opt_level,
            meter,
            sizes or {},
            flops,
            ptx_via,
            gpu_model,
        )
    buffers = {
        param.name: np.asarray(args[param.name])
        for param in function.params
        if _buffer_of(function, param) is not None
    }
    if save is not None:
        write_output(save, npz_bytes(buffers))
    # with `--save -` the npz goes to stdout, so the summary goes to stderr
    stream = sys.stderr if save == STDOUT else sys.stdout
    print(summary(name, str(target), ran.elapsed, function, args, given, save, sizes), file=stream)
    if ran.returned is not None:
        print(f"  returned {_value_text(ran.returned)} ({returned_type(function)})", file=stream)
    for note in ran.first_notes:
        print(note, file=stream)
    if ran.timing is not None:
        print(f"bench: {ran.timing.describe(ran.moved, ran.flops)}", file=stream)
    for note in ran.last_notes:
        print(note, file=stream)
    return ExitCode.OK


def check_run_options(
    target: Target,
    *,
    check: bool,
    opt_level: int | None,
    gpu_model: str | None,
    ptx_via: str | None = None,
) -> None:
    """A DiagnosticError for an option the target would not use."""
    if ptx_via is not None and target.backend != "cuda":
        raise DiagnosticError.at(
            None,
            f"--ptx-via {ptx_via} says how CUDA's PTX is made, but the target is {target}",
            Note("give --target cuda, or drop --ptx-via"),
        )
    check_ptx_via(ptx_via, "ptx")
    if check and target.backend == "interp":
        raise DiagnosticError.at(
            None,
            "--check compares a compiled target with the interpreter; give --target cpu or cuda",
        )
    if opt_level is not None and target.backend == "interp":
        raise DiagnosticError.at(
            None,
            f"-O {opt_level} is LLVM's optimization level, but --target interp compiles nothing",
            Note("give --target cpu or cuda, or drop -O"),
        )
    if opt_level is not None and target.backend == "cuda":
        check_cuda_opt_level(opt_level, ptx_via)
    if gpu_model is not None and target.backend != "interp" and not check:
        raise DiagnosticError.at(
            None,
            f"--gpu-model {gpu_model} says how the interpreter runs GPU kernels, but with "
            f"--target {target.name} the interpreter runs only for --check",
            Note("add --check, or drop --gpu-model"),
        )


def _execute(
    path: str,
    target: Target,
    func: str | None,
    inputs: str | None,
    seed: int,
    defines: Mapping[str, str],
    plan: str | None,
    check: bool,
    bench: bool,
    opt_level: int | None,
    meter: Meter,
    sizes: Mapping[str, int],
    flops: int | None = None,
    ptx_via: str | None = None,
    gpu_model: str | None = None,
) -> tuple[str, PrimFunc, dict[str, np.ndarray | int], dict[str, np.ndarray], Ran]:
    """Parses, verifies, schedules, runs the function on the target and checks it: its name,
    the function, the arguments after the run, the inputs given and what the run gave."""

    meter.stage("parsing")
    module = parse_source(read_source(path), defines)
    verify_program(module)
    original = module
    if plan is not None:
        # deferred: the schedule layer, only with a plan
        from tirc.driver.schedule import apply_plan_file

        meter.stage("applying the plan")
        module, _ = apply_plan_file(module, plan)
    name, function = pick_function(module, func)
    module, function = entry_point(module, name, function)
    given = load_inputs(inputs) if inputs is not None else {}
    args = complete_arguments(function, given, seed, inputs or "", sizes)
    compiled = None
    if target.backend == "llvm":
        # before the check's interpreter: a program the CPU cannot run (a GPU kernel) is
        # refused at once, not after the interpreter has run all its threads
        compiled = _compile_for_cpu(module, name, target, bench, opt_level, meter)
    reference: dict[str, np.ndarray] | None = None
    if check:
        # The interpreter first: a fault it finds (an index out of bounds, a division by
        # zero) is the check's answer, as a located error, before compiled code runs into it
        # and takes the process down.
        meter.stage("running the interpreter for the check")
        reference = {key: np.array(value, copy=True) for key, value in args.items()}
        checked, checked_function, why = _reference_program(module, name, function, original)
        fresh_inputs = {key: value.copy() for key, value in reference.items()}
        expected = _interpret(checked, checked_function, reference)
    if target.backend == "interp":
        ran = _run_in_interpreter(module, name, function, args, bench, meter)
        if gpu_model is not None and not _runs_gpu_threads(module, function):
            ran = dataclasses.replace(ran, last_notes=(_unused_gpu_model(gpu_model, name),))
    elif target.backend == "cuda":
        # deferred: the CUDA backend (half a second), only for --target cuda
        from tirc.driver.run_cuda import run_on_cuda

        meter.stage(f"compiling and running {name} on {target}")
        elapsed, timing, arch = run_on_cuda(
            module, name, function, target, args, bench=bench, opt_level=opt_level, via=ptx_via
        )
        ran = Ran(elapsed, timing, first_notes=(f"device: {arch}",))
    else:
        assert compiled is not None
        ran = _run_on_cpu(name, function, compiled, args, bench, meter)
    if ran.timing is not None:  # what the timing is said in, counted on the program as written
        source = original[name] if name in original else function
        counted = flops if flops is not None else multiply_add_flops(source)
        ran = dataclasses.replace(ran, flops=counted, moved=moved_bytes(source, args))
    if reference is not None:
        rule = CHECK_RULES[target.backend]
        meter.stage("checking against the interpreter")
        problems = compare(
            function,
            args,
            reference,
            label=rule.label,
            rtol=rule.rtol,
            atol=rule.atol,
            relative_atol=rule.relative_atol,
        )
        problems += compare_returned(ran.returned, expected, rule.label, rule.rtol, rule.atol)
        if problems:
            message = f"{rule.differs}: " + "; ".join(problems)
            meter.stage("looking for reads of memory the program never wrote")
            unwritten = _unwritten_reads(checked, checked_function, fresh_inputs, reference)
            if unwritten is not None:
                raise unwritten.explaining(message)
            raise DiagnosticError.at(None, message)
        notes = (*ran.first_notes, f"check: {rule.agrees}", *why)
        ran = dataclasses.replace(ran, first_notes=notes)
    return name, function, args, given, ran


def _runs_gpu_threads(module: IRModule, function: PrimFunc) -> bool:
    """Whether the interpreter runs GPU threads for `function`: it launches a kernel of the
    module, or it is low-level code with thread bindings of its own (s-tir's thread-bound
    loops run one after another)."""
    if any(is_kernel(func) for _, func in module.functions):
        return True
    if function.is_s_tir:
        return False
    found: list[Node] = []

    def binds_threads(node: Node) -> None:
        if (isinstance(node, AttrStmt) and node.key == "thread_extent") or (
            isinstance(node, For) and node.kind is ForKind.THREAD_BINDING
        ):
            found.append(node)

    walk(function.body, binds_threads)
    return bool(found)


def _unused_gpu_model(gpu_model: str, name: str) -> str:
    return (
        f"note: --gpu-model {gpu_model} changed nothing: {name} runs no GPU threads (the "
        "interpreter runs s-tir's thread-bound loops one after another); to run its threads "
        "as the GPU would, lower it first: tirc print --lower --target cuda FILE -o lowered.tir"
    )


def _run_in_interpreter(
    module: IRModule,
    name: str,
    function: PrimFunc,
    args: dict[str, np.ndarray | int],
    bench: bool,
    meter: Meter,
) -> Ran:
    from tirc.interp import run  # deferred: the interpreter (about a second), only when it runs

    meter.stage(f"running {name} in the interpreter")
    start = time.perf_counter()
    returned = run(function, args, module=module)
    elapsed = time.perf_counter() - start
    if not bench:
        return Ran(elapsed, returned=returned)
    snapshot = {key: np.array(value, copy=True) for key, value in args.items()}
    meter.stage(f"timing {name} in the interpreter", total=1.0)
    timing = time_calls(lambda: run(function, dict(snapshot), module=module), 0.5, 20, meter)
    return Ran(elapsed, timing, returned=returned)


@dataclass(frozen=True)
class CompiledForCpu:
    """The function compiled for this CPU, and the notes the run says first."""

    call: Callable[[Mapping[str, object]], int | float]  # its status, or the value it returns
    first_notes: tuple[str, ...]


def _compile_for_cpu(
    module: IRModule,
    name: str,
    target: Target,
    bench: bool,
    opt_level: int | None,
    meter: Meter,
) -> CompiledForCpu:
    # deferred: llvmlite (about a second), only for the CPU backend
    from tirc.driver.run_cpu import jit_compile

    first: list[str] = []
    if bench:
        busy = prepare_for_bench()  # before the JIT loads libgomp, which reads it then
        if busy is not None:
            first.append(f"bench: {busy}")
    meter.stage(f"compiling {name} for {target}")
    call, _ = jit_compile(module, name, target, 3 if opt_level is None else opt_level)
    return CompiledForCpu(call, tuple(first))


def _run_on_cpu(
    name: str,
    function: PrimFunc,
    compiled: CompiledForCpu,
    args: dict[str, np.ndarray | int],
    bench: bool,
    meter: Meter,
) -> Ran:
    """Calls the compiled function on `args`; times it as asked."""
    call = compiled.call
    first = list(compiled.first_notes)
    pristine = {key: np.array(value, copy=True) for key, value in args.items()} if bench else None
    meter.stage(f"running {name}")
    start = time.perf_counter()
    result = call(args)
    elapsed = time.perf_counter() - start
    # a function that returns a value has no status apart from it (docs/abi.md)
    returned = result if returned_type(function) is not None else None
    if returned is None and result != 0:
        raise DiagnosticError.at(None, f"{name} failed an assertion (it returned {result})")
    if pristine is None:
        return Ran(elapsed, first_notes=tuple(first), returned=returned)
    # deferred: llvmlite (about a second), only for the CPU backend
    from tirc.runtime.jit import aligned_copy

    # aligned as the ABI wants them, so that the calls timed copy nothing
    scratch = {key: aligned_copy(value) for key, value in pristine.items()}
    meter.stage(f"timing {name}", total=1.0)
    timing = time_calls(lambda: call(scratch), meter=meter)
    meter.stage("timing a numpy copy of the buffers", total=1.0)
    baseline = f"bench: {_numpy_baseline(function, args, timing.median, meter)}"
    return Ran(elapsed, timing, None, tuple(first), (baseline,), returned=returned)


def _reference_program(
    module: IRModule, name: str, function: PrimFunc, original: IRModule
) -> tuple[IRModule, PrimFunc, tuple[str, ...]]:
    """The program `--check` interprets, and why when it is not the scheduled one.

    The scheduled program is the reference. Where the interpreter refuses it (a tensorized
    s-tir runs each warp instruction in a thread loop of its own, outside any kernel, so
    mma.sync, ldmatrix and wgmma cannot run there), the program before the plan is: a plan
    does not change what a program computes. Only a refusal when compiling is a reason; a
    fault while running the scheduled program is the check's answer."""
    from tirc.interp.runner import compile_function  # deferred: the interpreter, only for it

    try:
        compile_function(function, name, module)
    except DiagnosticError as refused:
        before = original[name] if original is not module and name in original else None
        if before is None:
            raise
        try:
            compile_function(before, name, original)
        except DiagnosticError:
            raise refused from None
        reason = refused.diagnostics[0].message
        return original, before, (f"checked against the program before the plan: {reason}",)
    return module, function, ()


def _interpret(module: IRModule, function: PrimFunc, values: dict[str, np.ndarray]) -> object:
    """Runs the function in the interpreter on `values` (scalars as Python numbers), in place;
    the value it returns (None for none)."""
    from tirc.interp import run  # deferred: the interpreter (about a second), only when it runs

    scalars = {
        key: value.item()
        for key, value in values.items()
        if value.ndim == 0 and _buffer_of(function, _param(function, key)) is None
    }
    arguments: dict[str, np.ndarray | int] = {**values, **scalars}
    returned = run(function, arguments, module=module)
    values.update({k: np.asarray(v) for k, v in arguments.items() if k not in scalars})
    return returned


def compare_returned(got: object, want: object, label: str, rtol: float, atol: float) -> list[str]:
    """A line when the value the compiled function returned differs from the interpreter's:
    integers and bools exactly, floats within rtol/atol (NaN equal to NaN)."""
    if want is None:
        return []
    if isinstance(want, float) and isinstance(got, (int, float)):
        same = bool(np.isclose(got, want, rtol=rtol, atol=atol, equal_nan=True))
    else:
        same = got == want
    if same:
        return []
    return [
        f"the returned value differs: {label} {_value_text(got)}, interpreter {_value_text(want)}"
    ]


def _value_text(value: object) -> str:
    """A returned value as the summary says it: bools as true/false, floats as repr does."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return repr(value)


@dataclass(frozen=True)
class UnwrittenReads:
    """Fresh allocations a program reads before writing them (`spans`: where each is made);
    no buffer named where only garbage in all of them together changes the results."""

    names: tuple[str, ...]
    spans: tuple[Span | None, ...]

    def explaining(self, differs: str) -> DiagnosticError:
        """The error for a check that failed because of them."""
        which = ", ".join(self.names) if self.names else "fresh memory"
        first = self.spans[0] if self.spans else None
        return DiagnosticError.at(
            first,
            f"the program reads memory it never wrote ({which}), so its results are "
            "unspecified: the interpreter fills fresh memory with zeros, compiled code finds "
            "whatever was there",
            *(
                Note(f"{name} is allocated here", span)
                for name, span in zip(self.names[1:], self.spans[1:], strict=True)
            ),
            Note(differs),
            Note("write every element of an allocation before reading it"),
        )


# allocations tried one at a time to name those read before written
UNWRITTEN_SEARCH_LIMIT = 16


def _unwritten_reads(
    module: IRModule,
    function: PrimFunc,
    inputs: dict[str, np.ndarray],
    zero_filled: dict[str, np.ndarray],
) -> UnwrittenReads | None:
    """Whether the interpreter's results on `inputs` change when fresh memory holds garbage
    instead of zeros (`zero_filled`: its results with zeros), and which allocations make them
    change; None where they do not change."""
    from tirc.interp.memory.storage import garbage_in_fresh_memory  # deferred: the interpreter

    def changes(names: Sequence[str] | None) -> bool:
        values = {key: value.copy() for key, value in inputs.items()}
        try:
            with garbage_in_fresh_memory(names):
                _interpret(module, function, values)
        except DiagnosticError:  # garbage made it fault (an index read from fresh memory)
            return True
        return any(values[key].tobytes() != value.tobytes() for key, value in zero_filled.items())

    if not changes(None):
        return None
    found = [
        (buffer.name, span)
        for buffer, span in _allocations(module)[:UNWRITTEN_SEARCH_LIMIT]
        if changes([buffer.name])
    ]
    return UnwrittenReads(tuple(n for n, _ in found), tuple(s for _, s in found))


def _allocations(module: IRModule) -> list[tuple[Buffer, Span | None]]:
    """Every buffer the module's functions allocate, once by name, with the statement or
    block that allocates it."""
    found: dict[str, tuple[Buffer, Span | None]] = {}

    def visit(node: Node) -> None:
        if isinstance(node, AllocBuffer) or (isinstance(node, DeclBuffer) and node.data is None):
            found.setdefault(node.buffer.name, (node.buffer, node.buffer.span or node.span))
        elif isinstance(node, SBlock):
            for buffer in node.alloc_buffers:
                found.setdefault(buffer.name, (buffer, buffer.span or node.span))

    for _, func in module.functions:
        walk(func.body, visit)
    return list(found.values())


def _param(function: PrimFunc, name: str) -> Var:
    return next(p for p in function.params if p.name == name)


def _numpy_baseline(
    function: PrimFunc, args: Mapping[str, object], median: float, meter: Meter | None = None
) -> str:
    """A copy of every argument through numpy, as a memory-bandwidth yardstick."""
    arrays = [value for value in args.values() if isinstance(value, np.ndarray)]
    targets = [np.empty_like(a) for a in arrays]

    def copy_all() -> None:
        for source, target in zip(arrays, targets, strict=True):
            np.copyto(target, source)

    timing = time_calls(copy_all, meter=meter)
    return f"numpy copy of the same buffers takes {timing.median * 1e3:.4f} ms"


def pick_function(module: IRModule, name: str | None) -> tuple[str, PrimFunc]:
    """The function named, else the only one, else `main`; private ones too."""
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
    if not names:
        raise DiagnosticError.at(None, "the module has no function to run")
    raise DiagnosticError.at(
        None, f"the module has several functions ({', '.join(names)}); choose one with --func"
    )


def summary(
    name: str,
    target: str,
    elapsed: float,
    func: PrimFunc,
    args: Mapping[str, object],
    given: Mapping[str, object],
    save: str | None,
    sizes: Mapping[str, int] | None = None,
) -> str:
    lines = [f"ran {name} on {target} in {elapsed:.3f} s"]
    for param in func.params:
        buffer = _buffer_of(func, param)
        value = args[param.name]
        if param.name in given or (buffer is not None and buffer.name in given):
            origin = "given"
        elif buffer is None and param.name in (sizes or {}):
            origin = "--size"
        elif buffer is None:
            origin = "from the arrays' shapes"  # scalars are never drawn at random
        else:
            origin = "random"
        if buffer is not None and isinstance(value, np.ndarray):
            # deferred: the interpreter's values, only for a summary
            from tirc.driver.value_summary import describe_values

            lines.append(
                f"  {param.name}: {buffer.dtype}{list(value.shape)} ({origin})  "
                f"{describe_values(value)}"
            )
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

    return parameter_buffers(func).get(param)

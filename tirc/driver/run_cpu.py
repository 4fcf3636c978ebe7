"""`tirc run --target cpu`, the CPU's part: compile a function for this CPU and call it
in-process through the JIT; and what every target's run uses to check its results against
the interpreter's (`--check`) and to time calls on the host's clock (`--bench`)."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Mapping
from dataclasses import replace

import numpy as np

from tirc.driver.entry_point import entry_point
from tirc.driver.host_threads import check_runs_on_cpu
from tirc.driver.progress import Meter
from tirc.driver.target import parse_target
from tirc.ir.abi import EXTERN_CALLS
from tirc.ir.expr import Call, StringImm, subroutine_name
from tirc.ir.function import IRModule, PrimFunc
from tirc.ir.functor import walk
from tirc.ir.node import Node
from tirc.ir.target import Target
from tirc.runtime.throughput import Timing

FLOAT_RTOL = 1e-4
FLOAT_ATOL = 1e-5


def jit_function(
    module: IRModule, name: str, target: Target | str = "cpu", opt_level: int = 3
) -> Callable[[Mapping[str, object]], int | float]:
    """The function `name` of the (scheduled) `module`, compiled and loaded; the returned
    callable keeps the JIT alive and returns the function's C result (its status, or the
    value it returns)."""
    call, _ = jit_compile(module, name, target, opt_level)
    return call


def jit_compile(
    module: IRModule, name: str, target: Target | str = "cpu", opt_level: int = 3
) -> tuple[Callable[[Mapping[str, object]], int | float], IRModule]:
    """jit_function's callable, and the lowered module it was compiled from."""
    # deferred: llvmlite (about a second), only for the CPU backend
    from tirc.codegen.llvm import compile_module
    from tirc.driver.lower import lower_module  # deferred: the transform layer, only when lowering
    from tirc.runtime.jit import JitModule, check_externs_defined

    target = parse_target(target)
    if name in module:
        module, _ = entry_point(module, name, module[name])
    check_runs_on_cpu(module)
    lowered = reachable(lower_module(module, target=target, for_backend=True), name)
    check_externs_defined(lowered)  # before the link, which would not say which call
    compiled = compile_module(lowered, target, opt_level)
    public = {n: f for n, f in lowered.functions if not f.is_private}
    jit = JitModule(compiled, public)
    function = jit[name]

    def call(args: Mapping[str, object]) -> int | float:
        _ = jit  # the code lives as long as this closure
        return function(args)

    return call, lowered


def reachable(module: IRModule, name: str) -> IRModule:
    """The module's functions that a call of `name` can reach (itself, and by name what its
    calls call: a subroutine, a function an extern call names), in module order: the others
    are not compiled, and an extern function only they call need not be defined."""
    found = {name}
    pending = [name]
    while pending:
        for callee in _called_names(module[pending.pop()]):
            if callee in module and callee not in found:
                found.add(callee)
                pending.append(callee)
    kept = tuple((n, f) for n, f in module.functions if n in found)
    return module if len(kept) == len(module.functions) else replace(module, functions=kept)


def _called_names(func: PrimFunc) -> list[str]:
    names: list[str] = []

    def visit(node: Node) -> None:
        if isinstance(node, Call):
            callee = subroutine_name(node)
            if callee is not None:
                names.append(callee)
            elif node.op in EXTERN_CALLS and node.args and isinstance(node.args[0], StringImm):
                names.append(node.args[0].value)

    walk(func.body, visit)
    return names


def compare(
    func: PrimFunc,
    got: Mapping[str, object],
    want: Mapping[str, object],
    *,
    label: str = "cpu",
    rtol: float = FLOAT_RTOL,
    atol: float = FLOAT_ATOL,
    relative_atol: bool = False,
) -> list[str]:
    """One line per buffer whose values differ: integers exactly, floats within rtol/atol
    (NaN equal to NaN); with relative_atol, atol is scaled by the largest finite magnitude
    expected in the buffer (at least 1). `label` names what `got` came from."""
    problems = []
    for param in func.params:
        buffer = func.buffer_of(param)
        if buffer is None:
            continue
        have, expect = np.asarray(got[param.name]), np.asarray(want[param.name])
        if buffer.dtype.is_float:
            a, b = have.astype(np.float64), expect.astype(np.float64)
            absolute = atol
            if relative_atol:
                finite = np.abs(b[np.isfinite(b)])
                absolute = atol * max(float(finite.max()) if finite.size else 1.0, 1.0)
            close = np.isclose(a, b, rtol=rtol, atol=absolute, equal_nan=True)
        else:
            close = have == expect
        if not np.all(close):
            bad = int(np.size(close) - np.count_nonzero(close))
            first = tuple(int(i) for i in np.argwhere(~close)[0])
            problems.append(
                f"{param.name}: {bad} of {np.size(close)} values differ; first at {list(first)}: "
                f"{label} {have[first]!r}, interpreter {expect[first]!r}"
            )
    return problems


def bench(
    call: Callable[[], object],
    min_time: float = 0.2,
    max_repeats: int = 1000,
    meter: Meter | None = None,
) -> Timing:
    """The median of repeated calls after one warm-up, repeating up to about `min_time`.
    `meter` (a stage with total 1) fills as the repeats or the time run out, between calls."""
    call()
    samples: list[float] = []
    started = time.perf_counter()
    while len(samples) < max_repeats and (
        len(samples) < 5 or time.perf_counter() - started < min_time
    ):
        begin = time.perf_counter()
        call()
        end = time.perf_counter()
        samples.append(end - begin)
        if meter is not None:
            meter.update(min(1.0, max(len(samples) / max_repeats, (end - started) / min_time)))
    return Timing(statistics.median(samples), len(samples))

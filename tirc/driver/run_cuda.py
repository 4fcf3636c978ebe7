"""`tirc run --target cuda`: compile for the GPU of this machine, launch, check and time.

The module is lowered for cuda, which splits it into host and kernel functions (the
split-host-device pass; tirc/codegen/cuda/kernels.py reads the host's launches). The kernels
become one cubin (NVRTC or LLVM for PTX, ptxas for the cubin; without ptxas the driver
compiles the PTX), loaded with the CUDA driver API (cuda-python's `cuda.bindings.driver`).
The host statements run here, in order: each launch gets its grid and block extents and its
dynamic shared memory evaluated from its arguments, checked against the device's limits
before it goes (a kernel that needs more is a DiagnosticError naming it). The first call
synchronizes after each launch, so that a kernel that faults is named; the driver objects are
released whatever happens, and a failure to release never hides the error before it.
`--bench` times all the launches of one call with CUDA events: the median after a warm-up,
as GFLOP/s of the source program or GB/s.

    tirc run samples/gpu/matmul_fp16_tc.tir --plan samples/gpu/matmul_fp16_tc.plan.json \\
        --target cuda -D N=4096 --check --bench

The driver API lives in tirc/runtime/cuda_driver.py and the host program's executor in
tirc/runtime/cuda_host.py. Without cuda-python, without a driver or without a device, the
run stops with a DiagnosticError saying which (exit 1). Tests run all of this against a fake
driver (tests/runtime/fake_cuda.py) through `Device(driver=..., load_ptx=True)`.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from tirc.diagnostics import Diagnostic, DiagnosticError, Note
from tirc.ir import dtype as dt
from tirc.ir import expr as E
from tirc.ir.function import IRModule, PrimFunc
from tirc.runtime.cuda_driver import Device, Releases
from tirc.runtime.cuda_host import HostRun, Pointer


def pick_arch(target: str, device_arch: str) -> str:
    """The target's -arch, else the device's, else the newest tirc knows below it."""
    from tirc.driver.compile_cuda import ARCHES, target_arch

    if len(target.split()) > 1:
        return target_arch(target, device_arch)
    if device_arch in ARCHES:
        return device_arch
    number = int(device_arch[3:])
    known = [arch for arch in ARCHES if int(arch[3:]) <= number]
    return known[-1] if known else ARCHES[0]


def module_image(lowered: IRModule, arch: str, *, ptx: bool = False) -> bytes:
    """A cubin (through ptxas) or, with `ptx` or without ptxas, NUL-terminated PTX for the
    driver's JIT, which must then have no function left to link."""
    import shutil

    from tirc.driver.compile_cuda import extern_calls, module_ptx
    from tirc.driver.cuda_toolchain import cubin_from_ptx

    text = module_ptx(lowered, arch=arch, via=None)
    externs = extern_calls(lowered)
    if not ptx and shutil.which("ptxas") is not None:
        return cubin_from_ptx(text, arch, externs)
    unresolved = [name for name in externs if name in _extern_functions(text)]
    if unresolved:
        raise DiagnosticError(
            [
                Diagnostic.error(
                    f"the program calls '{name}', which is not a CUDA built-in and is not "
                    "defined in the program",
                    externs[name],
                    Note("the CUDA driver cannot load PTX that declares it `.extern`"),
                )
                for name in unresolved
            ]
        )
    return text.encode() + b"\0"


def _extern_functions(ptx: str) -> set[str]:
    """The functions PTX declares `.extern`, for a linker to provide."""
    import re

    return set(re.findall(r"\.extern\s+\.func\s+(?:\([^)]*\)\s*)?([A-Za-z_$][\w$]*)", ptx))


@dataclass
class CudaTiming:
    median: float  # seconds per call
    repeats: int


def run_on_cuda(
    module: IRModule,
    name: str,
    function: PrimFunc,
    target: str,
    args: dict[str, np.ndarray | int],
    *,
    bench: bool = False,
    repeats: int = 20,
    device: Device | None = None,
) -> tuple[float, CudaTiming | None, str]:
    """Runs `name` of the scheduled module on the GPU with `args` (arrays are updated with
    the results). Returns (seconds of the first call, the timing with --bench, the arch).
    `device` is the GPU to use (default: the first of this machine's)."""
    import time

    from tirc.driver.lower import lower_module

    device = Device() if device is None else device
    arch = pick_arch(target, device.arch)
    lowered = lower_module(module, target="cuda")
    program = _program(lowered, name)
    image = module_image(lowered, arch, ptx=device.load_ptx)
    with Releases(device) as releases:
        cu_module = device.call("cuModuleLoadData", image)
        releases.add("cuModuleUnload", cu_module)
        functions = [
            device.call("cuModuleGetFunction", cu_module, kernel.name.encode())
            for kernel in program.kernels
        ]
        host = HostRun(device, program, functions, name=name)
        arrays = _bind_arguments(host, program.func, args, releases)
        for buffer in program.host_allocations:
            size = int(host.evaluate(_allocation_bytes(buffer), f"the size of {buffer.name}"))
            pointer = device.allocate(size)
            releases.add("cuMemFree", pointer)
            host.values[buffer.data] = Pointer(pointer)
        stream = device.call("cuStreamCreate", 0)
        releases.add("cuStreamDestroy", stream)
        start = time.perf_counter()
        host.synchronize_each = True  # the first call names a kernel that faults
        host.run(program.host, stream)
        device.call("cuStreamSynchronize", stream)
        elapsed = time.perf_counter() - start
        host.synchronize_each = False
        for param_name, (pointer, array) in arrays.items():
            if array.nbytes:
                device.call("cuMemcpyDtoH", array.ctypes.data, pointer, array.nbytes)
            args[param_name] = array
        timing = _time(device, host, program, stream, repeats, releases) if bench else None
    return elapsed, timing, arch


def _program(lowered: IRModule, name: str) -> Any:
    """The DeviceProgram of host function `name`, or an error listing those there are."""
    from tirc.codegen.cuda.kernels import device_programs

    programs = dict(device_programs(lowered))
    if name not in programs:
        raise DiagnosticError.at(
            None,
            f"no function '{name}' to run on the GPU "
            f"(the module has {', '.join(programs) or 'no host function'})",
        )
    return programs[name]


def _bind_arguments(
    host: HostRun, func: PrimFunc, args: Mapping[str, np.ndarray | int], releases: Releases
) -> dict[str, tuple[Any, np.ndarray]]:
    """Device copies of the buffer arguments, and the scalar arguments, in `host.values`; a
    shape variable with no argument of its own takes its value from the arrays' shapes."""
    from tirc.codegen.abi import ParamKind, function_abi

    arrays: dict[str, tuple[Any, np.ndarray]] = {}
    abi = function_abi(func)
    for param in abi:
        if param.kind is not ParamKind.BUFFER or param.buffer is None:
            continue
        if param.name not in args:
            raise DiagnosticError.at(None, f"--target cuda: no array for {param.name}")
        array = np.array(args[param.name], copy=True, order="C")
        pointer = host.device.allocate(array.nbytes)
        releases.add("cuMemFree", pointer)
        if array.nbytes:
            host.device.call("cuMemcpyHtoD", pointer, array.ctypes.data, array.nbytes)
        arrays[param.name] = (pointer, array)
        host.values[param.var] = Pointer(pointer)
        for extent, actual in zip(param.buffer.shape, array.shape, strict=False):
            if isinstance(extent, E.Var):
                host.values.setdefault(extent, int(actual))
    for param in abi:
        if param.kind is ParamKind.BUFFER:
            continue
        if param.name in args:
            host.values[param.var] = _scalar(args[param.name])
        elif param.var not in host.values:
            raise DiagnosticError.at(None, f"--target cuda: no value for {param.name}")
    return arrays


def _scalar(value: object) -> int | float | bool:
    """A Python number for a scalar argument given as one, or as a numpy scalar or 0-d array."""
    if isinstance(value, (np.ndarray, np.generic)):
        value = value.item()
    if not isinstance(value, (int, float, bool)):
        raise DiagnosticError.at(None, f"--target cuda: {value!r} is not a scalar")
    return value


def _allocation_bytes(buffer: Any) -> E.PrimExpr:
    from tirc.codegen.cuda.stmt import allocation_size

    bytes_per = max(1, buffer.dtype.bits * buffer.dtype.lanes // 8)
    return E.Mul(allocation_size(buffer), E.IntImm(bytes_per, dt.INT64))  # an int64 count


def _time(
    device: Device, host: HostRun, program: Any, stream: Any, repeats: int, releases: Releases
) -> CudaTiming:
    """The median time of one call (all its launches), by CUDA events, after a warm-up."""
    start = device.call("cuEventCreate", 0)
    releases.add("cuEventDestroy", start)
    end = device.call("cuEventCreate", 0)
    releases.add("cuEventDestroy", end)
    host.run(program.host, stream)  # warm-up
    samples = []
    for _ in range(repeats):
        device.call("cuEventRecord", start, stream)
        host.run(program.host, stream)
        device.call("cuEventRecord", end, stream)
        device.call("cuEventSynchronize", end)
        samples.append(device.call("cuEventElapsedTime", start, end) / 1e3)
    return CudaTiming(statistics.median(samples), len(samples))


# Tensor cores and GPU reductions add in their own order (and round products of 16-bit floats
# on the way), so floats are compared relative to the largest value of the result.
GPU_RTOL = 1e-3
GPU_ATOL = 1e-5


def compare(func: PrimFunc, got: Mapping[str, object], want: Mapping[str, object]) -> list[str]:
    """One line per buffer whose values differ: integers exactly, floats within GPU_RTOL
    and GPU_ATOL times the buffer's largest magnitude (NaN equal to NaN)."""
    from tirc.driver.run_cpu import compare as compare_values

    return compare_values(
        func, got, want, label="cuda", rtol=GPU_RTOL, atol=GPU_ATOL, relative_atol=True
    )


def describe(timing: CudaTiming, flops: int | None, nbytes: int) -> str:
    text = f"median {timing.median * 1e3:.4f} ms over {timing.repeats} runs (CUDA events)"
    if flops:
        return f"{text}, {flops / timing.median / 1e9:.2f} GFLOP/s"
    return f"{text}, {nbytes / timing.median / 1e9:.2f} GB/s"


def run_cuda_target(
    module: IRModule,
    original: IRModule,
    name: str,
    function: PrimFunc,
    target: str,
    args: dict[str, np.ndarray | int],
    reference: dict[str, np.ndarray] | None,
    bench: bool,
    notes: list[str],
    interpret: Callable[[dict[str, Any]], None],
) -> float:
    """What `tirc run --target cuda` does between parsing and the summary: run, compare
    with the interpreter (`interpret` runs it on the reference arguments), time."""
    elapsed, timing, arch = run_on_cuda(module, name, function, target, args, bench=bench)
    notes.append(f"device: {arch}")
    if reference is not None:
        interpret(reference)
        problems = compare(function, args, reference)
        if problems:
            raise DiagnosticError.at(
                None, "the GPU's results differ from the interpreter's: " + "; ".join(problems)
            )
        notes.append(
            f"check: the GPU agrees with the interpreter (floats within rtol {GPU_RTOL:g}, "
            f"atol {GPU_ATOL:g} x the largest magnitude)"
        )
    if timing is not None:
        from tirc.runtime.throughput import count_flops

        source = original[name] if name in original else function
        nbytes = sum(v.nbytes for v in args.values() if isinstance(v, np.ndarray))
        notes.append(f"bench: {describe(timing, count_flops(source), nbytes)}")
    return elapsed

"""One call of a host function of a module lowered for cuda, on the device: the kernels'
image loaded, the arguments copied over, the host statements run (tirc.runtime.cuda_host),
the results copied back, and with `bench` the median time of a call by CUDA events.

The first call synchronizes after each launch, so that a kernel that faults is named; the
driver objects are released whatever happens, and a failure to release never hides the
error before it.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from tirc.codegen.abi import ParamKind, function_abi
from tirc.codegen.cuda.kernels import DeviceProgram, allocation_size, device_programs
from tirc.diagnostics import DiagnosticError
from tirc.ir import dtype as dt
from tirc.ir import expr as E
from tirc.ir.buffer import Buffer
from tirc.ir.function import IRModule, PrimFunc
from tirc.runtime.cuda_driver import Device, Releases
from tirc.runtime.cuda_host import HostRun, Pointer
from tirc.runtime.cuda_spin import Spinner
from tirc.runtime.throughput import Timing

Timer = Callable[[Callable[[Any], None], int], Timing]  # (queue one call on a stream, count)


def call_on_device(
    device: Device,
    lowered: IRModule,
    image: bytes,
    name: str,
    args: dict[str, np.ndarray | int],
    *,
    bench: bool = False,
    repeats: int = 20,
    timer: Timer | None = None,
) -> tuple[float, Timing | None]:
    """Runs host function `name` of `lowered` (its kernels in `image`, a cubin or PTX) with
    `args`, whose arrays are replaced by the results. Returns the seconds of the first call
    and, with `bench`, the timing of `repeats` more: by `timer` where given (it gets a
    function that queues one call on a stream, and the count), else each call between two
    CUDA events."""
    program = _program(lowered, name)
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
        timing: Timing | None = None
        if bench and timer is not None:
            timing = timer(lambda on: host.run(program.host, on), repeats)
        elif bench:
            timing = _time(device, host, program, stream, repeats, releases)
    return elapsed, timing


def _program(lowered: IRModule, name: str) -> DeviceProgram:
    """The DeviceProgram of host function `name`, or an error listing those there are."""
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


def _allocation_bytes(buffer: Buffer) -> E.PrimExpr:
    bytes_per = max(1, buffer.dtype.bits * buffer.dtype.lanes // 8)
    return E.Mul(allocation_size(buffer), E.IntImm(bytes_per, dt.INT64))  # an int64 count


def _time(
    device: Device,
    host: HostRun,
    program: DeviceProgram,
    stream: Any,
    repeats: int,
    releases: Releases,
) -> Timing:
    """The median time of one call (all its launches), each between its own pair of CUDA
    events, after a warm-up. The calls are queued behind a kernel that spins until the host
    has queued them all (tirc.runtime.cuda_spin), so the host's time to launch them is not
    in the numbers."""
    spin = Spinner.load(device, releases)
    started = time.perf_counter()
    host.run(program.host, stream)  # warm-up
    queueing = time.perf_counter() - started  # the host's time to queue a call
    events = []
    for _ in range(repeats):
        pair = device.call("cuEventCreate", 0), device.call("cuEventCreate", 0)
        for event in pair:
            releases.add("cuEventDestroy", event)
        events.append(pair)
    spin.launch(stream, seconds=2 * queueing * repeats + 1e-3)
    for start, end in events:
        device.call("cuEventRecord", start, stream)
        host.run(program.host, stream)
        device.call("cuEventRecord", end, stream)
    device.call("cuStreamSynchronize", stream)
    samples = [device.call("cuEventElapsedTime", start, end) / 1e3 for start, end in events]
    return Timing(statistics.median(samples), len(samples), clock="CUDA events")

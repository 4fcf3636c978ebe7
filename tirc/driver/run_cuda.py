"""`tirc run --target cuda`: compile for the GPU of this machine, launch, check and time.

The module is lowered for cuda, which splits it into host and kernel functions (the
split-host-device pass; tirc/codegen/cuda/kernels.py reads the host's launches). The kernels
become one cubin (NVRTC or LLVM for PTX, ptxas for the cubin; without ptxas the driver
compiles the PTX), loaded with the CUDA driver API (cuda-python's `cuda.bindings.driver`).
The host statements run here, in order: each launch gets its grid and block extents and its
dynamic shared memory evaluated from its arguments. `--bench` times all the launches of one
call with CUDA events: the median after a warm-up, as GFLOP/s of the source program or GB/s.

    tirc run samples/gpu/matmul_fp16_tc.tir --plan samples/gpu/matmul_fp16_tc.plan.json \\
        --target cuda -D N=4096 --check --bench

Without cuda-python, without a driver or without a device, the run stops with a
DiagnosticError saying which (exit 1).
"""

from __future__ import annotations

import ctypes
import statistics
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tirc.diagnostics import DiagnosticError, Note
from tirc.ir import expr as E
from tirc.ir import stmt as S
from tirc.ir.function import IRModule, PrimFunc

CUDA_INSTALL = "pip install 'tirc[cuda]' (cuda-bindings and nvidia-cuda-nvrtc)"
STATIC_SHARED_LIMIT = 48 * 1024


def driver_api() -> Any:
    """cuda.bindings.driver, initialized, or a DiagnosticError saying what is missing."""
    try:
        from cuda.bindings import driver
    except ImportError:
        raise DiagnosticError.at(
            None,
            "--target cuda needs cuda-python to reach the GPU",
            Note(f"install it: {CUDA_INSTALL}"),
        ) from None
    try:
        (error,) = driver.cuInit(0)
    except RuntimeError as problem:  # no libcuda.so: no NVIDIA driver on this machine
        raise DiagnosticError.at(
            None,
            f"--target cuda: the CUDA driver is not available ({problem})",
            Note("run on a machine with an NVIDIA GPU and its driver, or use --target interp"),
        ) from None
    if error != driver.CUresult.CUDA_SUCCESS:
        raise DiagnosticError.at(
            None,
            f"--target cuda: no usable CUDA device (cuInit: {_error_name(driver, error)})",
            Note("run on a machine with an NVIDIA GPU, or use --target interp"),
        )
    return driver


def _error_name(driver: Any, error: Any) -> str:
    try:
        _, name = driver.cuGetErrorName(error)
        return name.decode() if isinstance(name, bytes) else str(name)
    except Exception:  # noqa: BLE001  (a name for the message only)
        return str(error)


class Device:
    """The first CUDA device with its primary context current, and checked driver calls."""

    def __init__(self) -> None:
        self.driver = driver_api()
        self.device = self.call("cuDeviceGet", 0)
        attribute = self.driver.CUdevice_attribute
        major = self.call(
            "cuDeviceGetAttribute",
            attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
            self.device,
        )
        minor = self.call(
            "cuDeviceGetAttribute",
            attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
            self.device,
        )
        self.arch = f"sm_{major}{minor}"
        self.context = self.call("cuDevicePrimaryCtxRetain", self.device)
        self.call("cuCtxSetCurrent", self.context)

    def call(self, name: str, *args: object) -> Any:
        result = getattr(self.driver, name)(*args)
        error, values = result[0], result[1:]
        if error != self.driver.CUresult.CUDA_SUCCESS:
            raise DiagnosticError.at(
                None, f"CUDA driver: {name} failed: {_error_name(self.driver, error)}"
            )
        if not values:
            return None
        return values[0] if len(values) == 1 else values

    def allocate(self, nbytes: int) -> Any:
        return self.call("cuMemAlloc", max(1, nbytes))


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


def module_image(lowered: IRModule, arch: str) -> bytes:
    """A cubin (through ptxas) or, without ptxas, NUL-terminated PTX for the driver's JIT."""
    import shutil

    from tirc.driver.compile_cuda import extern_calls, module_ptx
    from tirc.driver.cuda_toolchain import cubin_from_ptx

    ptx = module_ptx(lowered, arch=arch, via=None)
    if shutil.which("ptxas") is not None:
        return cubin_from_ptx(ptx, arch, extern_calls(lowered))
    return ptx.encode() + b"\0"


# -- the host program ----------------------------------------------------------------------


@dataclass
class HostRun:
    """The host statements of one lowered function, run against the device."""

    device: Device
    program: Any  # tirc.codegen.cuda.kernels.DeviceProgram
    functions: list[Any]  # CUfunction per kernel
    values: dict[E.Var, Any] = field(default_factory=dict)  # scalars, and device pointers
    scratch: list[Any] = field(default_factory=list)  # host allocations to free

    def evaluate(self, expr: E.PrimExpr, what: str) -> int | float | bool:
        from tirc.analysis.arith import Analyzer
        from tirc.ir.substitute import substitute

        known = {
            var: _literal(var, value)
            for var, value in self.values.items()
            if not var.dtype.is_handle and not isinstance(value, _Pointer)
        }
        folded = Analyzer().simplify(substitute(expr, known))
        if isinstance(folded, (E.IntImm, E.FloatImm)):
            return folded.value
        raise DiagnosticError.at(
            getattr(expr, "span", None), f"--target cuda: cannot evaluate {what} on the host"
        )

    def run(self, stmt: S.Stmt, stream: Any) -> None:
        if isinstance(stmt, S.SeqStmt):
            for child in stmt.stmts:
                self.run(child, stream)
        elif type(stmt).__name__ == "KernelLaunch":
            self.launch(stmt, stream)
        elif isinstance(stmt, S.Bind):
            self.values[stmt.var] = self.evaluate(stmt.value, f"'{stmt.var.name}'")
        elif isinstance(stmt, S.AssertStmt):
            if not self.evaluate(stmt.condition, "an assertion"):
                message = getattr(stmt.message, "value", "an assertion failed")
                raise DiagnosticError.at(stmt.span, f"the function's check failed: {message}")
        elif isinstance(stmt, S.For):
            start = int(self.evaluate(stmt.min, "a host loop"))
            for value in range(start, start + int(self.evaluate(stmt.extent, "a host loop"))):
                self.values[stmt.loop_var] = value
                self.run(stmt.body, stream)
        elif isinstance(stmt, S.IfThenElse):
            if self.evaluate(stmt.condition, "a host condition"):
                self.run(stmt.then_case, stream)
            elif stmt.else_case is not None:
                self.run(stmt.else_case, stream)
        elif isinstance(stmt, S.AttrStmt):
            self.run(stmt.body, stream)
        elif isinstance(stmt, S.DeclBuffer):
            if stmt.data is not None and stmt.data is not stmt.buffer.data:
                if not isinstance(stmt.data, E.Var) or stmt.data not in self.values:
                    raise DiagnosticError.at(stmt.span, "--target cuda: a view the host lacks")
                self.values[stmt.buffer.data] = self.values[stmt.data]
        elif isinstance(stmt, (S.AllocBuffer, S.Evaluate)):
            pass  # host allocations happen first; constants do nothing
        else:
            raise DiagnosticError.at(
                stmt.span, f"--target cuda: cannot run a {type(stmt).__name__} on the host"
            )

    def launch(self, node: Any, stream: Any) -> None:
        """Launches a KernelLaunch: its kernel, with its arguments evaluated here."""
        from tirc.codegen.cuda.kernel import dynamic_shared_layout

        kernel = self.program.kernels[node.index]

        def extent(tag: str) -> int:
            value = kernel.dims.get(tag)
            return 1 if value is None else self._extent(kernel.at_launch(value, node), kernel.name)

        grid = [extent(f"blockIdx.{axis}") for axis in "xyz"]
        block = [extent(f"threadIdx.{axis}") for axis in "xyz"]
        if 0 in grid:
            return  # an empty grid: nothing to do
        _, shared_bytes = dynamic_shared_layout(kernel)
        shared_bytes = kernel.at_launch(shared_bytes, node)
        shared = int(self.evaluate(shared_bytes, f"the shared memory of {kernel.name}"))
        function = self.functions[node.index]
        if shared > STATIC_SHARED_LIMIT:
            attribute = self.device.driver.CUfunction_attribute
            self.device.call(
                "cuFuncSetAttribute",
                function,
                attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                shared,
            )
        values, kinds = [], []
        for var, arg in zip(kernel.params, node.args, strict=True):
            if isinstance(arg, E.Var) and arg in self.values:
                value = self.values[arg]
            elif var.dtype.is_handle:
                raise DiagnosticError.at(
                    arg.span, f"--target cuda: {kernel.name} gets a pointer the host lacks"
                )
            else:
                value = self.evaluate(arg, f"an argument of {kernel.name}")
            if isinstance(value, _Pointer):
                values.append(int(value.address))
                kinds.append(ctypes.c_void_p)
            else:
                values.append(value)
                kinds.append(_ctype(var))
        self.device.call(
            "cuLaunchKernel",
            function,
            *grid,
            *block,
            shared,
            stream,
            (tuple(values), tuple(kinds)),
            0,
        )

    def _extent(self, extent: E.PrimExpr | None, name: str) -> int:
        return 1 if extent is None else int(self.evaluate(extent, f"the launch of {name}"))


@dataclass(frozen=True)
class _Pointer:
    address: Any  # CUdeviceptr


def _literal(var: E.Var, value: object) -> E.PrimExpr:
    if var.dtype.is_float:
        return E.FloatImm(var.dtype, float(value))  # type: ignore[arg-type]
    return E.IntImm(var.dtype, int(value))  # type: ignore[arg-type, call-overload]


_CTYPES = {
    "int8": ctypes.c_int8,
    "int16": ctypes.c_int16,
    "int32": ctypes.c_int32,
    "int64": ctypes.c_int64,
    "uint8": ctypes.c_uint8,
    "uint16": ctypes.c_uint16,
    "uint32": ctypes.c_uint32,
    "uint64": ctypes.c_uint64,
    "float32": ctypes.c_float,
    "float64": ctypes.c_double,
    "bool": ctypes.c_bool,
}


def _ctype(var: E.Var) -> Any:
    found = _CTYPES.get(str(var.dtype))
    if found is None:
        raise DiagnosticError.at(
            var.span, f"--target cuda: cannot pass a {var.dtype} scalar to a kernel"
        )
    return found


# -- one run -------------------------------------------------------------------------------


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
) -> tuple[float, CudaTiming | None, str]:
    """Runs `name` of the scheduled module on the GPU with `args` (arrays are updated with
    the results). Returns (seconds of the first call, the timing with --bench, the arch)."""
    import time

    from tirc.codegen.cuda.kernels import device_programs
    from tirc.driver.lower import lower_module

    device = Device()
    arch = pick_arch(target, device.arch)
    lowered = lower_module(module, target="cuda")
    image = module_image(lowered, arch)
    cu_module = device.call("cuModuleLoadData", image)
    try:
        program = dict(device_programs(lowered))[name]
        functions = [
            device.call("cuModuleGetFunction", cu_module, kernel.name.encode())
            for kernel in program.kernels
        ]
        host = HostRun(device, program, functions)
        arrays = _bind_arguments(host, program.func, args)
        try:
            for buffer in program.host_allocations:
                size = int(host.evaluate(_allocation_bytes(buffer), f"the size of {buffer.name}"))
                pointer = device.allocate(size)
                host.scratch.append(pointer)
                host.values[buffer.data] = _Pointer(pointer)
            stream = device.call("cuStreamCreate", 0)
            start = time.perf_counter()
            host.run(program.host, stream)
            device.call("cuStreamSynchronize", stream)
            elapsed = time.perf_counter() - start
            for param_name, (pointer, array) in arrays.items():
                device.call("cuMemcpyDtoH", array.ctypes.data, pointer, array.nbytes)
                args[param_name] = array
            timing = _time(device, host, program, stream, repeats) if bench else None
            device.call("cuStreamDestroy", stream)
        finally:
            for pointer, _ in arrays.values():
                device.call("cuMemFree", pointer)
            for pointer in host.scratch:
                device.call("cuMemFree", pointer)
    finally:
        device.call("cuModuleUnload", cu_module)
    return elapsed, timing, arch


def _bind_arguments(
    host: HostRun, func: PrimFunc, args: Mapping[str, np.ndarray | int]
) -> dict[str, tuple[Any, np.ndarray]]:
    """Device copies of the buffer arguments, and the scalar arguments, in `host.values`; a
    shape variable with no argument of its own takes its value from the arrays' shapes."""
    from tirc.codegen.abi import ParamKind, function_abi

    arrays: dict[str, tuple[Any, np.ndarray]] = {}
    abi = function_abi(func)
    for param in abi:
        if param.kind is not ParamKind.BUFFER or param.buffer is None:
            continue
        array = np.array(args[param.name], copy=True, order="C")
        pointer = host.device.allocate(array.nbytes)
        if array.nbytes:
            host.device.call("cuMemcpyHtoD", pointer, array.ctypes.data, array.nbytes)
        arrays[param.name] = (pointer, array)
        host.values[param.var] = _Pointer(pointer)
        for extent, actual in zip(param.buffer.shape, array.shape, strict=False):
            if isinstance(extent, E.Var):
                host.values.setdefault(extent, int(actual))
    for param in abi:
        if param.kind is ParamKind.BUFFER:
            continue
        if param.name in args:
            host.values[param.var] = args[param.name]
        elif param.var not in host.values:
            raise DiagnosticError.at(None, f"--target cuda: no value for {param.name}")
    return arrays


def _allocation_bytes(buffer: Any) -> E.PrimExpr:
    from tirc.codegen.cuda.stmt import allocation_size

    size = allocation_size(buffer)
    bytes_per = max(1, buffer.dtype.bits * buffer.dtype.lanes // 8)
    return E.Mul(size, E.IntImm(size.dtype, bytes_per))  # type: ignore[attr-defined]


def _time(device: Device, host: HostRun, program: Any, stream: Any, repeats: int) -> CudaTiming:
    """The median time of one call (all its launches), by CUDA events, after a warm-up."""
    start = device.call("cuEventCreate", 0)
    end = device.call("cuEventCreate", 0)
    try:
        host.run(program.host, stream)  # warm-up
        samples = []
        for _ in range(repeats):
            device.call("cuEventRecord", start, stream)
            host.run(program.host, stream)
            device.call("cuEventRecord", end, stream)
            device.call("cuEventSynchronize", end)
            samples.append(device.call("cuEventElapsedTime", start, end) / 1e3)
    finally:
        device.call("cuEventDestroy", start)
        device.call("cuEventDestroy", end)
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
        interpret(reference)  # type: ignore[arg-type]
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

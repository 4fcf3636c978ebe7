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

Without cuda-python, without a driver or without a device, the run stops with a
DiagnosticError saying which (exit 1). Tests run all of this against a fake driver
(tests/runtime/fake_cuda.py) through `Device(driver=..., load_ptx=True)`.
"""

from __future__ import annotations

import ctypes
import dataclasses
import statistics
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

import numpy as np

from tirc.diagnostics import Diagnostic, DiagnosticError, Note
from tirc.ir import dtype as dt
from tirc.ir import expr as E
from tirc.ir import stmt as S
from tirc.ir.function import IRModule, PrimFunc

CUDA_INSTALL = "pip install 'tirc[cuda]' (cuda-bindings and nvidia-cuda-nvrtc)"
# the errors that say a kernel went wrong on the device (and the context is lost with it)
FAULTS = frozenset(
    {
        "CUDA_ERROR_ILLEGAL_ADDRESS",
        "CUDA_ERROR_LAUNCH_FAILED",
        "CUDA_ERROR_LAUNCH_TIMEOUT",
        "CUDA_ERROR_ASSERT",
        "CUDA_ERROR_HARDWARE_STACK_ERROR",
        "CUDA_ERROR_ILLEGAL_INSTRUCTION",
        "CUDA_ERROR_MISALIGNED_ADDRESS",
        "CUDA_ERROR_INVALID_ADDRESS_SPACE",
        "CUDA_ERROR_INVALID_PC",
    }
)


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


def _error_text(driver: Any, error: Any) -> str:
    """`CUDA_ERROR_X (what it means)`."""
    name = _error_name(driver, error)
    try:
        _, text = driver.cuGetErrorString(error)
        text = text.decode() if isinstance(text, bytes) else str(text)
    except Exception:  # noqa: BLE001
        return name
    return f"{name} ({text})"


class CudaError(DiagnosticError):
    """A driver call that failed; `code` names its CUresult (CUDA_ERROR_...), `text` says it
    with what it means."""

    def __init__(self, call: str, code: str, text: str) -> None:
        self.call, self.code, self.text = call, code, text
        if code in FAULTS:
            super().__init__(
                Diagnostic.error(
                    f"a kernel faulted on the GPU: {text}",
                    None,
                    Note(f"{call} reported it; the device's context is lost after a fault"),
                    Note(COMPUTE_SANITIZER),
                )
            )
        else:
            super().__init__(Diagnostic.error(f"CUDA driver: {call} failed: {text}"))

    @property
    def is_fault(self) -> bool:
        return self.code in FAULTS


COMPUTE_SANITIZER = "compute-sanitizer tirc run ... names the access that faulted"


@dataclass(frozen=True)
class Limits:
    """What one block and one grid may ask of the device."""

    threads_per_block: int
    block: tuple[int, int, int]  # threadIdx.x, .y, .z
    grid: tuple[int, int, int]  # blockIdx.x, .y, .z
    shared_per_block: int  # bytes of shared memory a block gets without opting in
    shared_optin: int  # bytes a block may have after cuFuncSetAttribute


class Device:
    """The first CUDA device with its primary context current, and checked driver calls.

    `driver` stands in for cuda.bindings.driver (tests pass a fake); `load_ptx` hands the
    driver PTX to compile rather than a cubin from ptxas."""

    def __init__(self, driver: Any = None, *, load_ptx: bool = False) -> None:
        if driver is None:
            self.driver = driver_api()
        else:
            self.driver = driver
            self.call("cuInit", 0)
        self.load_ptx = load_ptx
        self.device = self.call("cuDeviceGet", 0)
        self.arch = f"sm_{self.attribute('COMPUTE_CAPABILITY_MAJOR')}"
        self.arch += str(self.attribute("COMPUTE_CAPABILITY_MINOR"))
        self.limits = Limits(
            self.attribute("MAX_THREADS_PER_BLOCK"),
            (
                self.attribute("MAX_BLOCK_DIM_X"),
                self.attribute("MAX_BLOCK_DIM_Y"),
                self.attribute("MAX_BLOCK_DIM_Z"),
            ),
            (
                self.attribute("MAX_GRID_DIM_X"),
                self.attribute("MAX_GRID_DIM_Y"),
                self.attribute("MAX_GRID_DIM_Z"),
            ),
            self.attribute("MAX_SHARED_MEMORY_PER_BLOCK"),
            self.attribute("MAX_SHARED_MEMORY_PER_BLOCK_OPTIN"),
        )
        self.context = self.call("cuDevicePrimaryCtxRetain", self.device)
        self.call("cuCtxSetCurrent", self.context)

    def attribute(self, name: str) -> int:
        """A CU_DEVICE_ATTRIBUTE_<name> of the device."""
        which = getattr(self.driver.CUdevice_attribute, f"CU_DEVICE_ATTRIBUTE_{name}")
        return int(self.call("cuDeviceGetAttribute", which, self.device))

    def function_attribute(self, function: Any, name: str) -> int:
        """A CU_FUNC_ATTRIBUTE_<name> of a loaded kernel."""
        which = getattr(self.driver.CUfunction_attribute, f"CU_FUNC_ATTRIBUTE_{name}")
        return int(self.call("cuFuncGetAttribute", which, function))

    def call(self, name: str, *args: object) -> Any:
        result = getattr(self.driver, name)(*args)
        error, values = result[0], result[1:]
        if error != self.driver.CUresult.CUDA_SUCCESS:
            raise CudaError(name, _error_name(self.driver, error), _error_text(self.driver, error))
        if not values:
            return None
        return values[0] if len(values) == 1 else values

    def allocate(self, nbytes: int) -> Any:
        return self.call("cuMemAlloc", max(1, nbytes))


class Releases:
    """Driver objects to release at the end of a run, last acquired first. A failure to
    release never hides the error that ended the run: it becomes a note on that error (on
    nothing, if that error is not a user's), and only a clean run raises it."""

    def __init__(self, device: Device) -> None:
        self.device = device
        self.steps: list[tuple[str, tuple[object, ...]]] = []

    def add(self, call: str, *args: object) -> None:
        self.steps.append((call, args))

    def __enter__(self) -> Releases:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        failures: list[CudaError] = []
        for call, args in reversed(self.steps):
            try:
                self.device.call(call, *args)
            except CudaError as failure:
                failures.append(failure)
        self.steps.clear()
        if not failures:
            return
        if error is None:
            raise failures[0]
        if isinstance(error, DiagnosticError) and error.diagnostics:
            codes = sorted({failure.code for failure in failures})
            calls = ", ".join(dict.fromkeys(failure.call for failure in failures))
            note = Note(
                f"releasing the GPU's memory after it also failed ({calls}: {', '.join(codes)})"
            )
            first, *rest = error.diagnostics
            replaced = dataclasses.replace(first, notes=(*first.notes, note))
            raise DiagnosticError([replaced, *rest]) from error.__cause__


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


# -- the host program ----------------------------------------------------------------------


@dataclass(frozen=True)
class _Pointer:
    address: Any  # CUdeviceptr


Value = int | float | bool | _Pointer


@dataclass
class _KernelFacts:
    """What the driver says of a loaded kernel, asked once."""

    static_shared: int  # bytes of its __shared__ arrays
    max_threads: int  # threads a block it can run with (its registers may lower the device's)
    registers: int
    dynamic_shared: int  # the MAX_DYNAMIC_SHARED_SIZE_BYTES set so far (0: not set)


@dataclass
class HostRun:
    """The host statements of one lowered function, run against the device. With
    `synchronize_each`, each launch is waited for, so that a fault names its kernel."""

    device: Device
    program: Any  # tirc.codegen.cuda.kernels.DeviceProgram
    functions: list[Any]  # CUfunction per kernel
    name: str = "the function"
    values: dict[E.Var, Value] = field(default_factory=dict)  # scalars, and device pointers
    synchronize_each: bool = False
    launches: int = 0  # launches made by this call
    facts: dict[int, _KernelFacts] = field(default_factory=dict)

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
        """Launches a KernelLaunch: its kernel, with its arguments evaluated here, after
        checking its grid, block and shared memory against the device's limits."""
        from tirc.codegen.cuda.kernel import dynamic_shared_layout

        kernel = self.program.kernels[node.index]

        def extent(tag: str) -> int:
            value = kernel.dims.get(tag)
            if value is None:
                return 1
            return int(self.evaluate(kernel.at_launch(value, node), f"the launch of {kernel.name}"))

        grid = (extent("blockIdx.x"), extent("blockIdx.y"), extent("blockIdx.z"))
        block = (extent("threadIdx.x"), extent("threadIdx.y"), extent("threadIdx.z"))
        if 0 in grid or 0 in block:
            return  # an empty grid: nothing to do
        _, shared_bytes = dynamic_shared_layout(kernel)
        shared_bytes = kernel.at_launch(shared_bytes, node)
        shared = int(self.evaluate(shared_bytes, f"the shared memory of {kernel.name}"))
        function = self.functions[node.index]
        self._check_launch(node.index, kernel.name, grid, block, shared)
        values: list[object] = []
        kinds: list[Any] = []
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
        self.launches += 1
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
        if self.synchronize_each:
            try:
                self.device.call("cuStreamSynchronize", stream)
            except CudaError as error:
                if not error.is_fault:
                    raise
                raise DiagnosticError.at(
                    None,
                    f"kernel {kernel.name} faulted on the GPU (launch {self.launches} of "
                    f"{self.name}, grid {_dims(grid)}, block {_dims(block)}): {error.text}",
                    Note(COMPUTE_SANITIZER),
                ) from None

    def _check_launch(
        self,
        index: int,
        name: str,
        grid: tuple[int, int, int],
        block: tuple[int, int, int],
        shared: int,
    ) -> None:
        """A DiagnosticError naming the kernel when its launch asks for more than the device
        has; opts in to more than the default shared memory when it needs it."""
        limits = self.device.limits
        facts = self._facts(index)
        for kind, sizes, most in (
            ("blockIdx", grid, limits.grid),
            ("threadIdx", block, limits.block),
        ):
            for axis, size, limit in zip("xyz", sizes, most, strict=True):
                if size < 0 or size > limit:
                    raise DiagnosticError.at(
                        None,
                        f"kernel {name} launches {size} along {kind}.{axis}, but the device "
                        f"allows at most {limit}",
                    )
        threads = block[0] * block[1] * block[2]
        if threads > facts.max_threads:
            reason = (
                f"the device allows {limits.threads_per_block}"
                if facts.max_threads >= limits.threads_per_block
                else f"with its {facts.registers} registers a thread it can run "
                f"{facts.max_threads} (the device allows {limits.threads_per_block})"
            )
            raise DiagnosticError.at(
                None,
                f"kernel {name} launches {threads} threads a block ({_dims(block)}), but {reason}",
            )
        total = facts.static_shared + shared
        if total > limits.shared_optin:
            raise DiagnosticError.at(
                None,
                f"kernel {name} needs {total} bytes of shared memory a block "
                f"({facts.static_shared} static + {shared} dynamic), but the device "
                f"({self.device.arch}) allows at most {limits.shared_optin}",
                Note("stage smaller tiles in shared memory, or fewer of them"),
            )
        if total > limits.shared_per_block and shared > facts.dynamic_shared:
            attribute = self.device.driver.CUfunction_attribute
            self.device.call(
                "cuFuncSetAttribute",
                self.functions[index],
                attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                shared,
            )
            facts.dynamic_shared = shared

    def _facts(self, index: int) -> _KernelFacts:
        if index not in self.facts:
            function = self.functions[index]
            self.facts[index] = _KernelFacts(
                self.device.function_attribute(function, "SHARED_SIZE_BYTES"),
                self.device.function_attribute(function, "MAX_THREADS_PER_BLOCK"),
                self.device.function_attribute(function, "NUM_REGS"),
                0,
            )
        return self.facts[index]


def _dims(sizes: tuple[int, int, int]) -> str:
    return " x ".join(str(size) for size in sizes)


def _literal(var: E.Var, value: int | float | bool) -> E.PrimExpr:
    if var.dtype.is_float:
        return E.FloatImm(float(value), var.dtype)
    return E.IntImm(int(value), var.dtype)


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
            host.values[buffer.data] = _Pointer(pointer)
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
        host.values[param.var] = _Pointer(pointer)
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

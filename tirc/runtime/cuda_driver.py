"""The CUDA driver API as tirc uses it (cuda-python's `cuda.bindings.driver`): the first device
with its primary context current, checked calls whose failures are DiagnosticErrors (a kernel
fault named as such), the device's limits, and releases in reverse order that never hide the
error before them. Tests pass a fake driver (tests/runtime/fake_cuda.py) to `Device`."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from types import TracebackType
from typing import Any

from tirc.diagnostics import Diagnostic, DiagnosticError, Note

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
        from cuda.bindings import driver  # deferred: cuda-python is optional
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

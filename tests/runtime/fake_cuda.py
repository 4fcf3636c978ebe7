"""A stand-in for cuda-python's `cuda.bindings.driver` that runs no kernel, for testing the host
side of `tirc run --target cuda` without a GPU.

It holds device memory as bytes (a copy to the device and back returns what went in), loads
PTX only (each `.entry` read for its parameters, static shared memory and `.maxntid`), and
checks every call as the hardware would: launch geometry and shared memory against the limits
of an H100-like device, the argument list against the kernel's `.entry` (count, byte sizes,
integer or float, pointers into live allocations, values that fit their type), copies within
their allocations, handles alive. A call that a real driver would refuse, or that would corrupt
memory or give a kernel garbage on a real GPU, raises `Misuse`: the host should have caught
it first (with a DiagnosticError) or never made it. Calls return tuples `(CUresult, values...)`
like cuda-python's.

Nothing runs on a launch unless `run_kernel` says what it computes (tests write the results a
kernel would into device memory with `write`). A pair of events times the launches queued
between them: `kernel_ms(launch)` each where given, else 0.25 ms for the pair. `FakeGpu` opens
such a device in another process (the tuner's candidates) and logs its launches to a file.

`FakeDriver(emulate=True)` runs each launch's kernel in the CUDA emulator
(tests/runtime/cuda_emulator: the CUDA C compiled for the CPU): device memory is then host
memory whose addresses are the device pointers, a module loads the CUDA C that
`emulated_sources` recorded for its PTX, and a launch runs the kernel with the launch's grid,
block, dynamic shared memory and kernelParams as the host built them. A kernel that crashes
faults as `fault_in` does (its message in `faults`); one that deadlocks raises.

`FakeDriver(fault_in="k")` makes kernel `k` fault as an illegal address would: the launch
succeeds, the next synchronizing call returns CUDA_ERROR_ILLEGAL_ADDRESS, and so does every
call after it (the context is lost), as on a GPU. `fail={"cuMemFree": CUresult.X}` makes the
first call of that name fail.
"""

from __future__ import annotations

import ctypes
import enum
import json
import math
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tests.runtime.cuda_emulator import DeviceMemory, KernelFault, Unsupported, compile_cuda

# the most threads (grid times block) one emulated launch may have: about a minute of a busy CPU
EMULATED_THREADS = 1 << 21


class Misuse(AssertionError):
    """The host called the driver in a way a GPU would refuse or be hurt by."""


class CUresult(enum.IntEnum):
    CUDA_SUCCESS = 0
    CUDA_ERROR_INVALID_VALUE = 1
    CUDA_ERROR_OUT_OF_MEMORY = 2
    CUDA_ERROR_INVALID_IMAGE = 200
    CUDA_ERROR_INVALID_PTX = 218
    CUDA_ERROR_INVALID_HANDLE = 400
    CUDA_ERROR_NOT_FOUND = 500
    CUDA_ERROR_ILLEGAL_ADDRESS = 700
    CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES = 701
    CUDA_ERROR_LAUNCH_FAILED = 719


ERROR_STRINGS = {
    CUresult.CUDA_SUCCESS: "no error",
    CUresult.CUDA_ERROR_INVALID_VALUE: "invalid argument",
    CUresult.CUDA_ERROR_OUT_OF_MEMORY: "out of memory",
    CUresult.CUDA_ERROR_INVALID_IMAGE: "device kernel image is invalid",
    CUresult.CUDA_ERROR_INVALID_PTX: "a PTX JIT compilation failed",
    CUresult.CUDA_ERROR_INVALID_HANDLE: "invalid resource handle",
    CUresult.CUDA_ERROR_NOT_FOUND: "named symbol not found",
    CUresult.CUDA_ERROR_ILLEGAL_ADDRESS: "an illegal memory access was encountered",
    CUresult.CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES: "too many resources requested for launch",
    CUresult.CUDA_ERROR_LAUNCH_FAILED: "unspecified launch failure",
}


class CUdevice_attribute(enum.IntEnum):  # noqa: N801  (cuda-python's name)
    CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 1
    CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X = 2
    CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y = 3
    CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z = 4
    CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X = 5
    CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y = 6
    CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z = 7
    CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK = 8
    CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75
    CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76
    CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = 97


class CUfunction_attribute(enum.IntEnum):  # noqa: N801
    CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 0
    CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES = 1
    CU_FUNC_ATTRIBUTE_NUM_REGS = 4
    CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8


# an H100 (sm_90): 1024 threads a block, 48 KiB of shared memory without opting in, 227 KiB with
H100 = {
    CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK: 1024,
    CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X: 1024,
    CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y: 1024,
    CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z: 64,
    CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X: 2**31 - 1,
    CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y: 65535,
    CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z: 65535,
    CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK: 48 * 1024,
    CUdevice_attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: 9,
    CUdevice_attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: 0,
    CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: 227 * 1024,
}


@dataclass(frozen=True)
class Handle:
    """A driver object (CUcontext, CUmodule, ...): its kind and a number."""

    kind: str
    number: int

    def __int__(self) -> int:
        return self.number


@dataclass(frozen=True)
class _Integer:
    """A cuda-python wrapper of one integer (a device pointer, a cuuint64_t): the driver's
    checks want the exact wrapper a parameter is declared with, and read the number by int()."""

    value: int

    def __int__(self) -> int:
        return self.value


class CUdeviceptr(_Integer):
    pass


# -- PTX ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Param:
    """One `.param` of an `.entry`: `.u64`, `.f32`, ... (`kind` u, s, b or f), its bytes, and
    whether LLVM marked it `.ptr`."""

    name: str
    kind: str
    bytes: int
    is_pointer: bool


@dataclass(frozen=True)
class Entry:
    name: str
    params: tuple[Param, ...]
    static_shared: int  # bytes of `.shared` it declares or uses
    max_threads: int | None  # `.maxntid` / `.reqntid`, multiplied out


_ENTRY = re.compile(r"\.entry\s+([\w$]+)\s*\(([^)]*)\)([^{]*)\{")
_PARAM = re.compile(r"\.param\s+(.*?)\s*([\w$]+)\s*((?:\[\d+\])*)\s*$", re.S)
_TYPE = re.compile(r"\.([busf])(8|16|32|64)\b")
_SHARED = re.compile(
    r"^\s*\.shared\s+(?:\.align\s+\d+\s+)?(?:\.v(\d)\s+)?\.[busf](8|16|32|64)\s+([\w$]+)"
    r"((?:\[\d+\])*)\s*;",
    re.M,
)


_EXTERN_FUNCTION = re.compile(r"\.extern\s+\.func\s+(?:\([^)]*\)\s*)?([A-Za-z_$][\w$]*)")
DRIVER_FUNCTIONS = frozenset({"vprintf", "malloc", "free", "__assertfail"})


def parse_ptx(text: str) -> dict[str, Entry]:
    """The `.entry` functions of a PTX module."""
    module_shared = {
        match.group(3): _shared_bytes(match) for match in _SHARED.finditer(_module_scope(text))
    }
    entries = {}
    for match in _ENTRY.finditer(text):
        name, params_text, directives = match.groups()
        params = tuple(
            _param(part) for part in params_text.split(",") if part.strip().startswith(".param")
        )
        body = _body(text, match.end() - 1)
        shared = sum(_shared_bytes(found) for found in _SHARED.finditer(body))
        shared += sum(
            size for symbol, size in module_shared.items() if re.search(re.escape(symbol), body)
        )
        entries[name] = Entry(name, params, shared, _max_threads(directives))
    return entries


def _param(text: str) -> Param:
    match = _PARAM.search(text.strip())
    if match is None:
        raise Misuse(f"cannot read the PTX parameter {text.strip()!r}")
    qualifiers, name, dims = match.groups()
    kind = _TYPE.search(qualifiers)
    if kind is None:
        raise Misuse(f"no type in the PTX parameter {text.strip()!r}")
    count = 1
    for dim in re.findall(r"\d+", dims):
        count *= int(dim)
    return Param(name, kind.group(1), int(kind.group(2)) // 8 * count, ".ptr" in qualifiers)


def _shared_bytes(match: re.Match[str]) -> int:
    lanes, bits, _, dims = match.groups()
    count = int(lanes or 1)
    for dim in re.findall(r"\d+", dims):
        count *= int(dim)
    return int(bits) // 8 * count


def _body(text: str, start: int) -> str:
    depth = 0
    for index in range(start, len(text)):
        if text[index] == "{":
            depth += 1
        elif text[index] == "}":
            depth -= 1
            if depth == 0:
                return text[start : index + 1]
    raise Misuse("an .entry without its closing brace")


def _module_scope(text: str) -> str:
    """The PTX outside every function body."""
    parts, depth = [], 0
    for line in text.splitlines():
        if depth == 0:
            parts.append(line)
        depth += line.count("{") - line.count("}")
    return "\n".join(parts)


def _max_threads(directives: str) -> int | None:
    match = re.search(
        r"\.(?:maxntid|reqntid)\s+(\d+)(?:\s*,\s*(\d+))?(?:\s*,\s*(\d+))?", directives
    )
    if match is None:
        return None
    total = 1
    for value in match.groups():
        total *= int(value or 1)
    return total


# -- tensor maps (cuTensorMapEncodeTiled) -------------------------------------------------------


class cuuint64_t(_Integer):  # noqa: N801  (cuda-python's names)
    pass


class cuuint32_t(_Integer):  # noqa: N801
    pass


class CUtensorMapDataType(enum.IntEnum):  # noqa: N801
    CU_TENSOR_MAP_DATA_TYPE_UINT8 = 0
    CU_TENSOR_MAP_DATA_TYPE_UINT16 = 1
    CU_TENSOR_MAP_DATA_TYPE_UINT32 = 2
    CU_TENSOR_MAP_DATA_TYPE_INT32 = 3
    CU_TENSOR_MAP_DATA_TYPE_UINT64 = 4
    CU_TENSOR_MAP_DATA_TYPE_INT64 = 5
    CU_TENSOR_MAP_DATA_TYPE_FLOAT16 = 6
    CU_TENSOR_MAP_DATA_TYPE_FLOAT32 = 7
    CU_TENSOR_MAP_DATA_TYPE_FLOAT64 = 8
    CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 = 9


TENSOR_MAP_BYTES = {0: 1, 1: 2, 2: 4, 3: 4, 4: 8, 5: 8, 6: 2, 7: 4, 8: 8, 9: 2}


class CUtensorMapInterleave(enum.IntEnum):  # noqa: N801
    CU_TENSOR_MAP_INTERLEAVE_NONE = 0


class CUtensorMapSwizzle(enum.IntEnum):  # noqa: N801
    CU_TENSOR_MAP_SWIZZLE_NONE = 0
    CU_TENSOR_MAP_SWIZZLE_32B = 1
    CU_TENSOR_MAP_SWIZZLE_64B = 2
    CU_TENSOR_MAP_SWIZZLE_128B = 3


class CUtensorMapL2promotion(enum.IntEnum):  # noqa: N801
    CU_TENSOR_MAP_L2_PROMOTION_NONE = 0
    CU_TENSOR_MAP_L2_PROMOTION_L2_128B = 2


class CUtensorMapFloatOOBfill(enum.IntEnum):  # noqa: N801
    CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE = 0


@dataclass(frozen=True)
class CUtensorMap:
    """What a map was encoded from (innermost dimension first, as the driver takes it)."""

    dtype: CUtensorMapDataType
    address: int
    dims: tuple[int, ...]
    strides: tuple[int, ...]  # bytes, of dimensions 1 and up
    box: tuple[int, ...]
    swizzle: CUtensorMapSwizzle

    def getPtr(self) -> int:  # noqa: N802
        return id(self)


# -- the driver --------------------------------------------------------------------------------


@dataclass
class Allocation:
    address: int
    data: bytearray | memoryview
    live: bool = True
    memory: Any = None  # with emulate: the DeviceMemory behind `data`


@dataclass
class Function:
    entry: Entry
    module: Handle
    max_dynamic_shared: int  # CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES


@dataclass(frozen=True)
class Launch:
    kernel: str
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    dynamic_shared: int
    args: tuple[tuple[str, object], ...]  # (the .entry's type, e.g. "u64", the value)


@dataclass
class FakeDriver:
    """The fake `cuda.bindings.driver`: pass it as `Device(driver=FakeDriver(), load_ptx=True)`."""

    attributes: dict[CUdevice_attribute, int] = field(default_factory=lambda: dict(H100))
    fault_in: str | None = None  # the kernel that faults
    fail: dict[str, CUresult] = field(default_factory=dict)  # a call's first result
    run_kernel: Callable[[FakeDriver, Launch], None] | None = None  # what a launch computes
    kernel_ms: Callable[[Launch], float] | None = None  # a launch's milliseconds on the device
    log: str | None = None  # a file to append each launch to, a JSON line
    emulate: bool = False  # run kernels in the CUDA emulator (see the module's docstring)
    sources: dict[str, str] = field(default_factory=dict)  # with emulate: PTX -> its CUDA C
    libraries: dict[Handle, Any] = field(default_factory=dict)  # with emulate: module -> .so
    faults: list[str] = field(default_factory=list)  # with emulate: kernels that crashed
    calls: list[str] = field(default_factory=list)  # every call's name, in order
    launches: list[Launch] = field(default_factory=list)
    tensor_maps: list[CUtensorMap] = field(default_factory=list)
    copies: list[tuple[str, int, int]] = field(default_factory=list)  # (direction, address, n)
    function_attributes: list[tuple[str, CUfunction_attribute, int]] = field(default_factory=list)
    allocations: dict[int, Allocation] = field(default_factory=dict)
    modules: dict[Handle, dict[str, Entry]] = field(default_factory=dict)
    functions: dict[Handle, Function] = field(default_factory=dict)
    streams: set[Handle] = field(default_factory=set)
    events: set[Handle] = field(default_factory=set)
    recorded: dict[Handle, int] = field(default_factory=dict)  # event: launches queued before it
    pending: CUresult = CUresult.CUDA_SUCCESS  # an asynchronous fault not yet reported
    lost: CUresult = CUresult.CUDA_SUCCESS  # the sticky error of a lost context
    initialized: bool = False
    _next: int = 1
    _next_address: int = 0x7F00_0000_0000

    CUresult = CUresult
    CUdevice_attribute = CUdevice_attribute
    CUfunction_attribute = CUfunction_attribute
    cuuint64_t = cuuint64_t
    cuuint32_t = cuuint32_t
    CUtensorMapDataType = CUtensorMapDataType
    CUtensorMapInterleave = CUtensorMapInterleave
    CUtensorMapSwizzle = CUtensorMapSwizzle
    CUtensorMapL2promotion = CUtensorMapL2promotion
    CUtensorMapFloatOOBfill = CUtensorMapFloatOOBfill

    # -- what a test asks afterwards

    def leaks(self) -> list[str]:
        """What the host did not release."""
        found = [
            f"{len(a.data)} bytes at {a.address:#x}" for a in self.allocations.values() if a.live
        ]
        found += [f"module {m.number}" for m in self.modules]
        found += [f"stream {s.number}" for s in self.streams]
        found += [f"event {e.number}" for e in self.events]
        return found

    def read(self, address: int, nbytes: int) -> bytes:
        allocation, offset = self._find(address, nbytes, "read")
        return bytes(allocation.data[offset : offset + nbytes])

    def write(self, address: int, data: bytes) -> None:
        """What a kernel stores (for `run_kernel`)."""
        allocation, offset = self._find(address, len(data), "write")
        allocation.data[offset : offset + len(data)] = data

    # -- helpers

    def _handle(self, kind: str) -> Handle:
        self._next += 1
        return Handle(kind, self._next)

    def _enter(self, name: str) -> CUresult:
        """The result a call gets before doing anything: a lost context's, or an injected one."""
        self.calls.append(name)
        if not self.initialized and name != "cuInit":
            raise Misuse(f"{name} before cuInit")
        if self.lost != CUresult.CUDA_SUCCESS:
            return self.lost
        return self.fail.pop(name, CUresult.CUDA_SUCCESS)

    def _synchronize(self) -> CUresult:
        if self.pending != CUresult.CUDA_SUCCESS:
            self.lost, self.pending = self.pending, CUresult.CUDA_SUCCESS
        return self.lost

    def _find(self, address: object, nbytes: int, what: str) -> tuple[Allocation, int]:
        value = int(address)  # type: ignore[call-overload]
        for allocation in self.allocations.values():
            end = allocation.address + len(allocation.data)
            if allocation.address <= value < end or (value == end and nbytes == 0):
                if not allocation.live:
                    raise Misuse(f"{what}: {value:#x} lies in freed memory")
                offset = value - allocation.address
                if offset + nbytes > len(allocation.data):
                    raise Misuse(
                        f"{what}: {nbytes} bytes at offset {offset} of an allocation of "
                        f"{len(allocation.data)} bytes"
                    )
                return allocation, offset
        raise Misuse(f"{what}: {value:#x} is not device memory")

    def _check(self, handle: object, kind: str, live: object) -> Handle:
        if not isinstance(handle, Handle) or handle.kind != kind:
            raise Misuse(f"expected a {kind}, got {handle!r}")
        if handle not in live:  # type: ignore[operator]
            raise Misuse(f"{kind} {handle.number} is not alive")
        return handle

    # -- the driver API

    def cuInit(self, flags: int) -> tuple[CUresult]:  # noqa: N802
        self.calls.append("cuInit")
        self.initialized = True
        return (CUresult.CUDA_SUCCESS,)

    def cuGetErrorName(self, error: CUresult) -> tuple[CUresult, bytes]:  # noqa: N802
        return CUresult.CUDA_SUCCESS, CUresult(error).name.encode()

    def cuGetErrorString(self, error: CUresult) -> tuple[CUresult, bytes]:  # noqa: N802
        return CUresult.CUDA_SUCCESS, ERROR_STRINGS[CUresult(error)].encode()

    def cuDeviceGet(self, ordinal: int) -> tuple[CUresult, Handle | None]:  # noqa: N802
        error = self._enter("cuDeviceGet")
        if ordinal != 0:
            raise Misuse(f"there is one device, not {ordinal + 1}")
        return error, Handle("CUdevice", 0)

    def cuDeviceGetAttribute(self, attribute: CUdevice_attribute, device: Handle) -> tuple:  # noqa: N802
        error = self._enter("cuDeviceGetAttribute")
        return error, self.attributes[CUdevice_attribute(attribute)]

    def cuDevicePrimaryCtxRetain(self, device: Handle) -> tuple:  # noqa: N802
        return self._enter("cuDevicePrimaryCtxRetain"), Handle("CUcontext", 1)

    def cuCtxSetCurrent(self, context: Handle) -> tuple:  # noqa: N802
        return (self._enter("cuCtxSetCurrent"),)

    def cuCtxSynchronize(self) -> tuple:  # noqa: N802
        error = self._enter("cuCtxSynchronize")
        return (error if error != CUresult.CUDA_SUCCESS else self._synchronize(),)

    def cuMemAlloc(self, nbytes: int) -> tuple:  # noqa: N802
        error = self._enter("cuMemAlloc")
        if error != CUresult.CUDA_SUCCESS:
            return error, None
        if not isinstance(nbytes, int) or isinstance(nbytes, bool) or nbytes <= 0:
            raise Misuse(f"cuMemAlloc({nbytes!r}): the size must be a positive int")
        if self.emulate:
            memory = DeviceMemory(nbytes)
            self.allocations[memory.address] = Allocation(memory.address, memory.view, True, memory)
            return CUresult.CUDA_SUCCESS, CUdeviceptr(memory.address)
        address = self._next_address
        self._next_address += (nbytes + 511) // 512 * 512 + 512  # a gap between allocations
        self.allocations[address] = Allocation(address, bytearray(nbytes))
        return CUresult.CUDA_SUCCESS, CUdeviceptr(address)

    def cuMemFree(self, pointer: CUdeviceptr) -> tuple:  # noqa: N802
        error = self._enter("cuMemFree")
        if error != CUresult.CUDA_SUCCESS:
            return (error,)
        allocation = self.allocations.get(int(pointer))
        if allocation is None or not allocation.live:
            raise Misuse(f"cuMemFree({int(pointer):#x}): not a live allocation")
        allocation.live = False
        if allocation.memory is not None:
            allocation.memory.free()
        return (CUresult.CUDA_SUCCESS,)

    def cuMemcpyHtoD(self, destination: CUdeviceptr, source: int, nbytes: int) -> tuple:  # noqa: N802
        error = self._enter("cuMemcpyHtoD")
        if error != CUresult.CUDA_SUCCESS:
            return (error,)
        allocation, offset = self._find(destination, nbytes, "cuMemcpyHtoD")
        self.copies.append(("HtoD", int(destination), nbytes))
        view = (ctypes.c_char * nbytes).from_buffer(allocation.data, offset)
        ctypes.memmove(view, source, nbytes)
        return (CUresult.CUDA_SUCCESS,)

    def cuMemcpyDtoH(self, destination: int, source: CUdeviceptr, nbytes: int) -> tuple:  # noqa: N802
        error = self._enter("cuMemcpyDtoH")
        if error == CUresult.CUDA_SUCCESS:
            error = self._synchronize()  # a synchronous copy waits for the launches before it
        if error != CUresult.CUDA_SUCCESS:
            return (error,)
        allocation, offset = self._find(source, nbytes, "cuMemcpyDtoH")
        self.copies.append(("DtoH", int(source), nbytes))
        view = (ctypes.c_char * nbytes).from_buffer(allocation.data, offset)
        ctypes.memmove(destination, view, nbytes)
        return (CUresult.CUDA_SUCCESS,)

    def cuModuleLoadData(self, image: bytes) -> tuple:  # noqa: N802
        error = self._enter("cuModuleLoadData")
        if error != CUresult.CUDA_SUCCESS:
            return error, None
        if not isinstance(image, bytes) or not image.endswith(b"\0"):
            raise Misuse("the fake driver loads NUL-terminated PTX only (Device(load_ptx=True))")
        if image.startswith(b"\x7fELF"):
            raise Misuse("the fake driver cannot read a cubin: Device(load_ptx=True)")
        text = image[:-1].decode()
        entries = parse_ptx(text)
        if not entries:
            return CUresult.CUDA_ERROR_INVALID_IMAGE, None
        unresolved = set(_EXTERN_FUNCTION.findall(text)) - DRIVER_FUNCTIONS
        if unresolved:  # the JIT links nothing but the driver's own
            return CUresult.CUDA_ERROR_INVALID_PTX, None
        module = self._handle("CUmodule")
        if self.emulate:
            if text not in self.sources:
                raise Misuse("emulate: no CUDA C recorded for this PTX (use emulated_sources)")
            self.libraries[module] = compile_cuda(self.sources[text])
        self.modules[module] = entries
        return CUresult.CUDA_SUCCESS, module

    def cuModuleUnload(self, module: Handle) -> tuple:  # noqa: N802
        error = self._enter("cuModuleUnload")
        if error != CUresult.CUDA_SUCCESS:
            return (error,)
        self._check(module, "CUmodule", self.modules)
        del self.modules[module]
        self.libraries.pop(module, None)
        for handle in [h for h, f in self.functions.items() if f.module == module]:
            del self.functions[handle]
        return (CUresult.CUDA_SUCCESS,)

    def cuModuleGetFunction(self, module: Handle, name: bytes) -> tuple:  # noqa: N802
        error = self._enter("cuModuleGetFunction")
        if error != CUresult.CUDA_SUCCESS:
            return error, None
        entries = self.modules[self._check(module, "CUmodule", self.modules)]
        if not isinstance(name, bytes):
            raise Misuse(f"cuModuleGetFunction wants the name as bytes, got {name!r}")
        entry = entries.get(name.decode())
        if entry is None:
            return CUresult.CUDA_ERROR_NOT_FOUND, None
        function = self._handle("CUfunction")
        default = self.attributes[
            CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK
        ]
        self.functions[function] = Function(entry, module, default - entry.static_shared)
        return CUresult.CUDA_SUCCESS, function

    def cuFuncGetAttribute(self, attribute: CUfunction_attribute, function: Handle) -> tuple:  # noqa: N802
        error = self._enter("cuFuncGetAttribute")
        if error != CUresult.CUDA_SUCCESS:
            return error, None
        found = self.functions[self._check(function, "CUfunction", self.functions)]
        threads = self.attributes[CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK]
        values = {
            CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK: min(
                threads, found.entry.max_threads or threads
            ),
            CUfunction_attribute.CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES: found.entry.static_shared,
            CUfunction_attribute.CU_FUNC_ATTRIBUTE_NUM_REGS: 32,
            CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES: (
                found.max_dynamic_shared
            ),
        }
        return CUresult.CUDA_SUCCESS, values[CUfunction_attribute(attribute)]

    def cuFuncSetAttribute(  # noqa: N802
        self, function: Handle, attribute: CUfunction_attribute, value: int
    ) -> tuple:
        error = self._enter("cuFuncSetAttribute")
        if error != CUresult.CUDA_SUCCESS:
            return (error,)
        found = self.functions[self._check(function, "CUfunction", self.functions)]
        attribute = CUfunction_attribute(attribute)
        if attribute != CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES:
            raise Misuse(f"the fake driver does not set {attribute.name}")
        optin = self.attributes[
            CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN
        ]
        if not isinstance(value, int) or value < 0 or value + found.entry.static_shared > optin:
            return (CUresult.CUDA_ERROR_INVALID_VALUE,)  # what the issue saw on the H200
        found.max_dynamic_shared = value
        self.function_attributes.append((found.entry.name, attribute, value))
        return (CUresult.CUDA_SUCCESS,)

    def cuStreamCreate(self, flags: int) -> tuple:  # noqa: N802
        error = self._enter("cuStreamCreate")
        if error != CUresult.CUDA_SUCCESS:
            return error, None
        stream = self._handle("CUstream")
        self.streams.add(stream)
        return CUresult.CUDA_SUCCESS, stream

    def cuStreamSynchronize(self, stream: Handle) -> tuple:  # noqa: N802
        error = self._enter("cuStreamSynchronize")
        if error != CUresult.CUDA_SUCCESS:
            return (error,)
        self._check(stream, "CUstream", self.streams)
        return (self._synchronize(),)

    def cuStreamDestroy(self, stream: Handle) -> tuple:  # noqa: N802
        error = self._enter("cuStreamDestroy")
        if error != CUresult.CUDA_SUCCESS:
            return (error,)
        self.streams.remove(self._check(stream, "CUstream", self.streams))
        return (CUresult.CUDA_SUCCESS,)

    def cuEventCreate(self, flags: int) -> tuple:  # noqa: N802
        error = self._enter("cuEventCreate")
        if error != CUresult.CUDA_SUCCESS:
            return error, None
        event = self._handle("CUevent")
        self.events.add(event)
        return CUresult.CUDA_SUCCESS, event

    def cuEventRecord(self, event: Handle, stream: Handle) -> tuple:  # noqa: N802
        error = self._enter("cuEventRecord")
        if error == CUresult.CUDA_SUCCESS:
            self._check(event, "CUevent", self.events)
            self._check(stream, "CUstream", self.streams)
            self.recorded[event] = len(self.launches)
        return (error,)

    def cuEventSynchronize(self, event: Handle) -> tuple:  # noqa: N802
        error = self._enter("cuEventSynchronize")
        if error != CUresult.CUDA_SUCCESS:
            return (error,)
        self._check(event, "CUevent", self.events)
        return (self._synchronize(),)

    def cuEventElapsedTime(self, start: Handle, end: Handle) -> tuple:  # noqa: N802
        error = self._enter("cuEventElapsedTime")
        self._check(start, "CUevent", self.events)
        self._check(end, "CUevent", self.events)
        if start not in self.recorded or end not in self.recorded:
            raise Misuse("cuEventElapsedTime: an event that was never recorded")
        if self.kernel_ms is None:
            return error, 0.25  # milliseconds
        between = self.launches[self.recorded[start] : self.recorded[end]]
        return error, sum(self.kernel_ms(launch) for launch in between)

    def cuEventDestroy(self, event: Handle) -> tuple:  # noqa: N802
        error = self._enter("cuEventDestroy")
        if error != CUresult.CUDA_SUCCESS:
            return (error,)
        self.events.remove(self._check(event, "CUevent", self.events))
        self.recorded.pop(event, None)
        return (CUresult.CUDA_SUCCESS,)

    def cuTensorMapEncodeTiled(  # noqa: N802
        self,
        dtype: Any,
        rank: int,
        address: object,
        dims: list[Any],
        strides: list[Any],
        box: list[Any],
        element_strides: list[Any],
        interleave: Any,
        swizzle: Any,
        l2_promotion: Any,
        oob_fill: Any,
    ) -> tuple:
        """Checks the map as the driver documents its requirements."""
        error = self._enter("cuTensorMapEncodeTiled")
        if error != CUresult.CUDA_SUCCESS:
            return error, None
        where = "cuTensorMapEncodeTiled"
        for name, values, kind in (
            ("globalDim", dims, cuuint64_t),
            ("globalStrides", strides, cuuint64_t),
            ("boxDim", box, cuuint32_t),
            ("elementStrides", element_strides, cuuint32_t),
        ):
            if not all(isinstance(value, kind) for value in values):
                raise Misuse(f"{where}: {name} must be a list of {kind.__name__}, got {values!r}")
        if not (isinstance(rank, int) and 1 <= rank <= 5):
            raise Misuse(f"{where}: rank {rank!r}")
        if (len(dims), len(strides), len(box), len(element_strides)) != (
            rank,
            rank - 1,
            rank,
            rank,
        ):
            raise Misuse(f"{where}: {len(dims)} dims, {len(strides)} strides for rank {rank}")
        if not isinstance(address, int) or address % 16:
            raise Misuse(f"{where}: the global address {address!r} is not a 16-byte aligned int")
        element = TENSOR_MAP_BYTES[CUtensorMapDataType(dtype)]
        extents = [int(value) for value in dims]
        steps = [int(value) for value in strides]
        size = element * extents[0]
        for extent, step in zip(extents[1:], steps, strict=True):
            if step % 16 or step < size:
                raise Misuse(f"{where}: stride {step} (bytes) for dims {extents}")
            size = step * extent
        self._find(address, size, where)
        tile = [int(value) for value in box]
        if not all(1 <= extent <= 256 for extent in tile) or tile[0] * element % 16:
            raise Misuse(f"{where}: box {tile}")
        span = {1: 32, 2: 64, 3: 128}.get(int(swizzle))
        if span is not None and tile[0] * element > span:
            raise Misuse(f"{where}: a box row of {tile[0] * element} bytes with swizzle {span}")
        if any(int(value) != 1 for value in element_strides):
            raise Misuse(f"{where}: element strides {element_strides}")
        made = CUtensorMap(
            CUtensorMapDataType(dtype),
            address,
            tuple(extents),
            tuple(steps),
            tuple(tile),
            CUtensorMapSwizzle(swizzle),
        )
        self.tensor_maps.append(made)
        return CUresult.CUDA_SUCCESS, made

    def cuLaunchKernel(  # noqa: N802
        self,
        function: Handle,
        grid_x: int,
        grid_y: int,
        grid_z: int,
        block_x: int,
        block_y: int,
        block_z: int,
        shared: int,
        stream: Handle,
        params: Any,
        extra: Any,
    ) -> tuple:
        error = self._enter("cuLaunchKernel")
        if error != CUresult.CUDA_SUCCESS:
            return (error,)
        found = self.functions[self._check(function, "CUfunction", self.functions)]
        entry = found.entry
        self._check(stream, "CUstream", self.streams)
        grid, block = (grid_x, grid_y, grid_z), (block_x, block_y, block_z)
        self._check_geometry(entry, grid, block)
        self._check_shared(found, shared)
        if extra not in (0, None):
            raise Misuse(f"{entry.name}: the fake driver takes kernelParams, not extra")
        args = self._check_arguments(entry, params)
        launch = Launch(entry.name, grid, block, shared, args)
        self.launches.append(launch)
        if self.log is not None:
            record = {"pid": os.getpid(), "kernel": entry.name, "grid": grid, "block": block}
            with open(self.log, "a") as file:
                file.write(json.dumps(record) + "\n")
        if self.run_kernel is not None:
            self.run_kernel(self, launch)
        elif self.emulate:
            self._emulate(found, launch, params[0], params[1])
        if entry.name == self.fault_in:
            self.pending = CUresult.CUDA_ERROR_ILLEGAL_ADDRESS
        return (CUresult.CUDA_SUCCESS,)

    def _emulate(self, found: Function, launch: Launch, values: Any, kinds: Any) -> None:
        """Runs the launch's kernel in the emulator on kernelParams as the host built them."""
        arguments = []
        for value, kind in zip(values, kinds, strict=True):
            if kind is None:
                raise Misuse(f"{launch.kernel}: the emulator cannot run TMA (a tensor map)")
            if issubclass(kind, (ctypes.Array, ctypes.Structure)):
                arguments.append(kind.from_buffer_copy(bytes(value)))
            elif kind is ctypes.c_void_p:
                arguments.append(kind(int(value)))
            else:
                arguments.append(kind(value))
        threads = math.prod(launch.grid) * math.prod(launch.block)
        if threads > EMULATED_THREADS:
            raise Unsupported(
                f"{launch.kernel}: {threads} threads, more than the emulator runs in a test "
                f"({EMULATED_THREADS})"
            )
        library = self.libraries[found.module]
        sizes = library.parameter_bytes(launch.kernel)
        given = [ctypes.sizeof(argument) for argument in arguments]
        if sizes != given:
            raise Misuse(
                f"{launch.kernel}: the CUDA C takes parameters of {sizes} bytes, the PTX's "
                f".entry (which the host followed) {given}"
            )
        try:
            library.launch(
                launch.kernel, launch.grid, launch.block, launch.dynamic_shared, arguments
            )
        except KernelFault as fault:
            self.faults.append(str(fault))
            self.pending = CUresult.CUDA_ERROR_ILLEGAL_ADDRESS

    def _check_geometry(
        self, entry: Entry, grid: tuple[int, int, int], block: tuple[int, int, int]
    ) -> None:
        a = CUdevice_attribute
        for axis, (g, b) in zip("xyz", zip(grid, block, strict=True), strict=True):
            for what, value, kind in (("grid", g, "GRID"), ("block", b, "BLOCK")):
                limit = self.attributes[a[f"CU_DEVICE_ATTRIBUTE_MAX_{kind}_DIM_{axis.upper()}"]]
                if not isinstance(value, int) or isinstance(value, bool):
                    raise Misuse(f"{entry.name}: {what}.{axis} is {value!r}, not an int")
                if not 1 <= value <= limit:
                    raise Misuse(f"{entry.name}: {what}.{axis} = {value}, outside [1, {limit}]")
        threads = block[0] * block[1] * block[2]
        limit = self.attributes[a.CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK]
        if entry.max_threads is not None:
            limit = min(limit, entry.max_threads)
        if threads > limit:
            raise Misuse(f"{entry.name}: {threads} threads a block, more than {limit}")

    def _check_shared(self, found: Function, dynamic: int) -> None:
        name = found.entry.name
        if not isinstance(dynamic, int) or dynamic < 0:
            raise Misuse(f"{name}: dynamic shared memory {dynamic!r}")
        if dynamic > found.max_dynamic_shared:
            raise Misuse(
                f"{name}: {dynamic} bytes of dynamic shared memory, but its "
                f"MAX_DYNAMIC_SHARED_SIZE_BYTES is {found.max_dynamic_shared} "
                f"({found.entry.static_shared} static): cuFuncSetAttribute first"
            )

    def _check_arguments(self, entry: Entry, params: Any) -> tuple[tuple[str, object], ...]:
        if not (isinstance(params, tuple) and len(params) == 2):
            raise Misuse(f"{entry.name}: kernelParams must be (values, ctypes types)")
        values, kinds = params
        if len(values) != len(kinds):
            raise Misuse(f"{entry.name}: {len(values)} values but {len(kinds)} types")
        if len(values) != len(entry.params):
            raise Misuse(
                f"{entry.name} takes {len(entry.params)} parameters, the launch gives {len(values)}"
            )
        args: list[tuple[str, object]] = []
        for index, (param, value, kind) in enumerate(zip(entry.params, values, kinds, strict=True)):
            where = f"{entry.name} parameter {index} (.{param.kind}{param.bytes * 8})"
            if kind is None and isinstance(value, CUtensorMap):  # cuda-python's getPtr()
                if param.bytes != 128 or param.kind != "b":
                    raise Misuse(f"{where}: a CUtensorMap (.b8[128]) where the kernel wants this")
                args.append(("tensor map", value))
                continue
            if kind is None or not hasattr(kind, "_type_"):
                raise Misuse(f"{where}: {kind!r} is not a ctypes type")
            if ctypes.sizeof(kind) != param.bytes:
                raise Misuse(f"{where}: given a {kind.__name__} of {ctypes.sizeof(kind)} bytes")
            if issubclass(kind, (ctypes.Array, ctypes.Structure)):  # an aggregate, by value
                if not isinstance(value, (bytes, kind)):
                    raise Misuse(f"{where}: {value!r} is not a {kind.__name__}")
                args.append((f"{param.kind}8[{param.bytes}]", value))
                continue
            is_pointer = kind is ctypes.c_void_p
            is_float = kind in (ctypes.c_float, ctypes.c_double)
            if param.is_pointer and not is_pointer:
                raise Misuse(f"{where}: a pointer, given a {kind.__name__}")
            if param.kind == "f" and not is_float:
                raise Misuse(f"{where}: a float, given a {kind.__name__}")
            if param.kind in "us" and is_float:
                raise Misuse(f"{where}: an integer, given a {kind.__name__}")
            if is_pointer:
                self._find(value, 0, where)
            elif is_float:
                if type(value) not in (float, int):
                    raise Misuse(f"{where}: the value {value!r} is not a Python number")
            else:
                _check_integer(where, kind, value)
            args.append((f"{param.kind}{param.bytes * 8}", value))
        return tuple(args)


def _check_integer(where: str, kind: Any, value: object) -> None:
    if kind is ctypes.c_bool:
        if not isinstance(value, (bool, int)) or value not in (0, 1):
            raise Misuse(f"{where}: {value!r} is not a bool")
        return
    if type(value) is not int:  # numpy integers would pass, but the host evaluates to int
        raise Misuse(f"{where}: {value!r} is not a Python int")
    bits = ctypes.sizeof(kind) * 8
    signed = kind(-1).value == -1
    low, high = (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1) if signed else (0, 2**bits - 1)
    if not low <= value <= high:
        raise Misuse(f"{where}: {value} does not fit a {kind.__name__}")


def fake_device(driver: FakeDriver | None = None) -> Any:
    """A tirc.runtime.cuda_driver.Device over `driver` (a new FakeDriver by default), given PTX."""
    from tirc.runtime.cuda_driver import Device

    return Device(FakeDriver() if driver is None else driver, load_ptx=True)


@dataclass(frozen=True)
class FakeGpu:
    """Opens a fake device in the process that calls it, as the tuner's candidate processes
    open the GPU: picklable where `run_kernel` and `kernel_ms` are module-level functions, and
    each launch goes to `log` for the test in the parent process to read."""

    run_kernel: Callable[[FakeDriver, Launch], None] | None = None
    kernel_ms: Callable[[Launch], float] | None = None
    log: str | None = None

    def __call__(self) -> Any:
        driver = FakeDriver(run_kernel=self.run_kernel, kernel_ms=self.kernel_ms, log=self.log)
        return fake_device(driver)

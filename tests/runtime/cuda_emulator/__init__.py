"""Runs tirc's emitted CUDA C on the CPU, for tests: the .cu compiled as C++ by g++ with
tirc_emu.h (the device model: threads as coroutines, 16-bit floats, shuffles, atomics), each
launch run in a child process (fork) over device memory that is shared host memory, so that a
kernel that faults, hangs or deadlocks is reported and leaves the test process alone.

    library = compile_cuda(source)             # cached by hash under the temporary folder
    library.launch("main_kernel", grid, block, dynamic_shared, values, ctypes_types)

Kernels with inline PTX (`asm`) cannot run here: `inline_asm_reason(source)` says so, and
`compile_cuda` refuses them with `Unsupported`.
"""

from __future__ import annotations

import ctypes
import faulthandler
import hashlib
import mmap
import os
import re
import resource
import select
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HEADER = Path(__file__).with_name("tirc_emu.h")
CACHE = Path(tempfile.gettempdir()) / "tirc-cuda-emulator"
FLAGS = ("-std=c++17", "-O1", "-fPIC", "-shared", "-w", "-D__CUDACC_RTC__", "-fno-strict-aliasing")
LAUNCH_SECONDS = 300.0  # a launch still running after this is reported as a hang (a loop)
PAGE = mmap.PAGESIZE

_KERNEL = re.compile(r'extern "C" __global__ void(?:\s+__\w+__\([^)]*\))*\s+(\w+)\s*\(')
_DYNAMIC_SHARED = re.compile(r"extern __shared__ (?:__align__\(\d+\) )?([\w ]+?)\s*(\w+)\[\];")
_ASM = re.compile(r"\basm\s*(volatile\s*)?\(")
_STUB_HEADERS = ("cuda_fp16.h", "cuda_bf16.h", "cuda_fp8.h", "mma.h", "cuda_runtime.h")


class Unsupported(Exception):
    """The source uses what the emulator does not model (inline PTX)."""


class EmulationError(AssertionError):
    """A launch that a GPU would hang on (a barrier not every thread reaches) or that broke
    the emulator's rules."""


class KernelFault(Exception):
    """A launch that crashed (an access outside device memory, a misaligned vector, a stack
    overflow): what a GPU reports as an illegal address."""


def inline_asm_reason(source: str) -> str | None:
    """Why the emulator cannot run `source`, or None."""
    found = _ASM.search(source)
    if found is None:
        return None
    line = source.count("\n", 0, found.start()) + 1
    return f"inline PTX (`asm` at line {line} of the CUDA C): out of the emulator's scope"


def kernel_names(source: str) -> list[str]:
    return _KERNEL.findall(source)


def emulator_source(source: str) -> str:
    """The .cu as the emulator compiles it: `extern __shared__` arrays become the launch's
    dynamic shared memory, and a launch entry follows each kernel."""
    text = _DYNAMIC_SHARED.sub(
        lambda m: f"{m.group(1)}* {m.group(2)} = ({m.group(1)}*)tirc_emu::dynamic_shared();",
        source,
    )
    entries = [
        f'extern "C" int tirc_emu_launch_{name}(const unsigned* geometry, size_t shared, '
        f"void** params, char* message, size_t size) {{\n"
        f"    return tirc_emu::launch({name}, geometry, shared, params, message, size);\n}}\n"
        f'extern "C" int tirc_emu_params_{name}(size_t* sizes, int n) {{\n'
        f"    return tirc_emu::parameter_bytes({name}, sizes, n);\n}}\n"
        for name in kernel_names(source)
    ]
    return text + "\n" + "".join(entries)


def compile_cuda(source: str) -> Library:
    """A library with each kernel of `source`, compiled once per source (and header)."""
    reason = inline_asm_reason(source)
    if reason is not None:
        raise Unsupported(reason)
    text = emulator_source(source)
    key = hashlib.sha256((HEADER.read_text() + "\0" + text).encode()).hexdigest()[:24]
    CACHE.mkdir(parents=True, exist_ok=True)
    library = CACHE / f"{key}.so"
    if not library.exists():
        _compile(text, library)
    return Library(ctypes.CDLL(str(library)), kernel_names(source))


def _compile(text: str, library: Path) -> None:
    compiler = shutil.which("g++")
    if compiler is None:
        raise Unsupported("the CUDA emulator needs g++")
    stubs = CACHE / "include"
    stubs.mkdir(exist_ok=True)
    for name in _STUB_HEADERS:
        (stubs / name).write_text("#pragma once\n")
    with tempfile.TemporaryDirectory(dir=CACHE) as directory:
        source = Path(directory) / "kernels.cpp"
        source.write_text(text)
        partial = Path(directory) / "kernels.so"
        done = subprocess.run(
            [
                compiler,
                *FLAGS,
                "-I",
                str(stubs),
                "-include",
                str(HEADER),
                str(source),
                "-o",
                str(partial),
            ],
            capture_output=True,
            text=True,
        )
        if done.returncode != 0:
            raise EmulationError(f"g++ rejects the emulated CUDA C:\n{done.stderr[:6000]}")
        os.replace(partial, library)  # atomic: another process may compile the same source


@dataclass
class Library:
    handle: ctypes.CDLL
    kernels: list[str]
    entries: dict[str, Any] = field(default_factory=dict)

    def parameter_bytes(self, kernel: str) -> list[int]:
        """The byte size of each parameter the kernel's CUDA C declares."""
        entry = getattr(self.handle, f"tirc_emu_params_{kernel}")
        entry.restype = ctypes.c_int
        sizes = (ctypes.c_size_t * 256)()
        count = entry(sizes, 256)
        return [int(sizes[i]) for i in range(count)]

    def launch(
        self,
        kernel: str,
        grid: tuple[int, int, int],
        block: tuple[int, int, int],
        dynamic_shared: int,
        params: list[ctypes._CData],
    ) -> None:
        """Runs the kernel on a grid in a child process; `params` are the kernel's arguments
        as ctypes objects (what kernelParams points at). Raises EmulationError or KernelFault."""
        entry = self.entries.get(kernel)
        if entry is None:
            entry = getattr(self.handle, f"tirc_emu_launch_{kernel}")
            entry.restype = ctypes.c_int
            entry.argtypes = [
                ctypes.POINTER(ctypes.c_uint),
                ctypes.c_size_t,
                ctypes.POINTER(ctypes.c_void_p),
                ctypes.c_char_p,
                ctypes.c_size_t,
            ]
            self.entries[kernel] = entry
        geometry = (ctypes.c_uint * 6)(*grid, *block)
        pointers = (ctypes.c_void_p * max(1, len(params)))(
            *[ctypes.cast(ctypes.pointer(p), ctypes.c_void_p) for p in params]
        )
        message = ctypes.create_string_buffer(4096)
        read_end, write_end = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: run, report, leave without Python's cleanup
            status = 3
            try:
                os.close(read_end)
                faulthandler.disable()  # a crash is the parent's to report, without a dump
                signal.signal(signal.SIGSEGV, signal.SIG_DFL)
                signal.signal(signal.SIGBUS, signal.SIG_DFL)
                # killed (SIGXCPU) should its parent be gone before it ends
                limit = int(LAUNCH_SECONDS) + 10
                resource.setrlimit(resource.RLIMIT_CPU, (limit, limit))
                status = entry(geometry, dynamic_shared, pointers, message, len(message))
                os.write(write_end, message.value[:4000])
            finally:
                os._exit(status)
        os.close(write_end)
        _wait(pid, read_end, kernel)


def _wait(pid: int, read_end: int, kernel: str) -> None:
    deadline = time.monotonic() + LAUNCH_SECONDS
    chunks = []
    try:
        while True:
            ready, _, _ = select.select([read_end], [], [], max(0.0, deadline - time.monotonic()))
            if not ready:
                raise EmulationError(
                    f"{kernel}: still running after {LAUNCH_SECONDS:g} s (a hang?)"
                )
            chunk = os.read(read_end, 4096)
            if not chunk:
                break
            chunks.append(chunk)
    except BaseException:  # a hang, or the test interrupted: the child goes too
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        raise
    finally:
        os.close(read_end)
    _, status = os.waitpid(pid, 0)
    text = b"".join(chunks).decode(errors="replace")
    if os.WIFSIGNALED(status):
        name = signal.Signals(os.WTERMSIG(status)).name
        raise KernelFault(f"{kernel}: {name} (an access outside device memory?)")
    code = os.WEXITSTATUS(status)
    if code == 1:
        raise EmulationError(f"{kernel}: {text}")
    if code != 0:
        raise EmulationError(f"{kernel}: the emulated launch failed (exit {code})")


@contextmanager
def emulated_sources(driver: Any, edit: Callable[[str], str] | None = None) -> Iterator[None]:
    """Within it, the PTX that `tirc run --target cuda` makes (tirc.driver.run_cuda) has its
    CUDA C recorded in `driver.sources`, for the emulating fake driver to load: the CUDA C of
    the same lowered module, as NVRTC would compile it (then changed by `edit`, where a test
    plants a bug). CUDA C with inline PTX raises Unsupported before any PTX is made."""
    from unittest import mock

    from tirc.codegen.cuda import emit_cuda
    from tirc.driver import run_cuda

    original = run_cuda.module_ptx

    def module_ptx(
        lowered: Any, *, arch: str, via: str | None, source_name: str = "", opt_level: int = 3
    ) -> str:
        source = emit_cuda(lowered, source_name=source_name)
        reason = inline_asm_reason(source)
        if reason is not None:
            raise Unsupported(reason)
        ptx = original(lowered, arch=arch, via=via, source_name=source_name, opt_level=opt_level)
        driver.sources[ptx] = source if edit is None else edit(source)
        return ptx

    with mock.patch.object(run_cuda, "module_ptx", module_ptx):
        yield


class DeviceMemory:
    """Host memory that a forked launch shares (MAP_SHARED), its address the device pointer,
    with a page after it that faults."""

    def __init__(self, nbytes: int) -> None:
        size = (nbytes + PAGE - 1) // PAGE * PAGE
        self.map = mmap.mmap(-1, size + PAGE)
        self.view = memoryview(self.map)[:nbytes]
        self.address = ctypes.addressof(ctypes.c_char.from_buffer(self.map))
        _protect(self.address + size, PAGE, 0)

    def free(self) -> None:
        """Freed memory faults on any access by a later kernel."""
        _protect(self.address, len(self.map), 0)


def _protect(address: int, nbytes: int, protection: int) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    if libc.mprotect(ctypes.c_void_p(address), nbytes, protection) != 0:
        raise OSError(ctypes.get_errno(), "mprotect")

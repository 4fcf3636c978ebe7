"""`tirc run --target cuda`, the GPU's part: compile for the GPU of this machine, and call.

The module is lowered for cuda (split into host and kernel functions, which the backend
reads). The kernels become one cubin (NVRTC or LLVM for PTX, ptxas for the cubin; without
ptxas the driver compiles the PTX), loaded with the CUDA driver API (cuda-python's
`cuda.bindings.driver`) and run by tirc/runtime/cuda_module.py: each launch's grid, block
and dynamic shared memory evaluated from its arguments and checked against the device's
limits before it goes, the first call synchronized after each launch so that a kernel that
faults is named, `--bench` timed with CUDA events (tirc/driver/run.py says it as GFLOP/s of
the source program or GB/s).

    tirc run samples/gpu/matmul_fp16_tc.tir --plan samples/gpu/matmul_fp16_tc.plan.json \\
        --target cuda -D N=4096 --check --bench

Without cuda-python, without a driver or without a device, the run stops with a
DiagnosticError saying which (exit 1). Tests run all of this against a fake driver
(tests/runtime/fake_cuda.py) through `Device(driver=..., load_ptx=True)`.
"""

from __future__ import annotations

import re
import shutil
from typing import TYPE_CHECKING

import numpy as np

from tirc.diagnostics import Diagnostic, DiagnosticError, Note
from tirc.driver import cuda_toolchain
from tirc.driver.compile_cuda import extern_calls, module_ptx
from tirc.driver.target import parse_target
from tirc.ir.function import IRModule, PrimFunc
from tirc.ir.target import CUDA_ARCHES, Target, arch_number
from tirc.runtime.cuda_driver import Device
from tirc.runtime.throughput import Timing

if TYPE_CHECKING:
    from tirc.runtime.cuda_module import Timer


def pick_arch(target: Target, device_arch: str) -> str:
    """The target's -arch, else the device's, else the newest tirc knows below it."""
    if target.arch:
        return target.arch
    if device_arch in CUDA_ARCHES:
        return device_arch
    number = arch_number(device_arch)
    # arch-specific variants (sm_90a) only where asked for: their code runs on that GPU alone
    known = [arch for arch in CUDA_ARCHES if arch[-1].isdigit() and arch_number(arch) <= number]
    return known[-1] if known else CUDA_ARCHES[0]


def module_image(
    lowered: IRModule,
    arch: str,
    *,
    ptx: bool = False,
    opt_level: int | None = None,
    via: str | None = None,
) -> bytes:
    """A cubin (through ptxas) or, with `ptx` or without ptxas, NUL-terminated PTX for the
    driver's JIT, which must then have no function left to link. `via`: how the PTX is made
    (nvrtc or llvm; None: NVRTC where cuda-python has it)."""

    text = module_ptx(lowered, arch=arch, via=via, opt_level=3 if opt_level is None else opt_level)
    externs = extern_calls(lowered)
    if not ptx and shutil.which("ptxas") is not None:
        return cuda_toolchain.cubin_from_ptx(text, arch, externs)
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

    return set(re.findall(r"\.extern\s+\.func\s+(?:\([^)]*\)\s*)?([A-Za-z_$][\w$]*)", ptx))


def run_on_cuda(
    module: IRModule,
    name: str,
    function: PrimFunc,
    target: Target | str,
    args: dict[str, np.ndarray | int],
    *,
    bench: bool = False,
    repeats: int = 20,
    device: Device | None = None,
    opt_level: int | None = None,
    timer: Timer | None = None,
    via: str | None = None,
) -> tuple[float, Timing | None, str]:
    """Runs `name` of the scheduled module on the GPU with `args` (arrays are updated with
    the results). Returns (seconds of the first call, the timing with `bench`, the arch).
    `device` is the GPU to use (default: the first of this machine's); `opt_level` is
    LLVM's, where LLVM makes the PTX; `via` how the PTX is made (nvrtc or llvm; None: NVRTC
    where cuda-python has it); `timer` times the calls instead of a pair of CUDA
    events around each (tirc.runtime.cuda_module.call_on_device)."""
    from tirc.driver.lower import lower_module  # deferred: the transform layer, only when lowering
    from tirc.runtime.cuda_module import call_on_device

    target = parse_target(target)
    device = Device() if device is None else device
    arch = pick_arch(target, device.arch)
    lowered = lower_module(module, target=target, for_backend=True)
    image = module_image(lowered, arch, ptx=device.load_ptx, opt_level=opt_level, via=via)
    elapsed, timing = call_on_device(
        device, lowered, image, name, args, bench=bench, repeats=repeats, timer=timer
    )
    return elapsed, timing, arch

"""What each kernel costs the hardware, as ptxas reports it (`ptxas -v`): registers a thread,
bytes spilled to local memory, the stack frame and static shared memory; and the checks a
kernel author wants from it without a GPU: no spills, and no more registers than a block of
the kernel's threads can have (`register_budget`), else the launch fails with "too many
resources requested".

    ptxas info    : Compiling entry function 'main_kernel' for 'sm_80'
    ptxas info    : Function properties for main_kernel
        0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
    ptxas info    : Used 64 registers, used 1 barriers, 1024 bytes smem, 376 bytes cmem[0]
    -> KernelResources("main_kernel", "sm_80", registers=64, shared_memory=1024, ...)
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from tirc.diagnostics import Diagnostic, Note, Severity, Span
from tirc.driver import cuda_toolchain

if TYPE_CHECKING:
    from tirc.ir.function import IRModule

REGISTERS_PER_BLOCK = 65536  # sm_50 and later
MAX_REGISTERS_PER_THREAD = 255
REGISTER_GRANULE = 8  # a warp's registers come in units of 256: 8 a thread


@dataclass(frozen=True)
class KernelResources:
    name: str
    arch: str
    registers: int = 0  # a thread
    spill_stores: int = 0  # bytes a thread
    spill_loads: int = 0
    stack_frame: int = 0  # bytes of local memory a thread
    shared_memory: int = 0  # bytes of static shared memory a block
    barriers: int = 0

    @property
    def spills(self) -> bool:
        return self.spill_stores > 0 or self.spill_loads > 0

    def summary(self) -> str:
        return (
            f"{self.name} ({self.arch}): {self.registers} registers, "
            f"{self.spill_stores} bytes spill stores, {self.spill_loads} bytes spill loads, "
            f"{self.stack_frame} bytes stack, {self.shared_memory} bytes shared"
        )


def register_budget(threads: int) -> int:
    """The most registers a thread may use for a block of `threads` to launch: the block's
    warps share 65536, each warp's allotment rounded down to 256 (8 a thread)."""
    warps = max(1, -(-threads // 32))
    per_thread = REGISTERS_PER_BLOCK // warps // 32
    return min(MAX_REGISTERS_PER_THREAD, per_thread // REGISTER_GRANULE * REGISTER_GRANULE)


_ENTRY = re.compile(r"Compiling entry function '([^']+)' for '([^']+)'")
_PROPERTIES = re.compile(r"Function properties for (\S+)")
_FRAME = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_USED = re.compile(r"Used (\d+) registers")
_SHARED = re.compile(r"(\d+) bytes smem")
_BARRIERS = re.compile(r"used (\d+) barriers")


def parse_ptxas_log(log: str) -> list[KernelResources]:
    """The entry functions of a `ptxas -v` log (also nvcc's `-Xptxas -v`), in order."""
    kernels: dict[str, KernelResources] = {}
    current: str | None = None  # the entry function the `Used` line belongs to
    described: str | None = None  # the function the next stack-frame line belongs to
    frames: dict[str, tuple[int, int, int]] = {}
    for line in log.splitlines():
        if match := _ENTRY.search(line):
            current = match.group(1)
            kernels[current] = KernelResources(current, match.group(2))
        elif match := _PROPERTIES.search(line):
            described = match.group(1)
        elif (match := _FRAME.search(line)) and described is not None:
            stack, stores, loads = (int(group) for group in match.groups())
            frames[described] = (stack, stores, loads)
        elif (match := _USED.search(line)) and current is not None:
            shared = _SHARED.search(line)
            barriers = _BARRIERS.search(line)
            kernels[current] = replace(
                kernels[current],
                registers=int(match.group(1)),
                shared_memory=int(shared.group(1)) if shared else 0,
                barriers=int(barriers.group(1)) if barriers else 0,
            )
    for name, (stack, stores, loads) in frames.items():
        if name in kernels:
            kernels[name] = replace(
                kernels[name], stack_frame=stack, spill_stores=stores, spill_loads=loads
            )
    return list(kernels.values())


def ptx_resources(ptx: str, arch: str) -> list[KernelResources]:
    """Each kernel's resources as ptxas assembles `ptx` for `arch` (sm_80, ...)."""

    _, log = cuda_toolchain.assemble_ptx(ptx, arch, verbose=True, purpose="--resources")
    return parse_ptxas_log(log)


def resource_warnings(
    resources: list[KernelResources],
    threads: Mapping[str, int | None],
    spans: Mapping[str, Span | None] | None = None,
) -> list[Diagnostic]:
    """A warning for each kernel that spills to local memory, and for each that uses more
    registers than a block of its threads (`threads`: per kernel, None where the launch
    decides) can have. `spans` locate each kernel."""
    found: list[Diagnostic] = []
    for kernel in resources:
        span = (spans or {}).get(kernel.name)
        if kernel.spills:
            found.append(
                Diagnostic(
                    Severity.WARNING,
                    f"kernel {kernel.name} spills registers to local memory on {kernel.arch}: "
                    f"{kernel.spill_stores} bytes stored and {kernel.spill_loads} loaded a "
                    f"thread ({kernel.registers} registers)",
                    span,
                    (Note("keep fewer values live: smaller register tiles or less unrolling"),),
                )
            )
        count = threads.get(kernel.name)
        if count is not None and kernel.registers > register_budget(count):
            found.append(
                Diagnostic(
                    Severity.WARNING,
                    f"kernel {kernel.name} uses {kernel.registers} registers a thread on "
                    f"{kernel.arch}, but a block of {count} threads may have "
                    f"{register_budget(count)}: its launch will fail",
                    span,
                    (Note("use fewer threads a block, or fewer registers"),),
                )
            )
    return found


def kernel_report(lowered: IRModule, arch: str, ptx: str) -> list[Diagnostic]:
    """What `tirc compile --resources` says of a module lowered for cuda: per kernel a
    remark with ptxas's account for `arch`, the warnings of `resource_warnings`, and a
    warning at each shared-memory access that bank conflicts slow down (or a remark where
    its addresses cannot be computed)."""
    # deferred: the CUDA backend (half a second), only for --target cuda
    from tirc.analysis.bank_conflicts import bank_conflicts

    # deferred: the CUDA backend (half a second), only for --target cuda
    from tirc.codegen.cuda.kernels import module_kernels

    threads = {kernel.name: kernel.threads_per_block() for kernel in module_kernels(lowered)}
    spans = {name: func.span for name, func in lowered.functions}
    resources = ptx_resources(ptx, arch)
    found = [
        Diagnostic(Severity.REMARK, kernel.summary(), spans.get(kernel.name))
        for kernel in resources
    ]
    found += resource_warnings(resources, threads, spans)
    for item in bank_conflicts(lowered):
        access = item.access
        where = f"{access.instruction} of {access.buffer} in {access.kernel}"
        if item.unknown is not None:
            message = f"{where}: bank conflicts not computed ({item.unknown})"
            found.append(Diagnostic(Severity.REMARK, message, access.span))
        elif item.excess:
            found.append(
                Diagnostic(
                    Severity.WARNING,
                    f"{where} has {item.ways}-way shared-memory bank conflicts: "
                    f"{item.wavefronts} wavefronts where {item.ideal} would do (summed over "
                    f"{item.instructions} warp requests)",
                    access.span,
                    (
                        Note(f"{access.buffer} holds this buffer", access.buffer_span),
                        Note("pad the rows (storage_align) or swizzle the layout"),
                    ),
                )
            )
    return found

"""`tirc compile --target cuda`, the CUDA backend's part: CUDA C, PTX (through NVRTC or LLVM's
NVPTX target), cubin and NVVM IR from a module the cuda pipeline lowered.

The architecture is the target's (`cuda -arch=sm_80`, or `--arch`; default sm_90). PTX goes
through NVRTC when cuda-python is installed and through llvmlite otherwise, or as `ptx_via`
says. `prefix` renames every function (so kernels `f_kernel` and launchers `f_launch` of
several files link into one program). `opt_level` is LLVM's, on the NVPTX path; NVRTC and
ptxas keep their own defaults, so -O elsewhere is refused.
"""

from __future__ import annotations

import os

from tirc.diagnostics import Diagnostic, DiagnosticError, Note, Severity, Span
from tirc.driver import cuda_toolchain
from tirc.driver.code_options import CodeOptions
from tirc.ir import expr as E
from tirc.ir import stmt as S
from tirc.ir.abi import EXTERN_CALLS
from tirc.ir.buffer import Buffer
from tirc.ir.function import IRModule
from tirc.ir.functor import walk
from tirc.ir.node import Node
from tirc.ir.target import DEFAULT_CUDA_ARCH, Target

PTX_PATHS = ("nvrtc", "llvm")
# The most shared memory one block may have on each architecture, after opting in (bytes).
SHARED_MEMORY_LIMITS = {
    "sm_70": 96 * 1024,
    "sm_75": 64 * 1024,
    "sm_80": 163 * 1024,
    "sm_86": 99 * 1024,
    "sm_89": 99 * 1024,
    "sm_90": 227 * 1024,
    "sm_100": 227 * 1024,
    "sm_120": 99 * 1024,
}
MAX_THREADS_PER_BLOCK = 1024


def cuda_code(module: IRModule, target: Target, options: CodeOptions) -> str | bytes:
    """The (scheduled) module lowered for cuda (or by the options' pipeline) and emitted;
    kernels that the architecture could never launch are warned of on stderr, and with
    `options.resources` each kernel's ptxas account and bank conflicts are reported there."""
    from tirc.driver.lower import lower_module  # deferred: the transform layer, only when lowering

    arch = target.arch or DEFAULT_CUDA_ARCH
    # named before lowering, so that split-host-device names the kernels after the prefixed names
    lowered = lower_module(
        with_prefix(module, options.prefix),
        target=target,
        pipeline_path=options.pipeline,
        for_backend=True,
    )
    warnings = launch_limit_warnings(lowered, arch)
    if warnings:
        # deferred: rich, only when there is something to show
        from tirc.diagnostics.render import render

        render(warnings)
    artifact = cuda_artifact(
        lowered,
        options.emit,
        arch=arch,
        ptx_via=options.ptx_via,
        source_name=options.source_name,
        opt_level=options.opt_level,
        abi=options.abi,
    )
    if options.resources:
        # deferred: rich, only when there is something to show
        from tirc.diagnostics.render import render
        from tirc.driver.kernel_resources import kernel_report  # deferred: only for --resources

        ptx = artifact if options.emit == "ptx" else None
        if not isinstance(ptx, str):
            ptx = module_ptx(lowered, arch=arch, via=options.ptx_via, opt_level=options.opt_level)
        render(kernel_report(lowered, arch, ptx))
    return artifact


def check_ptx_via(via: str | None, emit: str) -> None:
    """A DiagnosticError for a `--ptx-via` that is unknown or that `emit` would not use."""
    if via is None:
        return
    if via not in PTX_PATHS:
        raise DiagnosticError.at(None, f"unknown --ptx-via '{via}'", Note("choose nvrtc or llvm"))
    if emit not in ("ptx", "cubin"):
        raise DiagnosticError.at(
            None,
            f"--ptx-via {via} says how PTX is made, but --emit {emit} makes none",
            Note("give it with --emit ptx or cubin, or drop it"),
        )


def check_cuda_opt_level(opt_level: int, via: str | None, emit: str = "ptx") -> None:
    """A DiagnosticError unless LLVM makes the PTX, where -O is its level: not for CUDA C
    or NVVM IR (written before optimization), nor where NVRTC makes it (at its own)."""
    if emit in ("cu", "ll"):
        what = "CUDA C" if emit == "cu" else "NVVM IR before optimization"
        raise DiagnosticError.at(
            None,
            f"-O {opt_level} is LLVM's optimization level, but --emit {emit} writes {what}",
            Note("drop -O, or give it with --emit ptx --ptx-via llvm"),
        )
    if ptx_path(via) == "nvrtc":
        raise DiagnosticError.at(
            None,
            f"-O {opt_level} is LLVM's optimization level, but NVRTC makes the PTX here, at "
            "its own level",
            Note("add --ptx-via llvm to have LLVM make it at that level, or drop -O"),
        )


def ptx_path(via: str | None) -> str:
    """How the PTX is made: as asked, else NVRTC where cuda-python has it, else LLVM."""

    if via is not None:
        return via
    return "nvrtc" if cuda_toolchain.has_nvrtc() else "llvm"


def launch_limit_warnings(lowered: IRModule, arch: str) -> list[Diagnostic]:
    """A warning for each kernel whose launch `arch` would refuse whatever its arguments: more
    shared memory a block (static and constant dynamic) or more threads than it allows. The
    code still compiles (the CUDA toolchain accepts it); `tirc run --target cuda` refuses it
    with the device's own limits."""
    # deferred: the CUDA backend (half a second), only for --target cuda
    from tirc.codegen.cuda.kernel import dynamic_shared_layout

    # deferred: the CUDA backend (half a second), only for --target cuda
    from tirc.codegen.cuda.kernels import allocation_size, module_kernels

    found: list[Diagnostic] = []
    for kernel in module_kernels(lowered):
        offsets, dynamic = dynamic_shared_layout(kernel)
        static = 0
        for buffer in _shared_allocations(kernel.body):
            size = allocation_size(buffer)
            if buffer not in offsets and isinstance(size, E.IntImm):
                static += size.value * max(1, buffer.dtype.bits * buffer.dtype.lanes // 8)
        limit = SHARED_MEMORY_LIMITS.get(arch)
        dynamic_bytes = dynamic.value if isinstance(dynamic, E.IntImm) else 0
        if limit is not None and static + dynamic_bytes > limit:
            found.append(
                Diagnostic(
                    Severity.WARNING,
                    f"kernel {kernel.name} needs {static + dynamic_bytes} bytes of shared "
                    f"memory a block ({static} static + {dynamic_bytes} dynamic), but {arch} "
                    f"allows at most {limit}: it cannot be launched there",
                    None,
                    (Note("stage smaller tiles in shared memory, or fewer of them"),),
                )
            )
        threads = kernel.threads_per_block()
        if threads is not None and threads > MAX_THREADS_PER_BLOCK:
            found.append(
                Diagnostic(
                    Severity.WARNING,
                    f"kernel {kernel.name} has {threads} threads a block, but CUDA allows at "
                    f"most {MAX_THREADS_PER_BLOCK}: it cannot be launched",
                    None,
                )
            )
    return found


def _shared_allocations(body: S.Stmt) -> list[Buffer]:
    found: list[Buffer] = []

    def visit(node: Node) -> None:
        if isinstance(node, S.AllocBuffer) and node.buffer.scope == "shared":
            found.append(node.buffer)

    walk(body, visit)
    return found


def with_prefix(module: IRModule, prefix: str) -> IRModule:
    """`module` with `prefix` before every function name, which names its kernels and
    launchers: `main` becomes `softmax_main`, launched by `softmax_main_launch`."""
    if not prefix:
        return module

    functions = tuple((prefix + name, func) for name, func in module.functions)
    return IRModule(functions, module.attrs, module.is_bare)


def cuda_artifact(
    lowered: IRModule,
    emit: str,
    *,
    arch: str = DEFAULT_CUDA_ARCH,
    ptx_via: str | None = None,
    source_name: str = "",
    opt_level: int = 3,
    abi: str = "c",
) -> str | bytes:
    """The text or bytes of one CUDA output kind for a lowered module."""
    # deferred: the CUDA backend (half a second), only for --target cuda
    from tirc.codegen.cuda import emit_cuda

    # deferred: the CUDA backend (half a second), only for --target cuda
    from tirc.codegen.cuda.cluster import check_cluster_module

    # deferred: the CUDA backend (half a second), only for --target cuda
    from tirc.codegen.cuda.tma import check_tma_arch

    # deferred: the CUDA backend (half a second), only for --target cuda
    from tirc.codegen.cuda.wgmma_ptx import check_arch

    check_arch(lowered, arch)
    check_tma_arch(lowered, arch)
    check_cluster_module(lowered, arch)

    if emit == "cu":
        return emit_cuda(lowered, source_name=source_name, abi=abi)
    if emit == "ll":
        # deferred: the CUDA backend (half a second), only for --target cuda
        from tirc.codegen.nvptx import emit_nvvm_ir

        return emit_nvvm_ir(lowered, arch=arch)
    ptx = module_ptx(lowered, arch=arch, via=ptx_via, source_name=source_name, opt_level=opt_level)
    if emit == "ptx":
        return ptx

    return cuda_toolchain.cubin_from_ptx(ptx, arch, extern_calls(lowered))


def module_ptx(
    lowered: IRModule, *, arch: str, via: str | None, source_name: str = "", opt_level: int = 3
) -> str:
    """PTX through NVRTC (from the CUDA C) or LLVM (optimized at `opt_level`). A function the
    program calls with `T.call_extern` that NVRTC cannot find is an error at the call; through
    LLVM it stays an `.extern` declaration, for ptxas or the user's link step to resolve."""
    # deferred: the CUDA backend (half a second), only for --target cuda
    from tirc.codegen.cuda.cluster import check_cluster_module

    # deferred: the CUDA backend (half a second), only for --target cuda
    from tirc.codegen.cuda.tma import check_tma_arch

    # deferred: the CUDA backend (half a second), only for --target cuda
    from tirc.codegen.cuda.wgmma_ptx import check_arch

    check_arch(lowered, arch)
    check_tma_arch(lowered, arch)
    check_cluster_module(lowered, arch)
    if via not in (None, *PTX_PATHS):
        raise DiagnosticError.at(None, f"unknown --ptx-via '{via}'", Note("choose nvrtc or llvm"))
    if ptx_path(via) == "nvrtc":
        # deferred: the CUDA backend (half a second), only for --target cuda
        from tirc.codegen.cuda import emit_cuda

        # NVRTC's messages name lines of the CUDA C, which `--emit cu` writes
        stem = os.path.splitext(source_name)[0] if source_name else "kernel"
        return cuda_toolchain.ptx_from_cuda(
            emit_cuda(lowered, source_name=source_name),
            arch,
            f"{stem}.cu",
            extern_calls(lowered),
        )
    # deferred: the CUDA backend (half a second), only for --target cuda
    from tirc.codegen.nvptx import emit_ptx

    return emit_ptx(lowered, arch=arch, opt_level=opt_level)


def extern_calls(module: IRModule) -> dict[str, Span | None]:
    """The functions the module calls with `call_extern` / `call_pure_extern`, each with the
    span of its first call."""
    found: dict[str, Span | None] = {}

    def visit(node: Node) -> None:
        if isinstance(node, E.Call) and node.op in EXTERN_CALLS and node.args:
            name = node.args[0]
            if isinstance(name, E.StringImm) and name.value not in found:
                found[name.value] = node.span

    for _, func in module.functions:
        walk(func.body, visit)
    return {name: span for name, span in found.items() if name not in module}  # not launches

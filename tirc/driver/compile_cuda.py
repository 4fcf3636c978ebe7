"""`tirc compile --target cuda`: CUDA C, PTX (through NVRTC or LLVM's NVPTX target) and cubin.

`--target cuda -arch=sm_80` picks the architecture (default sm_90). PTX goes through NVRTC
when cuda-python is installed and through llvmlite otherwise, or as `ptx_via` says. As for the
CPU target, `intrinsics` adds tensor intrinsics for the plan's tensorize steps, `pipeline`
replaces the target's lowering pipeline, `prefix` renames every function (so kernels
`f_kernel` and launchers `f_launch` of several files link into one program), and a depfile
names every file read. `opt_level` is LLVM's, on the NVPTX path; NVRTC and ptxas keep their
own defaults.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING

from tirc.diagnostics import Diagnostic, DiagnosticError, Note, Severity, Span
from tirc.driver.defines import parse_defines
from tirc.driver.exit_code import ExitCode
from tirc.driver.output import write_output
from tirc.driver.source import STDIN, check_stdin_once, read_source
from tirc.ir import expr as E
from tirc.ir import stmt as S
from tirc.ir.buffer import Buffer
from tirc.ir.functor import walk
from tirc.ir.node import Node

if TYPE_CHECKING:
    from tirc.ir.function import IRModule

EMITS = ("cu", "ptx", "cubin", "ll")
PTX_PATHS = ("nvrtc", "llvm")
EXTERN_CALLS = ("call_extern", "call_pure_extern")
ARCHES = ("sm_70", "sm_75", "sm_80", "sm_86", "sm_89", "sm_90", "sm_100", "sm_120")
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


def compile_cuda_file(
    path: str,
    *,
    plan: str | None = None,
    target: str = "cuda",
    emit: str = "cu",
    output: str,
    defines: Sequence[str] = (),
    arch: str = "sm_90",
    ptx_via: str | None = None,
    depfile: str | None = None,
    prefix: str = "",
    opt_level: int = 3,
    pipeline: str | None = None,
    intrinsics: str | None = None,
) -> int:
    """Parse, schedule with `plan` (and the tensor intrinsics in `intrinsics`), lower for cuda
    (or by the pipeline in `pipeline`), and write `emit` to `output` (and the make rule of what
    it read to `depfile`)."""
    check_stdin_once([p for p in (path, plan, pipeline, intrinsics) if p is not None])
    arch = target_arch(target, arch)
    if emit not in EMITS:
        raise DiagnosticError.at(
            None, f"--target cuda cannot emit '{emit}'", Note(f"choose one of {', '.join(EMITS)}")
        )
    from tirc.driver.commands import parse_source, verify_program

    source = read_source(path)
    module = parse_source(source, parse_defines(defines))
    verify_program(module)
    if plan is not None:
        from tirc.driver.schedule import apply_plan_file

        module, _ = apply_plan_file(module, plan, intrinsics)
    from tirc.driver.lower import lower_module

    # named before lowering, so that split-host-device names the kernels after the prefixed names
    lowered = lower_module(with_prefix(module, prefix), target="cuda", pipeline_path=pipeline)
    name = "<stdin>" if path == STDIN else os.path.basename(path)
    warnings = launch_limit_warnings(lowered, arch)
    if warnings:
        from tirc.diagnostics.render import render

        render(warnings)
    data = cuda_artifact(
        lowered, emit, arch=arch, ptx_via=ptx_via, source_name=name, opt_level=opt_level
    )
    if depfile is not None:
        from tirc.driver.compile import default_pipeline_file, depfile_text

        inputs = [path, plan, intrinsics, pipeline or default_pipeline_file("cuda")]
        write_output(depfile, depfile_text(output, [p for p in inputs if p and p != STDIN]))
    write_output(output, data)
    return ExitCode.OK


def launch_limit_warnings(lowered: IRModule, arch: str) -> list[Diagnostic]:
    """A warning for each kernel whose launch `arch` would refuse whatever its arguments: more
    shared memory a block (static and constant dynamic) or more threads than it allows. The
    code still compiles (the CUDA toolchain accepts it); `tirc run --target cuda` refuses it
    with the device's own limits."""
    from tirc.codegen.cuda.kernel import dynamic_shared_layout
    from tirc.codegen.cuda.kernels import module_kernels
    from tirc.codegen.cuda.stmt import allocation_size

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
    from tirc.ir.function import IRModule

    functions = tuple((prefix + name, func) for name, func in module.functions)
    return IRModule(functions, module.attrs, module.is_bare)


def cuda_artifact(
    lowered: IRModule,
    emit: str,
    *,
    arch: str = "sm_90",
    ptx_via: str | None = None,
    source_name: str = "",
    opt_level: int = 3,
) -> str | bytes:
    """The text or bytes of one CUDA output kind for a lowered module."""
    from tirc.codegen.cuda import emit_cuda

    if emit == "cu":
        return emit_cuda(lowered, source_name=source_name)
    if emit == "ll":
        from tirc.codegen.nvptx import emit_nvvm_ir

        return emit_nvvm_ir(lowered, arch=arch)
    ptx = module_ptx(lowered, arch=arch, via=ptx_via, source_name=source_name, opt_level=opt_level)
    if emit == "ptx":
        return ptx
    from tirc.driver.cuda_toolchain import cubin_from_ptx

    return cubin_from_ptx(ptx, arch, extern_calls(lowered))


def module_ptx(
    lowered: IRModule, *, arch: str, via: str | None, source_name: str = "", opt_level: int = 3
) -> str:
    """PTX through NVRTC (from the CUDA C) or LLVM (optimized at `opt_level`). A function the
    program calls with `T.call_extern` that NVRTC cannot find is an error at the call; through
    LLVM it stays an `.extern` declaration, for ptxas or the user's link step to resolve."""
    from tirc.driver.cuda_toolchain import has_nvrtc, ptx_from_cuda

    if via not in (None, *PTX_PATHS):
        raise DiagnosticError.at(None, f"unknown --ptx-via '{via}'", Note("choose nvrtc or llvm"))
    if via is None:
        via = "nvrtc" if has_nvrtc() else "llvm"
    if via == "nvrtc":
        from tirc.codegen.cuda import emit_cuda

        # NVRTC's messages name lines of the CUDA C, which `--emit cu` writes
        stem = os.path.splitext(source_name)[0] if source_name else "kernel"
        return ptx_from_cuda(
            emit_cuda(lowered, source_name=source_name),
            arch,
            f"{stem}.cu",
            extern_calls(lowered),
        )
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


def target_arch(target: str, default: str) -> str:
    """The `-arch=sm_XX` of a target string such as `cuda -arch=sm_80`."""
    words = target.split()
    if not words or words[0] not in ("cuda", "nvptx"):
        raise DiagnosticError.at(None, f"'{target}' is not a CUDA target")
    arch = default
    for word in words[1:]:
        if word.startswith(("-arch=", "-mcpu=")):
            arch = word.split("=", 1)[1]
        else:
            raise DiagnosticError.at(
                None, f"unknown CUDA target option '{word}'", Note("known: -arch=sm_XX")
            )
    if arch not in ARCHES:
        raise DiagnosticError.at(
            None, f"unknown CUDA architecture '{arch}'", Note(f"known: {', '.join(ARCHES)}")
        )
    return arch

"""`tirc compile`, one path for every target: parse, verify, schedule (--plan), lower (the
target's pipeline, or --pipeline), generate code with the backend the target names, and
write one artifact atomically — for cpu an object, a shared library, LLVM IR, assembly or a
C header; for cuda CUDA C, PTX, a cubin or NVVM IR. With a depfile (`-MD -MF D`), also a
make rule naming every file read. An option the target would not use is an error.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from tirc.codegen.header import header_text
from tirc.diagnostics import DiagnosticError, Note
from tirc.driver.code_options import CodeOptions
from tirc.driver.compile_cuda import check_cuda_opt_level, check_ptx_via, cuda_code
from tirc.driver.defines import parse_defines
from tirc.driver.exit_code import ExitCode
from tirc.driver.host_threads import check_runs_on_cpu
from tirc.driver.output import STDOUT, write_output
from tirc.driver.program import parse_source, verify_program
from tirc.driver.source import STDIN, check_stdin_once, read_source
from tirc.driver.target import parse_target
from tirc.ir.target import KINDS, Target

if TYPE_CHECKING:
    from tirc.codegen.llvm import CompiledModule
    from tirc.ir.function import IRModule

EMIT_SUFFIXES = {
    "obj": ".o",
    "so": ".so",
    "ll": ".ll",
    "asm": ".s",
    "header": ".h",
    "cu": ".cu",
    "ptx": ".ptx",
    "cubin": ".cubin",
}
BINARY_KINDS = ("obj", "so", "cubin")
ABIS = ("c", "tvm-ffi")
TVM_FFI_EMITS = {"llvm": ("obj", "so", "ll", "asm"), "cuda": ("cu",)}  # code, by backend


def compile_file(
    path: str,
    *,
    target: Target | str = "cpu",
    emit: str | None = None,
    output: str | None = None,
    plan: str | None = None,
    defines: Sequence[str] = (),
    depfile: str | None = None,
    opt_level: int | None = None,
    pipeline: str | None = None,
    intrinsics: str | None = None,
    prefix: str = "",
    arch: str | None = None,
    ptx_via: str | None = None,
    abi: str = "c",
    resources: bool = False,
) -> int:
    """Compiles the file at `path` ('-': stdin) for `target` (a Target or its spelling) to
    `output` (default: the input's name with the kind's suffix, for cuda stdout; '-':
    stdout). `emit`
    defaults to the target's first kind (cpu: obj, cuda: cu); `intrinsics` adds tensor
    intrinsics for the plan's tensorize steps; `prefix` is prepended to every exported
    symbol (a function named `main` cannot be called from a C program otherwise; CUDA
    kernels and launchers are named after it); `opt_level` is LLVM's (default 3; for cuda,
    only where LLVM makes the PTX); `arch` is `--arch`, the CUDA architecture (default
    sm_90); `ptx_via` is nvrtc or llvm (default: NVRTC where cuda-python has it);
    `abi="tvm-ffi"` adds a packed function beside each exported one (docs/python.md);
    `resources` reports each CUDA kernel's registers, spills and bank conflicts on stderr.
    Returns 0; a DiagnosticError for anything wrong, and then nothing is written."""
    target = parse_target(target)
    if arch is not None:
        target = target.with_arch(arch)
    emit = emit if emit is not None else default_emit(target)
    check_compile_options(target, emit, opt_level=opt_level, ptx_via=ptx_via, abi=abi)
    if resources and target.backend != "cuda":
        raise DiagnosticError.at(
            None,
            "--resources reports what CUDA kernels use (ptxas -v), but --target "
            f"{target.name} makes none",
            Note("drop it, or compile with --target cuda"),
        )
    check_stdin_once([p for p in (path, plan, pipeline, intrinsics) if p is not None])
    output = output if output is not None else default_output(path, emit, target)
    if output == STDOUT and emit in BINARY_KINDS and os.isatty(1):
        raise DiagnosticError.at(None, f"refusing to write a binary --emit {emit} to a terminal")

    module = parse_source(read_source(path), parse_defines(defines))
    verify_program(module)
    if plan is not None:
        # deferred: the schedule layer, only with a plan
        from tirc.driver.schedule import apply_plan_file

        module, _ = apply_plan_file(module, plan, intrinsics)
    if emit == "header":
        # deferred: the transform layer, only when lowering or writing a header
        from tirc.transform.passes.make_c_abi import MakeCAbi

        guard = Path(output).stem if output != STDOUT else Path(display(path)).stem
        # a header needs only the C signatures, which make-c-abi writes out; the rest of the
        # pipeline would not change them
        data: str | bytes = header_text(MakeCAbi().run(module), guard, prefix)
    else:
        options = CodeOptions(
            emit,
            3 if opt_level is None else opt_level,
            pipeline,
            prefix,
            ptx_via,
            "<stdin>" if path == STDIN else os.path.basename(path),
            abi,
            resources,
        )
        data = backend_code(module, target, options)
    if depfile is not None:
        inputs = [path, plan, intrinsics, pipeline or default_pipeline_file(target)]
        depends = depfile_text(output, [p for p in inputs if p and p != STDIN])
        write_output(depfile, depends, keep_identical=True)
    # An unchanged header keeps its timestamp, or make would rebuild every file including it;
    # code is rewritten, since make would otherwise rerun the (slow) compile every time.
    write_output(output, data, keep_identical=emit == "header")
    return ExitCode.OK


def default_emit(target: Target) -> str:
    if not target.emits:
        raise DiagnosticError.at(
            None,
            f"--target {target} runs programs in the reference interpreter (tirc run); "
            "it compiles nothing",
            Note(f"compile for one of: {', '.join(k for k in KINDS if KINDS[k].emits)}"),
        )
    return target.emits[0]


def check_compile_options(
    target: Target, emit: str, *, opt_level: int | None, ptx_via: str | None, abi: str
) -> None:
    """A DiagnosticError for an option that the target does not take or would not use."""
    default_emit(target)
    if emit not in EMIT_SUFFIXES:
        raise DiagnosticError.at(
            None, f"unknown --emit kind '{emit}' (expected one of: {', '.join(EMIT_SUFFIXES)})"
        )
    if emit not in target.emits:
        others = [kind.name for kind in KINDS.values() if emit in kind.emits]
        raise DiagnosticError.at(
            None,
            f"--target {target.name} cannot emit '{emit}'",
            Note(f"it emits {', '.join(target.emits)}; --emit {emit} is for --target {others[0]}"),
        )
    check_abi(abi, emit, target.backend)
    if target.backend != "cuda":
        if ptx_via is not None:
            raise DiagnosticError.at(
                None,
                f"--ptx-via {ptx_via} says how CUDA's PTX is made, but the target is {target}",
                Note("give it with --target cuda, or drop it"),
            )
        return

    check_ptx_via(ptx_via, emit)
    if opt_level is not None:
        check_cuda_opt_level(opt_level, ptx_via, emit)


def check_abi(abi: str, emit: str | None = None, backend: str = "llvm") -> None:
    """`abi` is c or tvm-ffi; tvm-ffi only for host code (`emit` of `backend`), which its
    packed functions are part of: not for a header, PTX, a cubin or NVVM IR."""
    if abi not in ABIS:
        raise DiagnosticError.at(None, f"unknown --abi '{abi}' (expected c or tvm-ffi)")
    emits = TVM_FFI_EMITS.get(backend, ())
    if abi == "tvm-ffi" and emit is not None and emit not in emits:
        raise DiagnosticError.at(
            None,
            f"--abi tvm-ffi adds packed functions to code, which --emit {emit} does not hold",
            Note(f"use it with --emit {', '.join(emits)}" if emits else "drop --abi"),
        )


def backend_code(module: IRModule, target: Target, options: CodeOptions) -> str | bytes:
    """The (scheduled) module lowered and emitted by the backend the target names."""
    if target.backend == "cuda":
        return cuda_code(module, target, options)
    return cpu_code(module, target, options)


def cpu_code(module: IRModule, target: Target, options: CodeOptions) -> str | bytes:
    """The module compiled by the LLVM backend for a CPU target: obj, so, ll or asm."""
    # deferred: llvmlite (about a second), only for the CPU backend
    from tirc.codegen.llvm import compile_module
    from tirc.driver.lower import lower_module  # deferred: the transform layer, only when lowering

    check_runs_on_cpu(module)
    lowered = lower_module(module, target=target, pipeline_path=options.pipeline, for_backend=True)
    compiled = compile_module(lowered, target, options.opt_level, options.prefix, options.abi)
    if options.emit == "ll":
        return compiled.llvm_ir()
    if options.emit == "asm":
        return compiled.assembly()
    if options.emit == "obj":
        return compiled.object_code()
    return link_shared(compiled)


def link_shared(compiled: CompiledModule) -> bytes:
    """The object linked into a shared library by the C compiler ($CC, default gcc)."""
    compiler = os.environ.get("CC", "gcc")
    if shutil.which(compiler) is None:
        raise DiagnosticError.at(
            None,
            f"cannot link a shared library: the C compiler '{compiler}' was not found "
            "(install gcc or set CC, or use --emit obj and link it yourself)",
        )
    libraries = ["-lgomp"] if "GOMP_parallel" in compiled.llvm_ir() else []
    with tempfile.TemporaryDirectory(prefix="tirc-") as directory:
        obj, library = os.path.join(directory, "kernel.o"), os.path.join(directory, "kernel.so")
        with open(obj, "wb") as file:
            file.write(compiled.object_code())
        command = [compiler, "-shared", "-fPIC", "-o", library, obj, *libraries, "-lm"]
        done = subprocess.run(command, capture_output=True, text=True)
        if done.returncode != 0:
            raise DiagnosticError.at(
                None, f"linking the shared library failed: {done.stderr.strip()[:1000]}"
            )
        with open(library, "rb") as file:
            return file.read()


def default_output(path: str, emit: str, target: Target | None = None) -> str:
    """The input's name with the kind's suffix, in this directory; stdout for stdin, and
    for cuda (its outputs have always gone to stdout unless -o names a file)."""
    if path == STDIN or (target is not None and target.backend == "cuda"):
        return STDOUT
    return str(Path(path).with_suffix(EMIT_SUFFIXES[emit]).name)


def default_pipeline_file(target: Target) -> str | None:
    """The file of the pipeline shipped for `target`, as the dependency it is."""
    # deferred: the transform layer, only for a depfile
    from tirc.transform.pipeline import shipped_pipeline_file

    return shipped_pipeline_file(target.pipeline) if target.pipeline else None


def depfile_path(
    output: str | None,
    path: str,
    emit: str,
    md: bool,
    mf: str | None,
    target: Target | None = None,
) -> str | None:
    """`-MF D` names the depfile; `-MD` alone puts it next to the output, with suffix `.d`."""
    if mf is not None:
        return mf
    if not md:
        return None
    written = output if output is not None else default_output(path, emit, target)
    if written == STDOUT:
        raise DiagnosticError.at(None, "-MD needs -MF DEPFILE when the output is stdout")
    return written + ".d"


def depfile_text(target: str, inputs: Sequence[str]) -> str:
    """A make rule `target: inputs`, with a phony rule per input so that deleting one does
    not break the build (gcc's -MP)."""
    names = [_make_escape(name) for name in inputs]
    rule = f"{_make_escape(target)}: {' '.join(names)}\n"
    return rule + "".join(f"\n{name}:\n" for name in names[1:])


def _make_escape(name: str) -> str:
    return name.replace("$", "$$").replace("#", "\\#").replace(" ", "\\ ")


def display(path: str) -> str:
    return "stdin" if path == STDIN else path

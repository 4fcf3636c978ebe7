"""`tirc compile`: parse, schedule (--plan), lower (the target's pipeline), generate code, and
write one artifact atomically: an object, a shared library, LLVM IR, assembly or a C header.
With a depfile (`-MD -MF D`), also a make rule naming every file read.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

from tirc.diagnostics import DiagnosticError, Note
from tirc.driver.defines import parse_defines
from tirc.driver.exit_code import ExitCode
from tirc.driver.output import STDOUT, write_output
from tirc.driver.source import STDIN, check_stdin_once, read_source

if TYPE_CHECKING:
    from tirc.codegen.llvm import CompiledModule
    from tirc.ir.function import IRModule

EMIT_SUFFIXES = {"obj": ".o", "so": ".so", "ll": ".ll", "asm": ".s", "header": ".h"}
BINARY_KINDS = ("obj", "so")


def compile_file(
    path: str,
    *,
    plan: str | None = None,
    target: str = "cpu",
    emit: str = "obj",
    output: str | None = None,
    defines: Sequence[str] = (),
    depfile: str | None = None,
    opt_level: int = 3,
    pipeline: str | None = None,
    intrinsics: str | None = None,
    prefix: str = "",
) -> int:
    """Compiles the file at `path` ('-': stdin) to `output` (default: the input's name with the
    kind's suffix; '-': stdout). `prefix` is prepended to every exported symbol (a function
    named `main` cannot be called from a C program otherwise). Returns 0."""
    if emit not in EMIT_SUFFIXES:
        raise DiagnosticError.at(
            None, f"unknown --emit kind '{emit}' (expected one of: {', '.join(EMIT_SUFFIXES)})"
        )
    if not target.split() or target.split()[0] not in ("cpu", "llvm"):
        import difflib

        kinds = ("cpu", "llvm", "cuda", "nvptx")
        close = difflib.get_close_matches(target.split()[0] if target.split() else "", kinds, n=1)
        raise DiagnosticError.at(
            None,
            f"target '{target}' cannot be compiled yet (the CPU backend takes 'cpu')",
            *([Note(f"did you mean '{close[0]}'?")] if close else []),
        )
    check_stdin_once([p for p in (path, plan, pipeline, intrinsics) if p is not None])
    output = output if output is not None else default_output(path, emit)
    if output == STDOUT and emit in BINARY_KINDS and os.isatty(1):
        raise DiagnosticError.at(None, f"refusing to write a binary --emit {emit} to a terminal")
    from tirc.driver.commands import parse_source, verify_program

    module = parse_source(read_source(path), parse_defines(defines))
    verify_program(module)
    if plan is not None:
        from tirc.driver.schedule import apply_plan_file

        module, _ = apply_plan_file(module, plan, intrinsics)
    if emit == "header":
        from tirc.codegen.header import header_text

        guard = Path(output).stem if output != STDOUT else Path(display(path)).stem
        data: str | bytes = header_text(module, guard, prefix)
    else:
        data = generate(module, target, emit, opt_level, pipeline, prefix)
    if depfile is not None:
        inputs = [path, plan, intrinsics, pipeline or default_pipeline_file(target)]
        depends = depfile_text(output, [p for p in inputs if p and p != STDIN])
        write_output(depfile, depends, keep_identical=True)
    # An unchanged header keeps its timestamp, or make would rebuild every file including it;
    # code is rewritten, since make would otherwise rerun the (slow) compile every time.
    write_output(output, data, keep_identical=emit == "header")
    return ExitCode.OK


def generate(
    module: IRModule, target: str, emit: str, opt_level: int, pipeline: str | None, prefix: str
) -> str | bytes:
    from tirc.codegen.llvm import compile_module, parse_target
    from tirc.driver.host_threads import check_runs_on_cpu
    from tirc.driver.lower import lower_module

    cpu = parse_target(target)
    check_runs_on_cpu(module)
    lowered = lower_module(module, target=target, pipeline_path=pipeline)
    compiled = compile_module(lowered, cpu, opt_level, prefix)
    if emit == "ll":
        return compiled.llvm_ir()
    if emit == "asm":
        return compiled.assembly()
    if emit == "obj":
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


def default_output(path: str, emit: str) -> str:
    if path == STDIN:
        return STDOUT
    return str(Path(path).with_suffix(EMIT_SUFFIXES[emit]).name)


def default_pipeline_file(target: str) -> str | None:
    """The file of the pipeline shipped for `target`, as the dependency it is."""
    from tirc.transform.pipeline import TARGET_PIPELINES

    name = TARGET_PIPELINES.get(target.split()[0])
    if name is None:
        return None
    return str(resources.files("tirc.transform.pipelines").joinpath(f"{name}.toml"))


def depfile_path(output: str | None, path: str, emit: str, md: bool, mf: str | None) -> str | None:
    """`-MF D` names the depfile; `-MD` alone puts it next to the output, with suffix `.d`."""
    if mf is not None:
        return mf
    if not md:
        return None
    target = output if output is not None else default_output(path, emit)
    if target == STDOUT:
        raise DiagnosticError.at(None, "-MD needs -MF DEPFILE when the output is stdout")
    return target + ".d"


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

"""The CPU target as LLVM sees it: `cpu` is the host's name and features, `cpu -mcpu=NAME`
another CPU of the host's architecture; an LLVM target machine for it at an optimization
level."""

from __future__ import annotations

import dataclasses
import os
import tempfile
from functools import cache
from pathlib import Path

import llvmlite.binding as llvm

from tirc.codegen.llvm.register_tile import RegisterFile
from tirc.diagnostics import DiagnosticError, Note, Span
from tirc.ir.target import Target, option_span


@cache
def initialize_llvm() -> None:
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    llvm.initialize_native_asmparser()


def resolve_cpu(target: Target) -> Target:
    """A `cpu` target (tirc.ir.target.read_target) with what LLVM knows of its options
    filled in: `-mcpu=NAME` (`native`, or none: the host's name and features),
    `-mtriple=T` (the host's), `-mattr=+a,-b` (added to the host's features when no -mcpu
    is given), `-llc=SIZE`, the last-level cache above which outputs written and never read
    stream around the cache (tirc.codegen.llvm.streaming); it defaults to the host's for
    host targets, else 0 (off). Errors are located at the option."""
    initialize_llvm()
    options = dict(target.options)
    triple = options.get("-mtriple", llvm.get_process_triple())
    if options.get("-mcpu") == "native":  # as clang spells the host
        del options["-mcpu"]
    if "-mcpu" in options:
        cpu, features = options["-mcpu"], options.get("-mattr", "")
    else:
        cpu = llvm.get_host_cpu_name()
        features = llvm.get_host_cpu_features().flatten()
        if "-mattr" in options:
            features = ",".join(f for f in (features, options["-mattr"]) if f)
    try:
        llvm.Target.from_triple(triple)
    except RuntimeError as error:
        raise DiagnosticError.at(
            option_span(target, "-mtriple"), f"unknown target triple '{triple}': {error}"
        ) from None
    if "-mcpu" in options and not is_known_cpu(triple, cpu):
        raise DiagnosticError.at(
            option_span(target, "-mcpu"),
            f"unknown CPU '{cpu}' for {triple}",
            Note("name one LLVM knows (e.g. skylake-avx512, znver4, neoverse-v2), or native"),
        )
    host = "-mcpu" not in options and triple == llvm.get_process_triple()
    cache = host_cache_bytes() if host else 0
    if "-llc" in options:
        cache = _size(options["-llc"], option_span(target, "-llc"))
    x86 = triple.split("-")[0] in ("x86_64", "i386", "i686")
    return dataclasses.replace(
        target, arch=cpu, triple=triple, features=features, cache_bytes=cache if x86 else 0
    )


@cache
def is_known_cpu(triple: str, cpu: str) -> bool:
    """Whether LLVM knows `cpu` for `triple`. LLVM has no query for it: it warns on stderr
    that it ignores an unknown processor, then may abort when it emits code, so the warning
    is caught here, on the process's own stderr, while a target machine is made."""
    target = llvm.Target.from_triple(triple)
    with tempfile.TemporaryFile() as capture:
        saved = os.dup(2)
        os.dup2(capture.fileno(), 2)
        try:
            target.create_target_machine(cpu=cpu)
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        capture.seek(0)
        said = capture.read().decode(errors="replace")
    return "not a recognized processor" not in said


def _size(text: str, span: Span | None = None) -> int:
    """`32M`, `512K`, `1G` or a number of bytes (`-llc=`: the last-level cache)."""
    scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(text[-1:].upper(), 1)
    digits = text[:-1] if scale != 1 else text
    if not digits.isdigit():
        raise DiagnosticError.at(
            span,
            f"-llc wants a size in bytes, like 32M or 512K (0: no streaming stores), not '{text}'",
        )
    return int(digits) * scale


@cache
def host_cache_bytes() -> int:
    """The size of this machine's largest cache (Linux sysfs), 0 when it cannot be read."""
    largest = 0
    for entry in Path("/sys/devices/system/cpu/cpu0/cache").glob("index*/size"):
        try:
            text = entry.read_text().strip()
        except OSError:
            continue
        try:
            largest = max(largest, _size(text))
        except DiagnosticError:
            continue
    return largest


def target_machine(target: Target, opt_level: int) -> llvm.TargetMachine:
    """Position-independent code, so one object serves both `--emit obj` and `--emit so`."""
    initialize_llvm()
    return llvm.Target.from_triple(target.triple).create_target_machine(
        cpu=target.arch,
        features=target.features,
        opt=min(max(opt_level, 0), 3),
        reloc="pic",
        codemodel="default",
    )


REGISTER_PROBE = """
define void @probe(ptr %a, ptr %b) {
  %x = load <16 x float>, ptr %a
  %y = load <16 x float>, ptr %b
  %z = fadd <16 x float> %x, %y
  store <16 x float> %z, ptr %a
  ret void
}
"""


def vector_registers(target: Target) -> RegisterFile | None:
    """The vector registers code for `target` computes in: on x86-64, 32 of 64 bytes where
    LLVM uses AVX-512's zmm registers for a 64-byte vector, else 16 of 32 (ymm) or 16 bytes
    (xmm); on AArch64, 32 NEON registers of 16 bytes; None for another architecture."""
    return _vector_registers(target.triple, target.arch, target.features)


@cache
def _vector_registers(triple: str, cpu: str, features: str) -> RegisterFile | None:
    architecture = triple.split("-")[0]
    if architecture in ("aarch64", "arm64"):
        return RegisterFile(32, 16)
    if architecture != "x86_64":
        return None
    initialize_llvm()
    # a CPU's name implies its features, which LLVM does not list: ask its code generator
    machine = llvm.Target.from_triple(triple).create_target_machine(cpu=cpu, features=features)
    assembly = machine.emit_assembly(llvm.parse_assembly(REGISTER_PROBE))
    if "%zmm" in assembly:
        return RegisterFile(32, 64)
    return RegisterFile(16, 32 if "%ymm" in assembly else 16)

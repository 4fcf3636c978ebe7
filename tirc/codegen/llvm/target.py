"""The CPU target: `cpu` is the host's name and features, `cpu -mcpu=NAME` another CPU of the
host's architecture; an LLVM target machine for it at an optimization level."""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import llvmlite.binding as llvm

from tirc.diagnostics import DiagnosticError, Note


@dataclass(frozen=True)
class CpuTarget:
    triple: str
    cpu: str
    features: str
    cache_bytes: int = 0  # the last-level cache (the host's), 0 when unknown: no streaming stores

    def describe(self) -> str:
        return f"{self.triple} -mcpu={self.cpu}"


@cache
def initialize_llvm() -> None:
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    llvm.initialize_native_asmparser()


def parse_target(text: str) -> CpuTarget:
    """`cpu`, `llvm` or `cpu -mcpu=NAME [-mtriple=T] [-mattr=+a,-b] [-llc=SIZE]`: `-llc` is the
    last-level cache, above which outputs written and never read stream around the cache
    (tirc.codegen.llvm.streaming); it defaults to the host's for host targets, else 0 (off)."""
    initialize_llvm()
    words = shlex.split(text)
    if not words or words[0] not in ("cpu", "llvm"):
        raise DiagnosticError.at(
            None, f"unknown target '{text}' for this backend (expected 'cpu' or 'cpu -mcpu=NAME')"
        )
    options: dict[str, str] = {}
    for word in words[1:]:
        key, equals, value = word.partition("=")
        if not equals or key not in ("-mcpu", "-mtriple", "-mattr", "-llc"):
            raise DiagnosticError.at(
                None,
                f"unknown target option '{word}' (known: -mcpu=, -mtriple=, -mattr=, -llc=)",
            )
        options[key] = value
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
        raise DiagnosticError.at(None, f"unknown target triple '{triple}': {error}") from None
    if "-mcpu" in options and not is_known_cpu(triple, cpu):
        raise DiagnosticError.at(
            None,
            f"unknown CPU '{cpu}' for {triple}",
            Note("name one LLVM knows (e.g. skylake-avx512, znver4, neoverse-v2), or native"),
        )
    host = "-mcpu" not in options and triple == llvm.get_process_triple()
    cache = host_cache_bytes() if host else 0
    if "-llc" in options:
        cache = _size(options["-llc"])
    x86 = triple.split("-")[0] in ("x86_64", "i386", "i686")
    return CpuTarget(triple, cpu, features, cache if x86 else 0)


@cache
def is_known_cpu(triple: str, cpu: str) -> bool:
    """Whether LLVM knows `cpu` for `triple`. LLVM has no query for it: it warns on stderr
    that it ignores an unknown processor, then may abort when it emits code, so the warning
    is caught here, on the process's own stderr, while a target machine is made."""
    import os
    import tempfile

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


def _size(text: str) -> int:
    """`32M`, `512K`, `1G` or a number of bytes (`-llc=`: the last-level cache)."""
    scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(text[-1:].upper(), 1)
    digits = text[:-1] if scale != 1 else text
    if not digits.isdigit():
        raise DiagnosticError.at(
            None,
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


def target_machine(target: CpuTarget, opt_level: int) -> llvm.TargetMachine:
    """Position-independent code, so one object serves both `--emit obj` and `--emit so`."""
    initialize_llvm()
    return llvm.Target.from_triple(target.triple).create_target_machine(
        cpu=target.cpu,
        features=target.features,
        opt=min(max(opt_level, 0), 3),
        reloc="pic",
        codemodel="default",
    )

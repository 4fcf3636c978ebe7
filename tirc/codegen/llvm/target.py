"""The CPU target: `cpu` is the host's name and features, `cpu -mcpu=NAME` another CPU of the
host's architecture; an LLVM target machine for it at an optimization level."""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from functools import cache

import llvmlite.binding as llvm

from tirc.diagnostics import DiagnosticError


@dataclass(frozen=True)
class CpuTarget:
    triple: str
    cpu: str
    features: str

    def describe(self) -> str:
        return f"{self.triple} -mcpu={self.cpu}"


@cache
def initialize_llvm() -> None:
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    llvm.initialize_native_asmparser()


def parse_target(text: str) -> CpuTarget:
    """`cpu`, `llvm` or `cpu -mcpu=NAME [-mtriple=T] [-mattr=+a,-b]`."""
    initialize_llvm()
    words = shlex.split(text)
    if not words or words[0] not in ("cpu", "llvm"):
        raise DiagnosticError.at(
            None, f"unknown target '{text}' for this backend (expected 'cpu' or 'cpu -mcpu=NAME')"
        )
    options: dict[str, str] = {}
    for word in words[1:]:
        key, equals, value = word.partition("=")
        if not equals or key not in ("-mcpu", "-mtriple", "-mattr"):
            raise DiagnosticError.at(
                None, f"unknown target option '{word}' (known: -mcpu=, -mtriple=, -mattr=)"
            )
        options[key] = value
    triple = options.get("-mtriple", llvm.get_process_triple())
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
    return CpuTarget(triple, cpu, features)


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

"""What a program is compiled for or run on: one `Target` value, read once from its spelling
(`cpu`, `cpu -mcpu=znver4`, `cuda -arch=sm_80`, `interp`) and passed down to every layer.

Reading checks the kind and the options' syntax, with errors located in the spelling; the
CPU's facts that only LLVM knows (the host's name and features, the triple) are filled in
by the LLVM backend (tirc.codegen.llvm.target.resolve_cpu), which the driver calls.
"""

from __future__ import annotations

import dataclasses
import difflib
import shlex
from dataclasses import dataclass

from tirc.diagnostics import DiagnosticError, Note, Source, Span


@dataclass(frozen=True, slots=True)
class TargetKind:
    """What a kind of target is served by: its backend, its shipped pipeline (None: it
    lowers nothing) and the dialect its backend reads (a tirc.transform Dialect's name,
    which a pipeline must leave), the `--emit` kinds it writes (the first is the default)
    and the `-key=value` options its spelling takes."""

    name: str
    backend: str  # "interp", "llvm" or "cuda"
    pipeline: str | None
    reads: str
    emits: tuple[str, ...]
    options: tuple[str, ...]
    usage: str  # the spelling, for messages


KINDS: dict[str, TargetKind] = {
    kind.name: kind
    for kind in (
        TargetKind("interp", "interp", None, "s-tir", (), (), "interp"),
        TargetKind(
            "cpu",
            "llvm",
            "cpu",
            "tir-flat",
            ("obj", "so", "ll", "asm", "header"),
            ("-mcpu", "-mtriple", "-mattr", "-llc"),
            "cpu [-mcpu=NAME|native] [-mtriple=T] [-mattr=+a,-b] [-llc=SIZE]",
        ),
        TargetKind(
            "cuda",
            "cuda",
            "cuda",
            "tir-host-device",
            ("cu", "ptx", "cubin", "ll"),
            ("-arch", "-mcpu"),
            "cuda [-arch=sm_XX]",
        ),
    )
}
ALIASES = {"llvm": "cpu", "nvptx": "cuda"}  # TVM's names for the same targets
SPELLINGS = (*KINDS, *ALIASES)

CUDA_ARCHES = (
    "sm_70",
    "sm_75",
    "sm_80",
    "sm_86",
    "sm_89",
    "sm_90",
    "sm_90a",  # sm_90 with its arch-specific instructions (wgmma, setmaxnreg)
    "sm_100",
    "sm_120",
)
DEFAULT_CUDA_ARCH = "sm_90"  # what `tirc compile --target cuda` builds for without -arch


def arch_number(arch: str) -> int:
    """The compute capability of a CUDA architecture as a number: sm_90a -> 90."""
    return int(arch.removeprefix("sm_").rstrip("abf"))


@dataclass(frozen=True, slots=True)
class Target:
    """A target, its options read. `arch` is the CPU's LLVM name (resolved: `native` and no
    -mcpu are the host's) or the CUDA architecture (`sm_80`; empty: the device's when run,
    DEFAULT_CUDA_ARCH when compiled). `triple`, `features` and `cache_bytes` (the last-level
    cache that streaming stores go around; 0: none) are the CPU's."""

    kind: TargetKind
    spelling: str
    options: tuple[tuple[str, str], ...] = ()
    arch: str = ""
    triple: str = ""
    features: str = ""
    cache_bytes: int = 0

    @property
    def name(self) -> str:
        return self.kind.name

    @property
    def backend(self) -> str:
        return self.kind.backend

    @property
    def pipeline(self) -> str | None:
        """The name of the pipeline shipped for this target (tirc/transform/pipelines)."""
        return self.kind.pipeline

    @property
    def emits(self) -> tuple[str, ...]:
        return self.kind.emits

    def option(self, key: str) -> str | None:
        """The value of option `key` (`-mcpu`) as spelt, None when not given."""
        return next((value for name, value in self.options if name == key), None)

    def with_arch(self, arch: str) -> Target:
        """The CUDA target with `--arch ARCH`; an error for another kind of target, or when
        the spelling names another architecture."""
        if self.backend != "cuda":
            raise DiagnosticError.at(
                None,
                f"--arch {arch} is a CUDA architecture, but the target is '{self.spelling}'",
                Note("give --arch with --target cuda, or drop it"),
            )
        if self.arch and self.arch != arch:
            raise DiagnosticError.at(
                None,
                f"--arch {arch} disagrees with the target '{self.spelling}'",
                Note("name the architecture once"),
            )
        check_cuda_arch(arch, None)
        return dataclasses.replace(self, arch=arch)

    def __str__(self) -> str:
        return self.spelling


def read_target(spelling: str) -> Target:
    """The target a spelling names, its options checked; a DiagnosticError located in the
    spelling (shown as the file `--target`) says what is accepted, and what was probably
    meant. A CPU target still needs resolve_cpu (the LLVM backend's) for its facts."""
    source = Source("--target", spelling)
    try:
        words = shlex.split(spelling)
    except ValueError as error:
        raise DiagnosticError.at(
            Span(source, 0, len(spelling)), f"cannot read target '{spelling}': {error}"
        ) from None
    if not words:
        raise DiagnosticError.at(None, "empty target", _accepted())
    name = ALIASES.get(words[0], words[0])
    kind = KINDS.get(name)
    if kind is None:
        close = difflib.get_close_matches(words[0], SPELLINGS, n=1)
        raise DiagnosticError.at(
            _word_span(source, words[0]),
            f"unknown target '{words[0]}'",
            *([Note(f"did you mean '{close[0]}'?")] if close else []),
            _accepted(),
        )
    options: list[tuple[str, str]] = []
    for word in words[1:]:
        key, equals, value = word.partition("=")
        if not equals or key not in kind.options:
            close = difflib.get_close_matches(key, kind.options, n=1)
            raise DiagnosticError.at(
                _word_span(source, word),
                f"unknown target option '{word}' for {kind.name}",
                *([Note(f"did you mean '{close[0]}='?")] if close else []),
                Note(f"accepted: {kind.usage}"),
            )
        options.append((key, value))
    target = Target(kind, spelling, tuple(options))
    if kind.backend == "cuda":
        arch = target.option("-arch") or target.option("-mcpu")
        if arch is not None:
            check_cuda_arch(arch, _word_span(source, arch))
            target = dataclasses.replace(target, arch=arch)
    return target


def check_cuda_arch(arch: str, span: Span | None) -> None:
    if arch not in CUDA_ARCHES:
        raise DiagnosticError.at(
            span, f"unknown CUDA architecture '{arch}'", Note(f"known: {', '.join(CUDA_ARCHES)}")
        )


def option_span(target: Target, key: str) -> Span | None:
    """Where option `key` stands in the target's spelling, for an error about its value."""
    for word in target.spelling.split():
        if word.startswith(f"{key}="):
            return _word_span(Source("--target", target.spelling), word)
    return None


def _word_span(source: Source, word: str) -> Span | None:
    start = source.text.find(word)
    return Span(source, start, start + len(word)) if start >= 0 else None


def _accepted() -> Note:
    return Note("accepted: " + "; ".join(kind.usage for kind in KINDS.values()))

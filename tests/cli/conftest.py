"""Stand-ins for the parser, printer, verifier and structural comparison, so the command line
can be tested on its own: `oops` is a syntax error, `crash` a bug, `interrupt` a Ctrl-C,
`bad` a verifier error and `warn` a verifier warning. They replace the names the driver
calls, where it looks them up."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import pytest

import tirc.analysis.well_formed
from tirc.diagnostics import Diagnostic, DiagnosticError, Severity, Source, Span
from tirc.driver import commands, program


@dataclass
class FakeModule:
    source: Source
    defines: dict[str, str] = field(default_factory=dict)


@dataclass
class FakeNode:
    span: Span | None


@dataclass
class FakeDifference:
    path: str
    lhs: object
    rhs: object
    message: str
    lhs_span: Span | None
    rhs_span: Span | None


def find(source: Source, word: str) -> Span | None:
    index = source.text.find(word)
    return None if index < 0 else Span(source, index, index + len(word))


def parse(text: str, *, name: str = "<string>", defines: Mapping[str, str] | None = None) -> object:
    source = Source(name, text)
    if span := find(source, "oops"):
        raise DiagnosticError.at(span, "unexpected token 'oops'")
    if "crash" in text:
        raise ZeroDivisionError("division by zero")
    if "interrupt" in text:
        raise KeyboardInterrupt
    return FakeModule(source, dict(defines or {}))


def print_module(module: FakeModule) -> str:
    defined = "".join(f"# {name} = {value}\n" for name, value in module.defines.items())
    # like the real printer: no trailing newline (the driver adds one)
    return (defined + module.source.text).rstrip("\n")


def verify_module(module: FakeModule) -> list[Diagnostic]:
    found = []
    if span := find(module.source, "bad"):
        found.append(Diagnostic.error("'bad' is not defined", span))
    if span := find(module.source, "warn"):
        found.append(Diagnostic(Severity.WARNING, "unused 'warn'", span))
    return found


def line_spans(source: Source) -> list[Span]:
    starts = source.line_starts()
    ends = [start - 1 for start in starts[1:]] + [len(source.text)]
    return [Span(source, start, end) for start, end in zip(starts, ends, strict=True)]


def find_difference(a: FakeModule, b: FakeModule) -> FakeDifference | None:
    left, right = line_spans(a.source), line_spans(b.source)
    for index, (x, y) in enumerate(zip(left, right, strict=False)):
        if x.source.text[x.start : x.end] != y.source.text[y.start : y.end]:
            return FakeDifference(
                f"main.body.seq[{index}]", FakeNode(x), FakeNode(y), "statements differ", x, y
            )
    if len(left) != len(right):
        return FakeDifference("main.body.seq", len(left), len(right), "lengths differ", None, None)
    return None


@pytest.fixture
def fake_layers(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(program, "parse", parse)
    monkeypatch.setattr(program, "print_module", print_module)
    # the driver imports the verifier when it verifies, so the module's name is the one to replace
    monkeypatch.setattr(tirc.analysis.well_formed, "verify_module", verify_module)
    monkeypatch.setattr(commands, "find_difference", find_difference)

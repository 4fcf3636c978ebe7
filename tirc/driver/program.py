"""A program's text to IR and back, as every command reads and writes it: parse a Source,
verify the module, print it as the file tirc writes."""

from __future__ import annotations

from collections.abc import Mapping

from tirc.diagnostics import DiagnosticError, Severity, Source
from tirc.ir.function import IRModule
from tirc.text import parse, print_module


def parse_source(source: Source, defines: Mapping[str, str] | None = None) -> IRModule:
    return parse(source.text, name=source.name, defines=dict(defines) if defines else None)


def verify_program(module: IRModule) -> None:
    """Raise the verifier's errors in `module` (docs/validity.md) as one DiagnosticError;
    warnings mark valid programs and stop nothing."""
    # deferred: the verifier (and the arithmetic analyzer under it) loads only for the
    # commands that verify, not for `tirc print` or `tirc diff`
    from tirc.analysis.well_formed import verify_module

    errors = [d for d in verify_module(module) if d.severity is Severity.ERROR]
    if errors:
        raise DiagnosticError(errors)


def module_text(module: IRModule) -> str:
    """A module as the file tirc writes: TVM's printed form, ending with a newline."""
    return print_module(module) + "\n"

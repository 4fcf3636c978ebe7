"""What every part of the builder shares: the source, the errors found so far, and how a
syntax range becomes a Span and a problem becomes a located diagnostic.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tirc.diagnostics import Diagnostic, Note, Source, Span
from tirc.text.syntax import tree

MAX_ERRORS = 50  # stop collecting after this many: the rest are usually consequences


class BuildError(Exception):
    """A user error found while building IR; carries its diagnostic."""

    def __init__(self, diagnostic: Diagnostic):
        super().__init__(diagnostic.message)
        self.diagnostic = diagnostic

    def with_note(self, note: Note) -> BuildError:
        d = self.diagnostic
        return BuildError(Diagnostic(d.severity, d.message, d.span, d.notes + (note,)))


class SilentError(Exception):
    """A failure caused by an earlier, already reported error: abandon the statement quietly."""


@dataclass
class Context:
    source: Source
    diagnostics: list[Diagnostic] = field(default_factory=list)

    def span(self, node: tree.Syntax) -> Span:
        return Span(self.source, node.start, node.end)

    def error(self, where: tree.Syntax | Span | None, message: str, *notes: Note) -> BuildError:
        span = self.span(where) if isinstance(where, tree.Syntax) else where
        return BuildError(Diagnostic.error(message, span, *notes))

    def report(self, error: BuildError) -> None:
        if len(self.diagnostics) < MAX_ERRORS:
            self.diagnostics.append(error.diagnostic)

    @property
    def has_errors(self) -> bool:
        return bool(self.diagnostics)

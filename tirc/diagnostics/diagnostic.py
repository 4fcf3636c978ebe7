"""The one diagnostic type, and the exception that carries diagnostics up to the driver.

Every user-facing problem (syntax, verification, a schedule step that cannot apply, a bad
option) becomes a Diagnostic; only the renderer at the edge turns it into text.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from tirc.diagnostics.span import Span


class Severity(enum.Enum):
    ERROR = "error"
    WARNING = "warning"
    NOTE = "note"
    REMARK = "remark"  # what the compiler did, or could not do, with a valid request


@dataclass(frozen=True, slots=True)
class Note:
    message: str
    span: Span | None = None


@dataclass(frozen=True, slots=True)
class Diagnostic:
    severity: Severity
    message: str
    span: Span | None = None
    notes: tuple[Note, ...] = ()

    @staticmethod
    def error(message: str, span: Span | None = None, *notes: Note) -> Diagnostic:
        return Diagnostic(Severity.ERROR, message, span, tuple(notes))

    def __str__(self) -> str:
        where = f"{self.span}: " if self.span is not None else ""
        return f"{where}{self.severity.value}: {self.message}"


class DiagnosticError(Exception):
    """A user error: one or more diagnostics, at least one of them an error.

    Raised by any layer; caught by the driver, rendered, and turned into exit status 1.
    """

    def __init__(self, diagnostics: Diagnostic | list[Diagnostic] | tuple[Diagnostic, ...]):
        if isinstance(diagnostics, Diagnostic):
            diagnostics = [diagnostics]
        self.diagnostics: tuple[Diagnostic, ...] = tuple(diagnostics)
        super().__init__("\n".join(str(d) for d in self.diagnostics))

    @staticmethod
    def at(span: Span | None, message: str, *notes: Note) -> DiagnosticError:
        return DiagnosticError(Diagnostic.error(message, span, *notes))

"""Source locations and diagnostics: the bottom layer every other layer reports through."""

from tirc.diagnostics.diagnostic import Diagnostic, DiagnosticError, Note, Severity
from tirc.diagnostics.span import Source, Span

__all__ = ["Diagnostic", "DiagnosticError", "Note", "Severity", "Source", "Span"]

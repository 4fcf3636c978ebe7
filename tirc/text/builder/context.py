"""What every part of the builder shares: the source, the errors found so far, and how a
syntax range becomes a Span and a problem becomes a located diagnostic.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tirc.diagnostics import Diagnostic, Note, Source, Span
from tirc.ir.arith import ArithError
from tirc.ir.dtype import DTypeError
from tirc.ir.node import IRError
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


# What IR constructors and operator rules raise when a value breaks an invariant. While the
# builder builds a node from the user's values that is the user's error at that node:
# `Evaluator.evaluate` and `Builder.visit_collecting` locate it at the expression or
# statement being built, so no builtin has to catch it itself.
CONSTRUCTION_ERRORS: tuple[type[Exception], ...] = (IRError, DTypeError, ArithError)


class SilentError(Exception):
    """A failure caused by an earlier, already reported error: abandon the statement quietly."""


@dataclass
class Context:
    source: Source
    diagnostics: list[Diagnostic] = field(default_factory=list)
    # where the parsed text starts in `source`: a shape string's expression is parsed on its
    # own, and its nodes located in the file through this offset
    offset: int = 0

    def span(self, node: tree.Syntax) -> Span:
        return Span(self.source, node.start + self.offset, node.end + self.offset)

    def error(self, where: tree.Syntax | Span | None, message: str, *notes: Note) -> BuildError:
        span = self.span(where) if isinstance(where, tree.Syntax) else where
        return BuildError(Diagnostic.error(message, span, *notes))

    def report(self, error: BuildError) -> None:
        if len(self.diagnostics) < MAX_ERRORS:
            self.diagnostics.append(error.diagnostic)

    @property
    def has_errors(self) -> bool:
        return bool(self.diagnostics)

"""The syntax layer: text to syntax tree through the Lark grammar, with located syntax errors."""

from __future__ import annotations

from tirc.diagnostics import Diagnostic, DiagnosticError, Source, Span
from tirc.text.syntax import errors, tree
from tirc.text.syntax.driver import UnexpectedToken
from tirc.text.syntax.grammar import grammar
from tirc.text.syntax.lexer import LexError, LexState


def parse_syntax(source: Source) -> tree.Module:
    """The syntax tree of a whole file; raises DiagnosticError on a syntax error."""
    text = source.text
    nul = text.find("\x00")
    if nul >= 0:
        message = "the file contains a NUL byte; is it a binary file?"
        raise DiagnosticError(Diagnostic.error(message, Span(source, nul, nul + 1)))
    rules = grammar()
    state = LexState([])
    try:
        module: tree.Module = rules.driver.parse(rules.lexer.tokens(text, state))
    except UnexpectedToken as error:
        diagnostic = errors.unexpected_token(rules, source, error)
        raise DiagnosticError(errors.with_open_bracket(diagnostic, source, state)) from None
    except LexError as error:
        if error.message is None:
            raise DiagnosticError(errors.unexpected_character(source, error.position)) from None
        span = Span(source, error.position, error.position + error.width)
        raise DiagnosticError(Diagnostic.error(error.message, span)) from None
    return module


__all__ = ["parse_syntax", "tree"]

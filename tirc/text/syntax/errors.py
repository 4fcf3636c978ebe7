"""Turning Lark's parse failures into located diagnostics worded for people.

Token kinds are named as a reader would say them ("a name", "')'", "end of line"), and a
long list of expected kinds is summarized ("an expression").
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tirc.diagnostics import Diagnostic, Note, Source, Span

if TYPE_CHECKING:
    from tirc.text.syntax.driver import UnexpectedToken
    from tirc.text.syntax.grammar import Grammar
    from tirc.text.syntax.lexer import LexState

DESCRIPTIONS = {
    "NAME": "a name",
    "DEC_NUMBER": "a number",
    "HEX_NUMBER": "a number",
    "FLOAT_NUMBER": "a number",
    "STRING": "a string",
    "_NEWLINE": "end of line",
    "_INDENT": "an indented block",
    "_DEDENT": "the end of an indented block",
    "$END": "end of file",
    "AUGOP": "an augmented assignment",
}
# What an expression may start with: listed together as "an expression".
EXPRESSION_STARTS = frozenset(
    "NAME DEC_NUMBER HEX_NUMBER FLOAT_NUMBER STRING LPAR LSQB LBRACE MINUS PLUS TILDE "
    "NOT NONE TRUE FALSE LAMBDA".split()
)
# What may continue an expression: listed together as "an operator".
OPERATORS = frozenset(
    "OR AND LESS GREATER EQUAL_EQUAL GREATER_EQUAL LESS_EQUAL NOT_EQUAL BAR CARET AMPERSAND "
    "LEFT_SHIFT RIGHT_SHIFT PLUS MINUS STAR SLASH DOUBLE_SLASH PERCENT DOUBLE_STAR DOT LPAR "
    "LSQB IF".split()
)
MAX_LISTED = 8


def describe_terminal(grammar: Grammar, name: str) -> str:
    if name in DESCRIPTIONS:
        return DESCRIPTIONS[name]
    terminal = grammar.terminals.get(name)
    if terminal is not None and terminal.is_string:
        return f"'{terminal.pattern}'"
    return name.lower()


def describe_token(token_type: str, value: str) -> str:
    if token_type in DESCRIPTIONS and token_type not in ("NAME", "STRING", "AUGOP"):
        if token_type.endswith("NUMBER"):
            return f"number {value}"
        return DESCRIPTIONS[token_type]
    if token_type == "NAME":
        return f"name '{value}'"
    if token_type == "STRING":
        return "string " + (value if len(value) <= 20 else value[:17] + "...")
    return f"'{value}'"


def describe_expected(grammar: Grammar, expected: set[str]) -> str:
    names = set(expected)
    phrases: list[str] = []
    if "NAME" in names and "DEC_NUMBER" in names:
        phrases.append("an expression")
        names -= EXPRESSION_STARTS
    if len(names & OPERATORS) >= 4:
        phrases.append("an operator")
        names -= OPERATORS
    described = sorted({describe_terminal(grammar, name) for name in names})
    phrases += described
    if len(phrases) > MAX_LISTED:
        phrases = phrases[:MAX_LISTED] + ["..."]
    if len(phrases) == 1:
        return phrases[0]
    return "one of " + ", ".join(phrases)


def unexpected_token(grammar: Grammar, source: Source, error: UnexpectedToken) -> Diagnostic:
    token = error.token
    kind = token.type
    start, end = token.start_pos, max(token.end_pos, token.start_pos + 1)
    if kind == "_INDENT":
        return Diagnostic.error("unexpected indent", Span(source, start, start + 1))
    if kind == "$END":
        start = len(source.text.rstrip())
        end = start + 1
    expected = describe_expected(grammar, set(error.expected))
    message = f"unexpected {describe_token(kind, token.value)}, expected {expected}"
    return Diagnostic.error(message, Span(source, start, end))


def unexpected_character(source: Source, position: int) -> Diagnostic:
    char = source.text[position] if position < len(source.text) else ""
    span = Span(source, position, position + 1)
    if char in "'\"":
        return Diagnostic.error("unterminated string", span)
    if not char.isprintable() or char == "\x00":
        return Diagnostic.error(f"invalid character U+{ord(char):04X} in the program text", span)
    return Diagnostic.error(f"unexpected character '{char}'", span)


def with_open_bracket(diagnostic: Diagnostic, source: Source, state: LexState) -> Diagnostic:
    """A syntax error on a later line than a bracket still open: most likely that bracket
    was never closed, so point at it too."""
    if not state.brackets or diagnostic.span is None:
        return diagnostic
    opener, where = state.brackets[-1]
    if source.position(where)[0] >= diagnostic.span.line:
        return diagnostic
    note = Note(f"'{opener}' opened here is not closed", Span(source, where, where + 1))
    return Diagnostic(
        diagnostic.severity, diagnostic.message, diagnostic.span, diagnostic.notes + (note,)
    )

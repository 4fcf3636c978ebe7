"""The tokenizer: one compiled regular expression over the whole text, plus indentation.

Token kinds are the grammar's terminal names, so the LALR tables Lark computes drive the
parse. Like Python's tokenizer, newlines inside brackets are spaces, blank and comment-only
lines are skipped, and a change of indentation becomes _INDENT / _DEDENT tokens.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

TAB_WIDTH = 8
INCONSISTENT_TABS = (
    "inconsistent use of tabs and spaces in indentation (the block this line belongs to "
    "depends on the tab width); indent with spaces only"
)
MATCHING = {")": "(", "]": "[", "}": "{"}
# Regular-expression terminals, in the order they are tried: a string prefix before a name,
# a float before the integer it starts with, an augmented assignment before its operator.
PATTERN_ORDER = ("STRING", "FLOAT_NUMBER", "HEX_NUMBER", "DEC_NUMBER", "NAME", "AUGOP")
# Spaces and line continuations before a token are part of its match (fewer matches to loop over).
SPACES = r"[ \t\f]*(?:\\[ \t\f]*\r?\n[ \t\f]*)*"
COMMENT = r"(?P<_COMMENT>#[^\n]*)"
NEWLINE = r"(?P<_LINE>\r?\n[ \t\f]*)"
ANYTHING_ELSE = r"(?P<_ERROR>.)"


class Token:
    """A terminal: its grammar name, its text and where it lies."""

    __slots__ = ("type", "value", "start_pos", "end_pos")

    def __init__(self, kind: str, value: str, start: int, end: int):
        self.type = kind
        self.value = value
        self.start_pos = start
        self.end_pos = end

    def __str__(self) -> str:
        return self.value

    def __repr__(self) -> str:
        return f"Token({self.type}, {self.value!r}, {self.start_pos})"


class LexError(Exception):
    """No token starts at `position`; or an indentation problem there."""

    def __init__(self, position: int, message: str | None = None, width: int = 1):
        super().__init__(message or f"no token at {position}")
        self.position = position
        self.message = message
        self.width = width


@dataclass
class LexState:
    """What the tokenizer has seen so far, for error messages: the brackets still open."""

    brackets: list[tuple[str, int]]


@dataclass(frozen=True)
class Terminal:
    name: str
    pattern: str
    is_string: bool  # a literal string, not a regular expression


class Lexer:
    def __init__(self, terminals: Sequence[Terminal]):
        by_name = {terminal.name: terminal for terminal in terminals}
        name_pattern = re.compile(by_name["NAME"].pattern)
        self.keywords: dict[str, str] = {}
        operators: list[Terminal] = []
        for terminal in terminals:
            if not terminal.is_string:
                continue
            if name_pattern.fullmatch(terminal.pattern):
                self.keywords[terminal.pattern] = terminal.name
            else:
                operators.append(terminal)
        operators.sort(key=lambda terminal: -len(terminal.pattern))
        alternatives = [NEWLINE, COMMENT]
        alternatives += [f"(?P<{n}>{by_name[n].pattern})" for n in PATTERN_ORDER if n in by_name]
        self.operator_names = {terminal.pattern: terminal.name for terminal in operators}
        brackets = [t for t in operators if t.pattern in "()[]{}"]
        others = [t for t in operators if t not in brackets]
        alternatives.append(f"(?P<_OPERATOR>{'|'.join(re.escape(t.pattern) for t in others)})")
        alternatives.append(f"(?P<_BRACKET>{'|'.join(re.escape(t.pattern) for t in brackets)})")
        alternatives.append(ANYTHING_ELSE)
        self.pattern = re.compile(SPACES + "(?:" + "|".join(alternatives) + ")")

    def tokens(self, text: str, state: LexState | None = None) -> Iterator[Token]:
        """The tokens of `text`, then an end-of-file token `$END`."""
        keywords = self.keywords
        operator_names = self.operator_names
        group = self.pattern.groupindex
        # Dispatch on the number of the group that matched, most frequent first: a name,
        # an operator, a number, a bracket, a line break cover nearly every match.
        name, operator, integer = group["NAME"], group["_OPERATOR"], group.get("DEC_NUMBER")
        bracket, line, comment, error = (
            group["_BRACKET"], group["_LINE"], group["_COMMENT"], group["_ERROR"]
        )  # fmt: skip
        kinds = {number: kind for kind, number in group.items()}
        levels = [0]  # indentation columns with tabs to multiples of TAB_WIDTH
        narrow_levels = [0]  # the same with a tab as one column
        brackets = state.brackets if state is not None else []
        last_end = 0
        line_has_tokens = False
        length = len(text)
        # The first line's indentation counts as if a newline preceded it.
        first = re.match(r"[ \t\f]*", text)
        if first is not None and first.end() < length and text[first.end()] not in "\r\n#":
            if first.end() > 0:
                raise LexError(first.end(), "unexpected indent")
        for match in self.pattern.finditer(text):
            matched = match.lastindex
            assert matched is not None  # every alternative of the pattern is a group
            value = match[matched]
            end = match.end()
            if matched == name:
                line_has_tokens = True
                last_end = end
                yield Token(keywords.get(value, "NAME"), value, end - len(value), end)
            elif matched == operator:
                line_has_tokens = True
                last_end = end
                yield Token(operator_names[value], value, end - len(value), end)
            elif matched == integer:
                line_has_tokens = True
                last_end = end
                yield Token("DEC_NUMBER", value, end - len(value), end)
            elif matched == bracket:
                start = end - 1
                if value in "([{":
                    brackets.append((value, start))
                else:
                    if not brackets:
                        raise LexError(start, f"unmatched '{value}'")
                    opener, _ = brackets.pop()
                    if opener != MATCHING[value]:
                        raise LexError(start, f"'{value}' does not match the '{opener}' it closes")
                line_has_tokens = True
                last_end = end
                yield Token(operator_names[value], value, start, end)
            elif matched == line:
                if brackets:
                    continue
                if line_has_tokens:
                    # placed right after the line's last token: "expected ':'" points there
                    yield Token("_NEWLINE", "\n", last_end, last_end + 1)
                    line_has_tokens = False
                if end >= length or text[end] in "\r\n#":
                    continue  # a blank or comment-only line: its indentation means nothing
                spaces = value.lstrip("\r\n")
                indent = len(spaces.expandtabs(TAB_WIDTH))
                # As Python does, the indentation must compare the same way with a tab as
                # one column: else its meaning depends on the editor's tab width.
                narrow = len(spaces)
                if indent > levels[-1]:
                    if narrow <= narrow_levels[-1]:
                        raise LexError(end, INCONSISTENT_TABS)
                    levels.append(indent)
                    narrow_levels.append(narrow)
                    yield Token("_INDENT", "", end, end)
                    continue
                while indent < levels[-1]:
                    levels.pop()
                    narrow_levels.pop()
                    yield Token("_DEDENT", "", end, end)
                if indent != levels[-1]:
                    raise LexError(end, "unindent does not match any outer indentation level")
                if narrow != narrow_levels[-1]:
                    raise LexError(end, INCONSISTENT_TABS)
            elif matched == comment:
                continue
            elif matched == error:
                raise LexError(end - 1)
            else:
                line_has_tokens = True
                last_end = end
                yield Token(kinds[matched], value, end - len(value), end)
        if brackets:
            opener, where = brackets[-1]
            raise LexError(where, f"'{opener}' was never closed")
        if line_has_tokens:
            yield Token("_NEWLINE", "\n", last_end, last_end + 1)
        while len(levels) > 1:
            levels.pop()
            yield Token("_DEDENT", "", length, length)
        yield Token("$END", "", length, length)

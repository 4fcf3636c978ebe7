"""Source files and spans into them.

A Span is a half-open byte range [start, end) of one Source; line and column (1-based) are
computed on demand so that creating spans while parsing costs two integers.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field


@dataclass(frozen=True, eq=False)
class Source:
    """A named text: a file, `<stdin>`, or a string given to the parser."""

    name: str
    text: str
    _line_starts: list[int] = field(default_factory=list, repr=False)

    def line_starts(self) -> list[int]:
        if not self._line_starts:
            starts = [0]
            text = self.text
            index = text.find("\n")
            while index >= 0:
                starts.append(index + 1)
                index = text.find("\n", index + 1)
            self._line_starts.extend(starts)
        return self._line_starts

    def position(self, offset: int) -> tuple[int, int]:
        """(line, column), both 1-based, of a character offset."""
        starts = self.line_starts()
        line = bisect.bisect_right(starts, offset) - 1
        return line + 1, offset - starts[line] + 1

    def line_text(self, line: int) -> str:
        starts = self.line_starts()
        if not 1 <= line <= len(starts):
            return ""
        begin = starts[line - 1]
        end = starts[line] - 1 if line < len(starts) else len(self.text)
        return self.text[begin:end].rstrip("\r")


@dataclass(frozen=True, slots=True)
class Span:
    source: Source
    start: int
    end: int

    @property
    def line(self) -> int:
        return self.source.position(self.start)[0]

    @property
    def column(self) -> int:
        return self.source.position(self.start)[1]

    def merge(self, other: Span | None) -> Span:
        if other is None or other.source is not self.source:
            return self
        return Span(self.source, min(self.start, other.start), max(self.end, other.end))

    def __str__(self) -> str:
        line, column = self.source.position(self.start)
        return f"{self.source.name}:{line}:{column}"

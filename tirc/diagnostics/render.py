"""Turns Diagnostics into compiler-style text: `error: ...`, ` --> file:line:col`, the source
line under a numbered gutter with a caret under the span, then the notes.

Colour only on a terminal (and never under NO_COLOR); rich is imported only when rendering.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, TextIO

from tirc.diagnostics.diagnostic import Diagnostic, Severity
from tirc.diagnostics.span import Span

if TYPE_CHECKING:
    from rich.text import Text

WINDOW = 120  # columns of a long source line shown around the caret
LEAD = 40  # of those, how many come before the caret when the line is cut
TAB = "    "
ELLIPSIS = "..."

SEVERITY_STYLE = {
    Severity.ERROR: "bold red",
    Severity.WARNING: "bold yellow",
    Severity.NOTE: "bold cyan",
    Severity.REMARK: "bold green",
}
GUTTER_STYLE = "bold blue"


@dataclass(frozen=True, slots=True)
class Snippet:
    """What is shown of one span: its location, one source line and the marked columns."""

    location: str
    line: int
    text: str
    caret_start: int  # 0-based display column
    caret_width: int


def render(
    diagnostics: Iterable[Diagnostic],
    stream: TextIO | None = None,
    color: bool | None = None,
    *,
    label: bool = True,
) -> None:
    """Write diagnostics to stream (stderr by default), a blank line between two of them;
    without `label`, each message stands alone, as a report rather than an `error:`."""
    from rich.console import Console  # deferred: rich's start-up cost, paid only when rendering

    stream = sys.stderr if stream is None else stream
    use_color = is_color_wanted(stream) if color is None else color
    console = Console(
        file=stream,
        force_terminal=use_color,
        color_system="standard" if use_color else None,
        no_color=not use_color,
        markup=False,
        emoji=False,
        highlight=False,
        soft_wrap=True,
        width=10_000,
    )
    for index, diagnostic in enumerate(diagnostics):
        if index:
            console.print()
        for line in format_lines(diagnostic, label=label):
            console.print(line)
    stream.flush()


def format_plain(diagnostic: Diagnostic, *, label: bool = True) -> str:
    """The rendered text of one diagnostic without colour, ending in a newline."""
    return "".join(line.plain + "\n" for line in format_lines(diagnostic, label=label))


def is_color_wanted(stream: TextIO) -> bool:
    if os.environ.get("NO_COLOR"):
        return False
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


def format_lines(diagnostic: Diagnostic, *, label: bool = True) -> list[Text]:
    from rich.text import Text  # deferred: rich's start-up cost, paid only when rendering

    snippets = [snippet_of(diagnostic.span)]
    snippets += [snippet_of(note.span) for note in diagnostic.notes]
    width = max((len(str(s.line)) for s in snippets if s is not None), default=1)

    style = SEVERITY_STYLE[diagnostic.severity]
    if label:
        lines = [
            Text.assemble(
                (f"{diagnostic.severity.value}:", style), (f" {diagnostic.message}", "bold")
            )
        ]
    else:
        lines = [Text(diagnostic.message, "bold")]
    lines += snippet_lines(snippets[0], width, style)
    note_style = SEVERITY_STYLE[Severity.NOTE]
    for note, snippet in zip(diagnostic.notes, snippets[1:], strict=True):
        lines.append(Text.assemble(("note:", note_style), f" {note.message}"))
        lines += snippet_lines(snippet, width, note_style)
    return lines


def snippet_lines(snippet: Snippet | None, width: int, caret_style: str) -> list[Text]:
    from rich.text import Text  # deferred: rich's start-up cost, paid only when rendering

    if snippet is None:
        return []
    pad = " " * width
    caret = "^" + "~" * (snippet.caret_width - 1)
    return [
        Text.assemble((f"{pad}--> ", GUTTER_STYLE), snippet.location),
        Text(f"{pad} |", GUTTER_STYLE),
        Text.assemble((f"{snippet.line:>{width}} | ", GUTTER_STYLE), snippet.text),
        Text.assemble((f"{pad} | ", GUTTER_STYLE), " " * snippet.caret_start, (caret, caret_style)),
    ]


def snippet_of(span: Span | None) -> Snippet | None:
    """Clip span to its first line and that line to a window around the caret."""
    if span is None:
        return None
    source = span.source
    line, column = source.position(span.start)
    text = source.line_text(line)
    start = min(column - 1, len(text))
    end = max(start + 1, min(span.end - span.start + start, len(text)))

    window_start = 0
    if len(text) > WINDOW:
        window_start = max(0, min(start - LEAD, len(text) - WINDOW))
    window_end = window_start + WINDOW
    end = min(end, window_end)
    prefix = ELLIPSIS if window_start > 0 else ""
    suffix = ELLIPSIS if window_end < len(text) else ""

    before = displayable(text[window_start:start])
    marked = displayable(text[start:end])
    after = displayable(text[end:window_end])
    return Snippet(
        location=f"{source.name}:{line}:{column}",
        line=line,
        text=prefix + before + marked + after + suffix,
        caret_start=len(prefix) + len(before),
        caret_width=max(1, len(marked)),
    )


def displayable(text: str) -> str:
    """Tabs as spaces and control characters as one visible cell, so carets stay aligned."""
    text = text.replace("\t", TAB)
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else "\ufffd" for c in text)

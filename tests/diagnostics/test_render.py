"""The diagnostic renderer: layout, carets, windows on long lines, notes and colour."""

from __future__ import annotations

import io
import time

import pytest

from tirc.diagnostics import Diagnostic, Note, Severity, Source, Span
from tirc.diagnostics.render import format_plain, render

TEXT = "def main():\n    x = 1 + y\n    return x\n"


def span_of(source: Source, fragment: str, occurrence: int = 0) -> Span:
    start = -1
    for _ in range(occurrence + 1):
        start = source.text.index(fragment, start + 1)
    return Span(source, start, start + len(fragment))


def test_error_with_span_has_header_location_line_and_caret() -> None:
    source = Source("k.tir", TEXT)
    diagnostic = Diagnostic.error("undefined variable 'y'", span_of(source, "y"))
    assert format_plain(diagnostic) == (
        "error: undefined variable 'y'\n"
        " --> k.tir:2:13\n"
        "  |\n"
        "2 |     x = 1 + y\n"
        "  |             ^\n"
    )


def test_caret_covers_the_span() -> None:
    source = Source("k.tir", TEXT)
    text = format_plain(Diagnostic.error("bad sum", span_of(source, "1 + y")))
    assert text.splitlines()[-1] == "  |         ^~~~~"


def test_diagnostic_without_span_is_one_line() -> None:
    assert format_plain(Diagnostic.error("cannot read 'x'")) == "error: cannot read 'x'\n"


def test_warning_and_note_severities() -> None:
    warning = Diagnostic(Severity.WARNING, "unused buffer")
    assert format_plain(warning) == "warning: unused buffer\n"


def test_multi_line_span_is_clipped_to_its_first_line() -> None:
    source = Source("k.tir", TEXT)
    start = source.text.index("x = 1")
    diagnostic = Diagnostic.error("multi", Span(source, start, len(source.text)))
    lines = format_plain(diagnostic).splitlines()
    assert lines[3] == "2 |     x = 1 + y"
    assert lines[4] == "  |     ^~~~~~~~~"
    assert len(lines) == 5


def test_empty_span_and_span_at_end_of_file_get_one_caret() -> None:
    source = Source("k.tir", "abc")
    lines = format_plain(Diagnostic.error("unexpected end", Span(source, 3, 3))).splitlines()
    assert lines[1] == " --> k.tir:1:4"
    assert lines[-1] == "  |    ^"


def test_notes_with_and_without_location_share_the_gutter_width() -> None:
    source = Source("k.tir", "\n".join(f"line{i}" for i in range(1, 13)))
    diagnostic = Diagnostic.error(
        "redefinition of 'line12'",
        span_of(source, "line12"),
        Note("first defined here", span_of(source, "line9")),
        Note("names must be unique"),
    )
    assert format_plain(diagnostic) == (
        "error: redefinition of 'line12'\n"
        "  --> k.tir:12:1\n"
        "   |\n"
        "12 | line12\n"
        "   | ^~~~~~\n"
        "note: first defined here\n"
        "  --> k.tir:9:1\n"
        "   |\n"
        " 9 | line9\n"
        "   | ^~~~~\n"
        "note: names must be unique\n"
    )


def test_tabs_are_expanded_and_the_caret_stays_under_the_span() -> None:
    source = Source("k.tir", "\tx =\ty\n")
    lines = format_plain(Diagnostic.error("here", span_of(source, "y"))).splitlines()
    assert lines[3] == "1 |     x =    y"
    assert lines[4].index("^") == lines[3].index("y")


def test_control_characters_do_not_reach_the_terminal() -> None:
    source = Source("k.tir", "a\x1b[31m = b\n")
    text = format_plain(Diagnostic.error("here", span_of(source, "b")))
    assert "\x1b" not in text
    lines = text.splitlines()
    assert lines[4].index("^") == lines[3].index("b")


def test_one_megabyte_line_shows_a_window_around_the_caret() -> None:
    line = "x" * 500_000 + "BAD" + "y" * 500_000
    source = Source("big.tir", "first\n" + line + "\n")
    begin = time.perf_counter()
    text = format_plain(Diagnostic.error("bad token", span_of(source, "BAD")))
    assert time.perf_counter() - begin < 1.0
    lines = text.splitlines()
    assert lines[1] == " --> big.tir:2:500001"
    shown, caret = lines[3], lines[4]
    assert len(shown) < 200
    assert shown.startswith("2 | ...x") and shown.endswith("y...")
    assert shown[caret.index("^") : caret.index("^") + 3] == "BAD"
    assert caret.endswith("^~~")


def test_caret_near_the_end_of_a_long_line() -> None:
    source = Source("big.tir", "a" * 10_000 + "Z")
    lines = format_plain(Diagnostic.error("z", Span(source, 10_000, 10_001))).splitlines()
    assert lines[3].endswith("aZ") and not lines[3].endswith("...")
    assert lines[3][lines[4].index("^")] == "Z"


def test_message_is_not_read_as_rich_markup() -> None:
    stream = io.StringIO()
    render([Diagnostic.error("[bold]x[/bold] :smile:")], stream=stream, color=True)
    assert "[bold]x[/bold] :smile:" in stream.getvalue()


def test_colour_only_when_asked_or_on_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NO_COLOR", raising=False)
    diagnostic = Diagnostic.error("boom", span_of(Source("k.tir", TEXT), "y"))

    coloured = io.StringIO()
    render([diagnostic], stream=coloured, color=True)
    assert "\x1b[" in coloured.getvalue()

    plain = io.StringIO()
    render([diagnostic], stream=plain)
    assert plain.getvalue() == format_plain(diagnostic)

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    terminal = Terminal()
    render([diagnostic], stream=terminal)
    assert "\x1b[" in terminal.getvalue()

    monkeypatch.setenv("NO_COLOR", "1")
    terminal = Terminal()
    render([diagnostic], stream=terminal)
    assert terminal.getvalue() == format_plain(diagnostic)


def test_render_writes_to_stderr_with_a_blank_line_between_diagnostics(
    capsys: pytest.CaptureFixture[str],
) -> None:
    render([Diagnostic.error("one"), Diagnostic.error("two")])
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == "error: one\n\nerror: two\n"

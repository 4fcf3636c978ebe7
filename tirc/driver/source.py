"""Reading a FILE argument (a path, or `-` for stdin) into a Source.

Every way this can fail (missing, unreadable, a directory, not UTF-8) is a DiagnosticError,
located at the offending byte where there is one.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from tirc.diagnostics import DiagnosticError, Source, Span

STDIN = "-"
STDIN_NAME = "<stdin>"
BOM = "\ufeff"


def read_source(path: str) -> Source:
    if path == STDIN:
        return decode(read_stdin(), STDIN_NAME)
    try:
        with open(path, "rb") as file:
            data = file.read()
    except OSError as error:
        raise DiagnosticError.at(None, f"cannot read '{path}': {describe(error)}") from None
    return decode(data, path)


def check_stdin_once(paths: Sequence[str]) -> None:
    if sum(path == STDIN for path in paths) > 1:
        raise DiagnosticError.at(None, "standard input ('-') can be given only once")


def read_stdin() -> bytes:
    if sys.stdin is None:
        return b""
    buffer = getattr(sys.stdin, "buffer", None)
    if buffer is not None:
        data: bytes = buffer.read()
        return data
    return sys.stdin.read().encode("utf-8")


def decode(data: bytes, name: str) -> Source:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        # Show the line with the bad byte replaced, the caret on it.
        offset = len(data[: error.start].decode("utf-8"))
        source = Source(name, data.decode("utf-8", errors="replace"))
        byte = data[error.start]
        message = f"'{name}' is not valid UTF-8 text: unexpected byte 0x{byte:02x}"
        raise DiagnosticError.at(Span(source, offset, offset + 1), message) from None
    return Source(name, text.removeprefix(BOM))


def describe(error: OSError) -> str:
    """An OSError's reason in lower case, without Python's `[Errno 2]` decoration."""
    reason = error.strerror or str(error)
    return reason[:1].lower() + reason[1:]

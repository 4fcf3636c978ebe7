"""Indented lines of C: what the CUDA emitters append to."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager


class Writer:
    def __init__(self, indent: int = 0) -> None:
        self.lines: list[str] = []
        self.depth = indent

    def line(self, text: str = "") -> None:
        self.lines.append(("    " * self.depth + text) if text else "")

    @contextmanager
    def block(self, opener: str, closer: str = "}") -> Iterator[None]:
        """`opener {`, the indented body, then `closer`."""
        self.line(opener + " {")
        self.depth += 1
        try:
            yield
        finally:
            self.depth -= 1
            self.line(closer)

    def text(self) -> str:
        return "\n".join(self.lines) + "\n"

"""Helpers for the parser tests: parse a snippet, expect an error at a marked place."""

from __future__ import annotations

import re

import pytest

from tirc.diagnostics import DiagnosticError
from tirc.ir.function import IRModule, PrimFunc
from tirc.text.parser import parse_module

FUNCTION_HEAD = '@T.prim_func\ndef main(A: T.Buffer((16,), "float32"), n: T.int32):\n'
# `# error@COL: message` on a line marks the diagnostic expected at that line and column.
MARKER = re.compile(r"#\s*error@(\d+):\s*(.+)$")


def parse(text: str, **options: object) -> IRModule:
    return parse_module(text, name="test.tir", **options)  # type: ignore[arg-type]


def parse_function(body: str, head: str = FUNCTION_HEAD) -> PrimFunc:
    module = parse(head + body)
    return module.functions[0][1]


def expect_error(text: str, **options: object) -> DiagnosticError:
    with pytest.raises(DiagnosticError) as caught:
        parse(text, **options)
    return caught.value


def marked_error(text: str) -> tuple[int, int, str]:
    """(line, column, message) of the `# error@COL: message` marker in `text`."""
    for number, line in enumerate(text.splitlines(), start=1):
        found = MARKER.search(line)
        if found:
            return number, int(found.group(1)), found.group(2).strip()
    raise AssertionError("no error marker in the test text")


def check_marked(text: str, **options: object) -> None:
    """The first diagnostic is at the marked line and column and says the marked words."""
    line, column, message = marked_error(text)
    error = expect_error(text, **options)
    diagnostic = error.diagnostics[0]
    assert message in diagnostic.message, diagnostic.message
    assert diagnostic.span is not None
    assert (diagnostic.span.line, diagnostic.span.column) == (line, column), str(diagnostic)

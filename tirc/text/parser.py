"""Text to IR: `parse_module` reads a whole file (an `@I.ir_module` class or a bare
`@T.prim_func`) into an IRModule, raising DiagnosticError with every error it found.
"""

from __future__ import annotations

import gc
import sys
from collections.abc import Mapping

from tirc.diagnostics import Diagnostic, DiagnosticError, Source, Span
from tirc.ir.function import IRModule
from tirc.text.builder import build_module
from tirc.text.builder.params import Define
from tirc.text.syntax import parse_syntax

# Deeply nested expressions recurse in the builder; allow more depth than Python's default,
# and report anything deeper as a located error rather than a crash.
RECURSION_LIMIT = 20_000


def parse_module(
    text: str, *, name: str = "<string>", defines: Mapping[str, Define] | None = None
) -> IRModule:
    """The IRModule of `text`; `defines` override module-level parameters (`-D N=2048`)."""

    return parse_source(Source(name, text.removeprefix("\ufeff")), defines)


def parse_source(source: Source, defines: Mapping[str, Define] | None = None) -> IRModule:
    """Like parse_module, for a Source already read (keeps its name and text)."""
    previous = sys.getrecursionlimit()
    if previous < RECURSION_LIMIT:
        sys.setrecursionlimit(RECURSION_LIMIT)
    # Parsing allocates many objects and frees none: the cyclic collector would rescan the
    # growing tree again and again (a third of the time on a large file) to find nothing.
    collecting = gc.isenabled()
    gc.disable()
    try:
        return build_module(parse_syntax(source), source, defines)
    except RecursionError:
        message = "the program is nested too deeply to parse"
        raise DiagnosticError(Diagnostic.error(message, Span(source, 0, 0))) from None
    finally:
        if collecting:
            gc.enable()
        sys.setrecursionlimit(previous)

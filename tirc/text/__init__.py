"""The text layer: the Lark grammar, the parser (text -> IR) and the printer (IR -> text).

`print_module(parse(text))` is a fixed point, and `parse(print_module(m))` is structurally
equal to `m`. The parser runs parse tables shipped with the package (tirc/text/syntax/
tables.json); lark is imported only to rebuild them after the grammar changes.

The parser and the printer load on first use (a third of a second together): every layer
imports this package, most only to print an expression in a message.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Mapping

    from tirc.ir.function import IRModule
    from tirc.text.builder.params import Define


def parse(
    text: str, *, name: str = "<string>", defines: Mapping[str, Define] | None = None
) -> IRModule:
    """Parse a file's text into an IRModule; raises DiagnosticError with located errors."""
    from tirc.text.parser import parse_module  # deferred: start-up, see below

    return parse_module(text, name=name, defines=defines)


def print_module(module: IRModule) -> str:
    """The module as TVMScript text, in TVM 0.27's spelling."""
    from tirc.text.printer import print_module as _print  # deferred: start-up, see below

    return _print(module)


def script(node: Any) -> str:
    """Any IR node (expression, statement, buffer, function) as text, for messages."""
    from tirc.text.printer import script as _script  # deferred: start-up, see below

    return _script(node)

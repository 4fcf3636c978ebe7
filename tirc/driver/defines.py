"""`-D NAME=VALUE` definitions: module-level parameters overridden from the command line."""

from __future__ import annotations

import keyword
from collections.abc import Sequence

from tirc.diagnostics import DiagnosticError


def parse_defines(items: Sequence[str]) -> dict[str, str]:
    """NAME=VALUE items as a dict; a later definition of a name wins, as with a C compiler."""
    defines: dict[str, str] = {}
    for item in items:
        name, equals, value = item.partition("=")
        if not equals or not name.isidentifier() or keyword.iskeyword(name):
            raise DiagnosticError.at(None, f"invalid -D definition '{item}': expected NAME=VALUE")
        defines[name] = value
    return defines

"""Module-level parameters (`N = 1024`, `dtype = "float16"`) and the `-D NAME=VALUE` defines
that override them.

A define replaces the parameter's value where it is assigned, so later parameters computed
from it (`M = N * 2`) follow. A define that names no parameter is an error that lists the
parameters there are and suggests the closest.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from tirc.diagnostics import Diagnostic
from tirc.ir.expr import PrimExpr
from tirc.text.builder.namespace import SymbolicShape
from tirc.text.builder.scope import Scope, nearest
from tirc.text.syntax import tree

if TYPE_CHECKING:
    from tirc.text.builder.stmt import Builder

PARAMETER_TYPES = (bool, int, float, str, tuple, list, PrimExpr, type(None))


def is_symbolic(value: Any) -> bool:

    return isinstance(value, SymbolicShape)


# a define as given: text (`-D N=64`, parsed by define_value) or, from Python, a value
Define = str | int | float | bool


def define_value(text: Define) -> Any:
    """A define's value: an integer, a float, True/False, or else the text itself; a value
    given from Python (an int, float or bool) as it is."""
    if not isinstance(text, str):
        return text
    stripped = text.strip()
    for parse in (lambda s: int(s, 0), float):
        try:
            return parse(stripped)
        except ValueError:
            pass
    if stripped in ("True", "true"):
        return True
    if stripped in ("False", "false"):
        return False
    if len(stripped) >= 2 and stripped[0] == stripped[-1] and stripped[0] in "'\"":
        return stripped[1:-1]
    return text


class Parameters:
    def __init__(self, defines: Mapping[str, Define] | None):
        self.defines = dict(defines or {})
        self.names: list[str] = []

    def assign(self, builder: Builder, node: tree.Assign | tree.AnnAssign, scope: Scope) -> None:
        """A top-level assignment: evaluate it (or take the define) and bind the names."""
        target = node.target
        if node.value is None:
            raise builder.error(node, "a parameter needs a value")
        targets = target.items if isinstance(target, (tree.Tuple, tree.List)) else (target,)
        names = []
        for item in targets:
            if not isinstance(item, tree.Name):
                raise builder.error(item, "a parameter must be a name")
            names.append(item.id)
        saved = builder.scope
        builder.scope = scope
        try:
            value = builder.check_value(builder.evaluate(node.value))
        finally:
            builder.scope = saved
        values = [value]
        if len(names) > 1:
            if not isinstance(value, (tuple, list)) or len(value) != len(names):
                raise builder.error(node.value, f"cannot unpack the value into {len(names)} names")
            values = list(value)
        for name, item in zip(names, values, strict=True):
            if name in self.defines:
                item = define_value(self.defines[name])
            elif not isinstance(item, PARAMETER_TYPES) and not is_symbolic(item):
                raise builder.error(
                    node.value, f"parameter '{name}' must be a number, string or expression"
                )
            self.names.append(name)
            scope.bind(name, item)

    def unused_defines(self) -> list[Diagnostic]:
        problems = []
        for name in self.defines:
            if name in self.names:
                continue
            known = sorted(set(self.names))
            listing = ", ".join(known) if known else "none"
            suggestion = nearest(name, known)
            hint = f"; did you mean '{suggestion}'?" if suggestion else ""
            message = (
                f"-D {name}: the program has no parameter named '{name}' "
                f"(parameters: {listing}){hint}"
            )
            problems.append(Diagnostic.error(message))
        return problems

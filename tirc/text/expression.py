"""Standalone TVMScript expressions: index maps written in schedules and plans, such as
`T.index_map(lambda i, j: (j, i))` or `lambda n, c: (n, c // 4, c % 4)`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tirc.diagnostics import Diagnostic, DiagnosticError, Source, Span
from tirc.ir import dtype as dt
from tirc.ir.expr import PrimExpr, Var
from tirc.text.builder.context import BuildError, Context
from tirc.text.builder.macro import apply_lambda
from tirc.text.builder.namespace import global_names
from tirc.text.builder.scope import Scope
from tirc.text.builder.stmt import Builder
from tirc.text.builder.values import Arg, Invocation, Lambda
from tirc.text.syntax import parse_syntax, tree


@dataclass(frozen=True)
class IndexMap:
    """`lambda params: results`: new indices as expressions of the old."""

    params: tuple[Var, ...]
    results: tuple[PrimExpr, ...]


def parse_expression(
    text: str, *, name: str = "<expression>", variables: Mapping[str, Any] | None = None
) -> Any:
    """The value of one expression (`T.*` and the given variables in scope)."""
    source = Source(name, text)
    module = parse_syntax(source)
    if len(module.body) != 1 or not isinstance(module.body[0], tree.ExprStmt):
        raise DiagnosticError(
            Diagnostic.error("expected one expression", Span(source, 0, len(text)))
        )
    scope = Scope(names=global_names()).child()
    for key, value in (variables or {}).items():
        scope.bind(key, value)
    builder = Builder(Context(source), scope)
    try:
        return builder.evaluate(module.body[0].value)
    except BuildError as error:
        raise DiagnosticError(error.diagnostic) from None


def parse_index_map(
    text: str, *, name: str = "<index map>", index_dtype: str = "int32"
) -> IndexMap:
    """An index map from `T.index_map(lambda ...: ...)` or a bare lambda."""
    value = parse_expression(text, name=name)
    source = Source(name, text)
    if not isinstance(value, Lambda):
        raise DiagnosticError(
            Diagnostic.error(
                "an index map is a lambda: T.index_map(lambda i, j: (j, i))",
                Span(source, 0, len(text)),
            )
        )
    dtype = dt.parse_dtype(index_dtype)
    params = tuple(Var(param, dtype) for param in value.node.params)
    span = Span(source, 0, len(text))
    builder = Builder(Context(source), Scope())
    try:
        result = apply_lambda(
            builder, value, Invocation("lambda", [Arg(p, span) for p in params], {}, span)
        )
        items = result if isinstance(result, (tuple, list)) else (result,)
        results = tuple(builder.as_expr(item, span) for item in items)
    except BuildError as error:
        raise DiagnosticError(error.diagnostic) from None
    return IndexMap(params, results)

"""Values that are not expressions, as text: attribute maps (`T.func_attr`, annotations) with
sorted keys, as TVM's maps print, tuples as lists, and the odd call argument (a buffer, a dtype)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from tirc.ir.buffer import Buffer
from tirc.ir.dtype import DataType
from tirc.ir.expr import CommReducer, PrimExpr
from tirc.ir.stmt import Attrs, IterVar, TargetAttr
from tirc.text.printing.literals import format_float, quote
from tirc.text.printing.names import NameTable


class ExprPrinter(Protocol):
    """What formatting a value asks of the expression printer (`expr.ExprPrinter`, which
    formats call arguments through this module)."""

    names: NameTable

    def expr(self, node: PrimExpr) -> str: ...

    def buffer_name(self, buffer: Buffer) -> str: ...


def format_attrs(attrs: Attrs, exprs: ExprPrinter) -> str:
    """`{"key": value, ...}` with sorted keys."""
    items = sorted(attrs.items, key=lambda item: item[0])
    return "{" + ", ".join(f"{quote(key)}: {format_value(v, exprs)}" for key, v in items) + "}"


def format_value(value: object, exprs: ExprPrinter) -> str:
    kind = type(value)
    formatter = _FORMATTERS.get(kind)
    if formatter is None:
        formatter = next((_FORMATTERS[k] for k in kind.__mro__ if k in _FORMATTERS), _other)
        _FORMATTERS[kind] = formatter
    return formatter(value, exprs)


def format_reducer(reducer: CommReducer, exprs: ExprPrinter) -> str:
    """`T.comm_reducer(lambda x, y: x + y, [T.float32(0.0)])`; its variables are local."""
    names = exprs.names
    names.push()
    params = ", ".join(names.define(var, var.name) for var in reducer.lhs + reducer.rhs)
    results = [exprs.expr(result) for result in reducer.result]
    names.pop()
    body = results[0] if len(results) == 1 else f"({', '.join(results)})"
    identity = ", ".join(exprs.expr(value) for value in reducer.identity)
    return f"T.comm_reducer(lambda {params}: {body}, [{identity}])"


def format_target(target: TargetAttr, exprs: ExprPrinter) -> str:
    return f"T.target({format_value(target.config, exprs)})"


def _sequence(value: Any, exprs: ExprPrinter) -> str:
    return "[" + ", ".join(format_value(item, exprs) for item in value) + "]"


def _other(value: Any, exprs: ExprPrinter) -> str:
    return str(value)


# exact classes first (bool before its base int); subclasses resolve through the MRO once
_FORMATTERS: dict[type, Callable[[Any, ExprPrinter], str]] = {
    type(None): lambda value, exprs: "None",
    bool: lambda value, exprs: "True" if value else "False",
    int: lambda value, exprs: str(value),
    float: lambda value, exprs: format_float(value),
    str: lambda value, exprs: quote(value),
    tuple: _sequence,
    list: _sequence,
    dict: lambda value, exprs: format_attrs(Attrs(tuple(value.items())), exprs),
    Attrs: format_attrs,
    PrimExpr: lambda value, exprs: exprs.expr(value),
    Buffer: lambda value, exprs: exprs.buffer_name(value),
    DataType: lambda value, exprs: quote(str(value)),
    CommReducer: format_reducer,
    IterVar: lambda value, exprs: exprs.expr(value.var),
    TargetAttr: format_target,
}

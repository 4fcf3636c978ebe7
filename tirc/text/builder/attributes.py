"""`value.name` for the values that have attributes: buffers (`A.data`, `A.shape`,
`A.elem_offset`, `A.view(...)`, `A.vload(...)`, `A.vstore(...)`), iteration variables
(`tx.var`) and expressions (`x.dtype`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tirc.ir import arith
from tirc.ir.buffer import Buffer
from tirc.ir.expr import IntImm, PrimExpr
from tirc.ir.stmt import IterVar
from tirc.text.builder.buffers import view, vload, vstore
from tirc.text.builder.expr import ATTRIBUTES, Evaluator
from tirc.text.builder.scope import nearest
from tirc.text.builder.values import BoundMethod, DTypeValue, HandleType
from tirc.text.syntax import tree


def _elem_offset(buffer: Buffer) -> PrimExpr:
    if buffer.elem_offset is not None:
        return buffer.elem_offset
    return IntImm(0, buffer.index_dtype)


def _view_method(ev: Any, buffer: Buffer, inv: Any) -> Any:
    return view(ev, buffer, inv)


def _scope_method(ev: Any, buffer: Buffer, inv: Any) -> str:
    return buffer.scope


def _vload_method(ev: Any, buffer: Buffer, inv: Any) -> Any:
    return vload(ev, buffer, inv)


def _vstore_method(ev: Any, buffer: Buffer, inv: Any) -> Any:
    return vstore(ev, buffer, inv)


BUFFER_ATTRIBUTES: dict[str, Callable[[Buffer], Any]] = {
    "data": lambda b: b.data,
    "dtype": lambda b: str(b.dtype),
    "shape": lambda b: list(b.shape),
    "strides": lambda b: list(b.strides),
    "elem_offset": _elem_offset,
    "name": lambda b: b.name,
    "ndim": lambda b: b.ndim,
    "offset_factor": lambda b: b.offset_factor,
    "data_alignment": lambda b: b.data_alignment,
    "view": lambda b: BoundMethod("view", b, _view_method),
    "scope": lambda b: BoundMethod("scope", b, _scope_method),
    "vload": lambda b: BoundMethod("vload", b, _vload_method),
    "vstore": lambda b: BoundMethod("vstore", b, _vstore_method),
}
ITER_VAR_ATTRIBUTES: dict[str, Callable[[IterVar], Any]] = {
    "var": lambda iv: iv.var,
    "dom": lambda iv: iv.dom,
    "thread_tag": lambda iv: iv.thread_tag,
}
EXPR_ATTRIBUTES: dict[str, Callable[[PrimExpr], Any]] = {
    "dtype": lambda e: str(e.dtype),
    "name": lambda e: getattr(e, "name", None),
}
# `T.handle().ty`, `T.float32.dtype`: TVM prints types this way in a few places.
TYPE_ATTRIBUTES: dict[str, Callable[[Any], Any]] = {
    "ty": lambda t: t,
    "dtype": lambda t: str(t.dtype) if isinstance(t, DTypeValue) else "handle",
}
TABLES: dict[type, tuple[str, dict[str, Callable[[Any], Any]]]] = {
    Buffer: ("buffer", BUFFER_ATTRIBUTES),
    IterVar: ("iteration variable", ITER_VAR_ATTRIBUTES),
    DTypeValue: ("type", TYPE_ATTRIBUTES),
    HandleType: ("type", TYPE_ATTRIBUTES),
}


@ATTRIBUTES.register(Buffer, IterVar, DTypeValue, HandleType, PrimExpr)
def attribute(ev: Evaluator, value: Any, node: tree.Attribute) -> Any:
    value = ev.check_value(value)
    kind, table = TABLES.get(type(value), ("", {}))
    if not table and isinstance(value, PrimExpr):
        kind, table = "expression", EXPR_ATTRIBUTES
    if not table:
        raise ev.error(node, f"{arith.describe(value)} has no attribute '{node.attr}'")
    getter = table.get(node.attr)
    if getter is None:
        suggestion = nearest(node.attr, list(table))
        hint = f"; did you mean '{suggestion}'?" if suggestion else ""
        raise ev.error(node, f"a {kind} has no attribute '{node.attr}'{hint}")
    return getter(value)

"""Deep equality of expressions with variables compared by identity, for the printer's sugar
(`T.axis.remap`, `A.view`): unlike structural equality, it never pairs two free variables."""

from __future__ import annotations

from tirc.ir.buffer import Buffer
from tirc.ir.expr import FloatImm, IntImm, Var
from tirc.ir.functor import child_fields
from tirc.ir.node import Node


def same_expr(a: object, b: object) -> bool:
    if a is b:
        return True
    kind = type(a)
    if kind is not type(b):
        return False
    if isinstance(a, (IntImm, FloatImm)) and isinstance(b, (IntImm, FloatImm)):
        return a.value == b.value and a.dtype == b.dtype
    if kind is Var or kind is Buffer:
        return False
    if isinstance(a, Node):
        names = child_fields(type(a))
        return all(same_expr(getattr(a, name), getattr(b, name)) for name in names)
    if isinstance(a, tuple) and isinstance(b, tuple):
        return len(a) == len(b) and all(same_expr(x, y) for x, y in zip(a, b, strict=True))
    return a == b

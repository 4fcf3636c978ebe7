"""Which nodes TVMScript's folding operators would rebuild differently (`x + 0` reads back as
`x`): those print in call form, `T.Add(x, 0)`. Mirrors TVM's constant folder: constants,
identity and absorbing operands, and `T.min(x, x)`."""

from __future__ import annotations

import math
from collections.abc import Callable

from tirc.ir.expr import (
    EQ,
    GE,
    GT,
    LE,
    LT,
    NE,
    Add,
    And,
    BinaryOp,
    CompareOp,
    Div,
    FloatImm,
    FloorDiv,
    FloorMod,
    IntImm,
    LogicalOp,
    Max,
    Min,
    Mod,
    Mul,
    Or,
    PrimExpr,
    Sub,
    Var,
)
from tirc.ir.integer import is_index_type


def _value(expr: PrimExpr) -> int | float | None:
    if isinstance(expr, (IntImm, FloatImm)):
        return expr.value
    return None


def _add(a: PrimExpr, b: PrimExpr) -> bool:
    x, y = _value(a), _value(b)
    return x is not None and (y is not None or x == 0) or y == 0


def _sub(a: PrimExpr, b: PrimExpr) -> bool:
    x, y = _value(a), _value(b)
    return (x is not None and y is not None) or y == 0


def _mul(a: PrimExpr, b: PrimExpr) -> bool:
    x, y = _value(a), _value(b)
    if x is not None and y is not None:
        return True
    return x in (0, 1) or y in (0, 1)


def _div(a: PrimExpr, b: PrimExpr) -> bool:
    """Truncating and floor division: constants (non-zero divisor), `0 / b`, `a / 1`."""
    x, y = _value(a), _value(b)
    if x is not None and y is not None:
        return y != 0
    return x == 0 or y == 1


def _mod(a: PrimExpr, b: PrimExpr) -> bool:
    """Remainders fold on index types only (`T.int8(0) % x` and float ones stay)."""
    x, y = _value(a), _value(b)
    if not is_index_type(a.dtype):
        return False
    if x is not None and y is not None:
        return y != 0
    return x == 0 or y == 1


def _floormod(a: PrimExpr, b: PrimExpr) -> bool:
    """As `_mod`, and two unsigned constants fold too."""
    x, y = _value(a), _value(b)
    if a.dtype.is_uint and x is not None and y is not None:
        return y != 0
    return _mod(a, b)


def _min_max(a: PrimExpr, b: PrimExpr) -> bool:
    """`T.min` / `T.max` also fold a variable with itself (the one operand text reads back
    as the same object), and infinities."""
    if (a is b and isinstance(a, Var)) or (_value(a) is not None and _value(b) is not None):
        return True
    return _is_infinite(a) or _is_infinite(b)


def _is_infinite(expr: PrimExpr) -> bool:
    return isinstance(expr, FloatImm) and math.isinf(expr.value)


def _compare(a: PrimExpr, b: PrimExpr) -> bool:
    return _value(a) is not None and _value(b) is not None


def _logical(a: PrimExpr, b: PrimExpr) -> bool:
    """`T.And` / `T.Or` fold as soon as either side is a constant."""
    return isinstance(a, IntImm) or isinstance(b, IntImm)


_RULES: dict[type, Callable[[PrimExpr, PrimExpr], bool]] = {
    Add: _add,
    Sub: _sub,
    Mul: _mul,
    Div: _div,
    FloorDiv: _div,
    Mod: _mod,
    FloorMod: _floormod,
    Min: _min_max,
    Max: _min_max,
    EQ: _compare,
    NE: _compare,
    LT: _compare,
    LE: _compare,
    GT: _compare,
    GE: _compare,
    And: _logical,
    Or: _logical,
}


def would_fold(node: BinaryOp | CompareOp | LogicalOp) -> bool:
    """Whether rebuilding this binary node from its operands would change it."""
    rule = _RULES.get(type(node))
    if rule is None:
        return False
    return rule(node.a, node.b)

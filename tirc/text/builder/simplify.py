"""A small linear simplifier for the extents the parser computes (`stop - start`, `hi - lo`).

TVM simplifies these with its arithmetic analyzer, so `A[i * 4:i * 4 + 4]` has extent 4 and
`range(3, n + 5)` has extent `n + 2`. Here an integer expression is read as a sum of
coefficient * term plus a constant, where terms are variables and any non-linear
sub-expression (compared structurally); the sum is written back with positive terms first,
then the constant, then the subtracted terms. Exact for affine expressions, which is what
index arithmetic in practice is; anything else keeps its shape.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import fields

from tirc.ir import expr as ir
from tirc.ir.dtype import DataType
from tirc.ir.expr import IntImm, PrimExpr
from tirc.text.builder import arith

FIELD_NAMES: dict[type, tuple[str, ...]] = {}


def _field_names(cls: type) -> tuple[str, ...]:
    names = FIELD_NAMES.get(cls)
    if names is None:
        names = FIELD_NAMES[cls] = tuple(f.name for f in fields(cls) if f.name != "span")
    return names


def expr_key(node: object) -> Hashable:
    """A hashable key equal for structurally identical expressions over the same variables."""
    if isinstance(node, ir.Var):
        return ("var", id(node))
    if isinstance(node, (IntImm, ir.FloatImm)):
        return (type(node).__name__, node.value, node.dtype)
    if isinstance(node, tuple):
        return tuple(expr_key(item) for item in node)
    if isinstance(node, ir.PrimExpr):
        cls = type(node)
        parts: tuple[Hashable, ...] = (cls.__name__,)
        return parts + tuple(expr_key(getattr(node, f)) for f in _field_names(cls))
    if hasattr(node, "__dataclass_fields__"):
        return ("node", id(node))
    return node


class Linear:
    """coefficient * term summed, plus a constant; terms keep their first-seen order."""

    __slots__ = ("terms", "constant")

    def __init__(self) -> None:
        self.terms: dict[Hashable, list[object]] = {}  # key -> [term, coefficient]
        self.constant = 0

    def add(self, expr: PrimExpr, scale: int) -> None:
        if isinstance(expr, IntImm):
            self.constant += expr.value * scale
        elif isinstance(expr, ir.Add):
            self.add(expr.a, scale)
            self.add(expr.b, scale)
        elif isinstance(expr, ir.Sub):
            self.add(expr.a, scale)
            self.add(expr.b, -scale)
        elif isinstance(expr, ir.Mul) and isinstance(expr.b, IntImm):
            self.add(expr.a, scale * expr.b.value)
        elif isinstance(expr, ir.Mul) and isinstance(expr.a, IntImm):
            self.add(expr.b, scale * expr.a.value)
        else:
            key = expr_key(expr)
            entry = self.terms.get(key)
            if entry is None:
                self.terms[key] = [expr, scale]
            else:
                entry[1] = entry[1] + scale  # type: ignore[operator]

    def build(self, dtype: DataType) -> PrimExpr:
        positive: list[PrimExpr] = []
        negative: list[PrimExpr] = []
        for term, coefficient in self.terms.values():
            assert isinstance(coefficient, int) and isinstance(term, PrimExpr)
            if coefficient == 0:
                continue
            scaled = (
                term if abs(coefficient) == 1 else ir.Mul(term, IntImm(abs(coefficient), dtype))
            )
            (positive if coefficient > 0 else negative).append(scaled)
        constant = arith.wrap_int(self.constant, dtype)
        result: PrimExpr | None = None
        for term in positive:
            result = term if result is None else ir.Add(result, term)
        if result is None:
            result = IntImm(constant, dtype)
        elif constant > 0:
            result = ir.Add(result, IntImm(constant, dtype))
        for term in negative:
            result = ir.Sub(result, term)
        if constant < 0 and (positive or negative):
            result = ir.Sub(result, IntImm(-constant, dtype))
        elif constant > 0 and not positive and negative:
            pass  # the constant leads: `8 - n`
        return result


def is_integer_expr(expr: PrimExpr) -> bool:
    dtype: DataType = expr.dtype  # type: ignore[attr-defined]
    return dtype.is_scalar and dtype.is_integer


def simplify(expr: PrimExpr) -> PrimExpr:
    """`expr` with like terms collected, when it is an integer expression; else unchanged."""
    if not is_integer_expr(expr) or isinstance(expr, (IntImm, ir.Var)):
        return expr
    linear = Linear()
    linear.add(expr, 1)
    return linear.build(expr.dtype)  # type: ignore[attr-defined]


def difference(upper: PrimExpr, lower: PrimExpr) -> PrimExpr:
    """`upper - lower`, simplified: the extent of [lower, upper)."""
    upper, lower = arith.match_types(upper, lower)
    if not is_integer_expr(upper):
        return arith.arithmetic("-", upper, lower)
    linear = Linear()
    linear.add(upper, 1)
    linear.add(lower, -1)
    return linear.build(upper.dtype)  # type: ignore[attr-defined]


def constant_difference(upper: PrimExpr, lower: PrimExpr) -> int | None:
    """`upper - lower` when it is a known integer, else None."""
    result = difference(upper, lower)
    return result.value if isinstance(result, IntImm) else None

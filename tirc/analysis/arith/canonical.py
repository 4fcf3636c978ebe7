"""The canonical form of integer index expressions: a constant plus scaled atoms.

`i * 128 + (j * 8 + 3) - i * 64` becomes {i: 64, j: 8} + 3. Atoms are anything that is not
addition or scaling by a constant (variables, floordiv/floormod terms, loads), identified
structurally with variables by identity. Printing back orders terms by falling scale, first
appearance breaking ties, which is how index arithmetic reads (`i * 128 + j * 8 + k`).
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass, field

from tirc.analysis.arith.constant import wrap
from tirc.ir import expr as E
from tirc.ir.dtype import DataType
from tirc.ir.expr import IntImm, PrimExpr
from tirc.ir.functor import child_fields
from tirc.ir.node import Node


def expr_key(expr: object) -> Hashable:
    """A hashable key equal for structurally identical expressions over the same variables."""
    if isinstance(expr, E.Var):
        return ("var", id(expr))
    if isinstance(expr, Node):
        if type(expr).__name__ == "Buffer":
            return ("buffer", id(expr))
        return (type(expr).__name__,) + tuple(
            expr_key(getattr(expr, name)) for name in child_fields(type(expr))
        )
    if isinstance(expr, tuple):
        return tuple(expr_key(item) for item in expr)
    if isinstance(expr, float):
        return ("float", repr(expr))
    return expr  # type: ignore[return-value]


@dataclass
class Sum:
    """`const + sum(coeff * atom)`, all of one integer dtype."""

    dtype: DataType
    terms: dict[Hashable, list] = field(default_factory=dict)  # key -> [atom, coeff]
    const: int = 0

    def add_term(self, atom: PrimExpr, coeff: int) -> None:
        if coeff == 0:
            return
        key = expr_key(atom)
        slot = self.terms.get(key)
        if slot is None:
            self.terms[key] = [atom, coeff]
        else:
            slot[1] += coeff
            if slot[1] == 0:
                del self.terms[key]

    def add(self, other: Sum, scale: int = 1) -> None:
        for atom, coeff in other.terms.values():
            self.add_term(atom, coeff * scale)
        self.const += other.const * scale

    def scaled(self, scale: int) -> Sum:
        result = Sum(self.dtype)
        result.add(self, scale)
        return result

    @property
    def is_const(self) -> bool:
        return not self.terms


def to_sum(expr: PrimExpr) -> Sum:
    """Decompose an integer expression over +, -, and multiplication by constants."""
    dtype = expr.dtype  # type: ignore[attr-defined]
    result = Sum(dtype)
    stack: list[tuple[PrimExpr, int]] = [(expr, 1)]
    while stack:
        node, scale = stack.pop()
        if isinstance(node, IntImm):
            result.const += node.value * scale
        elif isinstance(node, E.Add):
            stack.append((node.b, scale))
            stack.append((node.a, scale))
        elif isinstance(node, E.Sub):
            stack.append((node.b, -scale))
            stack.append((node.a, scale))
        elif isinstance(node, E.Mul) and isinstance(node.b, IntImm):
            stack.append((node.a, scale * node.b.value))
        elif isinstance(node, E.Mul) and isinstance(node.a, IntImm):
            stack.append((node.b, scale * node.a.value))
        else:
            result.add_term(node, scale)
    return result


def from_sum(value: Sum) -> PrimExpr:
    """The expression of a Sum: positive terms first by falling scale, then subtractions."""
    dtype = value.dtype
    const = wrap(value.const, dtype)
    terms = [(atom, coeff) for atom, coeff in value.terms.values() if coeff != 0]
    order = sorted(range(len(terms)), key=lambda index: -abs(terms[index][1]))
    positive = [terms[index] for index in order if terms[index][1] > 0]
    negative = [terms[index] for index in order if terms[index][1] < 0]

    def scaled(atom: PrimExpr, coeff: int) -> PrimExpr:
        return atom if coeff == 1 else E.Mul(atom, IntImm(coeff, dtype))

    result: PrimExpr | None = None
    for atom, coeff in positive:
        term = scaled(atom, coeff)
        result = term if result is None else E.Add(result, term)
    if result is None:
        if not negative:
            return IntImm(const, dtype)
        if const > 0:
            result = IntImm(const, dtype)
        else:  # no positive part to subtract from: `x * -2 - 3`
            atom, coeff = negative.pop(0)
            result = E.Mul(atom, IntImm(coeff, dtype))
        const = min(const, 0)
    for atom, coeff in negative:
        result = E.Sub(result, scaled(atom, -coeff))
    if const > 0 and not isinstance(result, IntImm):
        result = E.Add(result, IntImm(const, dtype))
    elif const < 0:
        result = E.Sub(result, IntImm(-const, dtype))
    return result

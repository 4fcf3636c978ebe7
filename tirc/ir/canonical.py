"""The canonical form of integer index expressions: a constant plus scaled atoms.

`i * 128 + (j * 8 + 3) - i * 64` becomes {i: 64, j: 8} + 3. Atoms are anything that is not
addition or scaling by a constant (variables, floordiv/floormod terms, loads), identified
structurally with variables by identity (`expr_key`). Printing back orders terms by falling
signed scale, first appearance breaking ties, which is how TVM writes index arithmetic
(`i * 128 + j * 8 + k`, `9 - j - i * 4`), or as first written, for the parser (see `Order`).
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import Literal

from tirc.ir import expr as E
from tirc.ir.dtype import DataType
from tirc.ir.expr import IntImm, PrimExpr
from tirc.ir.integer import wrap
from tirc.ir.structural import expr_key

# "scale": terms by falling scale, the constant last (`i * 128 + j * 8 - k + 3`), how the
# simplifier writes index arithmetic; "written": terms in order of first appearance, a
# positive constant before the subtractions (`hi + 1 - lo`), how TVM's parser leaves the
# extents it computes.
Order = Literal["scale", "written"]


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
    dtype = expr.dtype
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


def from_sum(value: Sum, order: Order = "scale") -> PrimExpr:
    """The expression of a Sum: positive terms first, then subtractions (see `Order`)."""
    dtype = value.dtype
    const = wrap(value.const, dtype)
    terms = [(atom, coeff) for atom, coeff in value.terms.values() if coeff != 0]
    if order == "scale":
        # by falling signed scale, as TVM's canonical form: `9 - j - i * 4`, the subtracted
        # terms smallest first; at equal scale by falling lower then upper factor of the
        # split an atom is (`k // 8 + j`, `j % 16 + k % 8`); first appearance breaks ties
        terms.sort(key=lambda term: (-term[1], *_split_rank(term[0])))
    positive = [term for term in terms if term[1] > 0]
    negative = [term for term in terms if term[1] < 0]

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
        elif order == "scale" and not (const == 0 and len(negative) == 1 and negative[0][1] != -1):
            result = IntImm(0, dtype)  # nothing positive to subtract from: `0 - j - i * 4 - 3`
        else:  # a lone scaled term, `i * -2` (and the parser's `x * -2 - 3`)
            atom, coeff = negative.pop(0)
            result = E.Mul(atom, IntImm(coeff, dtype))
        const = min(const, 0)
    elif const > 0 and order == "written":
        result = E.Add(result, IntImm(const, dtype))
        const = 0
    for atom, coeff in negative:
        result = E.Sub(result, scaled(atom, -coeff))
    if const > 0 and not isinstance(result, IntImm):
        result = E.Add(result, IntImm(const, dtype))
    elif const < 0 and wrap(-const, dtype) != -const:
        result = E.Add(result, IntImm(const, dtype))  # the least value has no negation: x + -128
    elif const < 0:
        result = E.Sub(result, IntImm(-const, dtype))
    return result


_UNBOUNDED = 1 << 62  # a split with no upper factor sorts above every finite one


def _split_rank(atom: PrimExpr) -> tuple[int, int]:
    """(-lower factor, -upper factor) of an atom read as TVM's split `x // lower % (upper /
    lower)`: `k // 8` is (8, unbounded), `k % 8` (1, 8), `k % 32 // 4` (4, 32), others
    (1, unbounded)."""
    lower, upper = 1, _UNBOUNDED
    if isinstance(atom, E.FloorDiv) and isinstance(atom.b, IntImm) and atom.b.value > 0:
        lower = atom.b.value
        inner = atom.a
        if isinstance(inner, E.FloorMod) and isinstance(inner.b, IntImm):
            upper = inner.b.value
    elif isinstance(atom, E.FloorMod) and isinstance(atom.b, IntImm) and atom.b.value > 0:
        upper = atom.b.value
        inner = atom.a
        if isinstance(inner, E.FloorDiv) and isinstance(inner.b, IntImm) and inner.b.value > 0:
            lower = inner.b.value
            upper *= lower
    return -lower, -upper


def merge_splits(value: Sum) -> Sum:
    """`value` with the digits of one index joined, as TVM's canonical form joins them:

        x // 3136 * 3136 + x % 3136 // 56 * 56 + x % 56   ->   x

    Two terms `a * (x % u) // l` and `b * (x % l) // m` with `m | l | u` and `a * m == b * l`
    are `b * (x % u) // m` (`u` may be unbounded: `x // l`), an identity of floor division
    for every integer x. Returns `value` itself when nothing joins."""
    changed = False
    while True:
        entries = list(value.terms.items())
        parsed = [(key, atom, coeff, _as_split(atom)) for key, (atom, coeff) in entries]
        joined = None
        for key_a, _, coeff_a, split_a in parsed:
            if split_a is None:
                continue
            for key_b, _, coeff_b, split_b in parsed:
                if split_b is None or key_b == key_a:
                    continue
                source_a, low_a, high_a = split_a
                source_b, low_b, high_b = split_b
                if (
                    source_a == source_b
                    and high_b == low_a
                    and low_a % low_b == 0
                    and (high_a is None or high_a % low_a == 0)
                    and coeff_a * low_b == coeff_b * low_a
                ):
                    atom = _make_split(source_a, low_b, high_a, value)
                    joined = (key_a, key_b, atom, coeff_b)
                    break
            if joined is not None:
                break
        if joined is None:
            return value
        if not changed:
            value = _copy(value)
            changed = True
        key_a, key_b, atom, coeff = joined
        del value.terms[key_a]
        del value.terms[key_b]
        value.add_term(atom, coeff)


def _copy(value: Sum) -> Sum:
    result = Sum(value.dtype, const=value.const)
    for key, (atom, coeff) in value.terms.items():
        result.terms[key] = [atom, coeff]
    return result


def _as_split(atom: PrimExpr) -> tuple[Hashable, int, int | None] | None:
    """(source key, lower, upper) of `(x % upper) // lower` (upper None: `x // lower`), with
    `x` itself `(x, 1, None)`; None for other atoms."""
    if isinstance(atom, E.FloorDiv) and isinstance(atom.b, IntImm) and atom.b.value > 0:
        inner = atom.a
        if isinstance(inner, E.FloorMod) and isinstance(inner.b, IntImm) and inner.b.value > 0:
            return expr_key(inner.a), atom.b.value, inner.b.value
        return expr_key(inner), atom.b.value, None
    if isinstance(atom, E.FloorMod) and isinstance(atom.b, IntImm) and atom.b.value > 0:
        return expr_key(atom.a), 1, atom.b.value
    if isinstance(atom, (E.Add, E.Sub, E.Mul)) or isinstance(atom, IntImm):
        return None
    return expr_key(atom), 1, None


def _make_split(source_key: Hashable, lower: int, upper: int | None, value: Sum) -> PrimExpr:
    source = _source_of(source_key, value)
    dtype = value.dtype
    result = source if upper is None else E.FloorMod(source, IntImm(upper, dtype))
    if lower != 1:
        result = E.FloorDiv(result, IntImm(lower, dtype))
    return result


def _source_of(source_key: Hashable, value: Sum) -> PrimExpr:
    """The source expression behind a split key, found among the terms' atoms."""
    for atom, _ in value.terms.values():
        inner = getattr(atom, "a", None)
        for candidate in (atom, inner, getattr(inner, "a", None)):
            if candidate is not None and expr_key(candidate) == source_key:
                return candidate
    raise AssertionError("a split's source is among the terms")


def difference(upper: PrimExpr, lower: PrimExpr, order: Order = "scale") -> PrimExpr:
    """`upper - lower` with like terms collected; both of one scalar integer dtype."""
    total = to_sum(upper)
    total.add(to_sum(lower), -1)
    return from_sum(total, order)

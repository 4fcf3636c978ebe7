"""Constant integer bounds: the least and greatest value an integer expression can take.

`None` on either side means unbounded. Variables take their bounds from the caller's map of
known ranges, else from their dtype (and non-negativity for size variables).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from tirc.ir import expr as E
from tirc.ir.expr import PrimExpr, Var
from tirc.ir.functor import Dispatch
from tirc.ir.integer import int_range


@dataclass(frozen=True, slots=True)
class Bound:
    min: int | None
    max: int | None

    @property
    def is_const(self) -> bool:
        return self.min is not None and self.min == self.max

    def is_within(self, low: int, high: int) -> bool:
        """True when every value lies in [low, high]."""
        return (
            self.min is not None and self.max is not None and low <= self.min and self.max <= high
        )

    def clamp_closed_ends(self, limits: Bound) -> Bound:
        """Each known end clamped into `limits`; an open end stays open."""
        low = self.min if self.min is None or limits.min is None else max(self.min, limits.min)
        high = self.max if self.max is None or limits.max is None else min(self.max, limits.max)
        return Bound(low, high)

    def shifted(self, offset: int) -> Bound:
        """Every value plus `offset`."""
        return Bound(
            None if self.min is None else self.min + offset,
            None if self.max is None else self.max + offset,
        )

    def union(self, other: Bound) -> Bound:
        low = None if self.min is None or other.min is None else min(self.min, other.min)
        high = None if self.max is None or other.max is None else max(self.max, other.max)
        return Bound(low, high)

    def intersect(self, other: Bound) -> Bound:
        low = (
            other.min
            if self.min is None
            else self.min
            if other.min is None
            else max(self.min, other.min)
        )
        high = (
            other.max
            if self.max is None
            else self.max
            if other.max is None
            else min(self.max, other.max)
        )
        return Bound(low, high)


EVERYTHING = Bound(None, None)


def _add(a: int | None, b: int | None) -> int | None:
    return None if a is None or b is None else a + b


def _neg(a: int | None) -> int | None:
    return None if a is None else -a


def _mul(a: Bound, b: Bound) -> Bound:
    if a.min is None or a.max is None or b.min is None or b.max is None:
        if b.is_const and b.min == 0 or a.is_const and a.min == 0:
            return Bound(0, 0)
        if b.is_const and b.min is not None and b.min > 0:
            return Bound(
                None if a.min is None else a.min * b.min, None if a.max is None else a.max * b.min
            )
        if a.is_const and a.min is not None and a.min > 0:
            return _mul(b, a)
        return EVERYTHING
    products = [a.min * b.min, a.min * b.max, a.max * b.min, a.max * b.max]
    return Bound(min(products), max(products))


def _floordiv(a: Bound, divisor: Bound) -> Bound:
    if not divisor.is_const and divisor.min is not None and divisor.min >= 0:
        return _floordiv_by_positive(a, max(divisor.min, 1), divisor.max)
    if not divisor.is_const or divisor.min is None or divisor.min <= 0:
        return EVERYTHING
    d = divisor.min
    return Bound(None if a.min is None else a.min // d, None if a.max is None else a.max // d)


def _floordiv_by_positive(a: Bound, low: int, high: int | None) -> Bound:
    """`a // d` for a divisor d in [low, high] (high None: unbounded), low >= 1.

    For a fixed dividend v the quotient moves monotonically towards 0 (v >= 0) or -1 (v < 0)
    as d grows, and for a fixed d it grows with v, so the corners bound it:

        [-1, 5] // [1, inf)   ->   [-1, 5]
    """

    def far(v: int) -> int:  # v // d for the largest d
        if high is not None:
            return v // high
        return 0 if v >= 0 else -1

    least = None if a.min is None else min(a.min // low, far(a.min))
    most = None if a.max is None else max(a.max // low, far(a.max))
    return Bound(least, most)


def _floormod(a: Bound, divisor: Bound) -> Bound:
    if not divisor.is_const and divisor.min is not None and divisor.min >= 0:
        # x % d with 1 <= d: in [0, d - 1], and no more than x when x is non-negative
        high = None if divisor.max is None else divisor.max - 1
        if a.min is not None and a.min >= 0 and a.max is not None:
            high = a.max if high is None else min(high, a.max)
        return Bound(0, high)
    if not divisor.is_const or divisor.min is None or divisor.min <= 0:
        return EVERYTHING
    d = divisor.min
    if a.is_within(0, d - 1):
        return a
    if a.min is not None and a.max is not None and a.min // d == a.max // d:
        return Bound(a.min % d, a.max % d)
    return Bound(0, d - 1)


def _truncdiv(a: Bound, divisor: Bound) -> Bound:
    if a.min is not None and a.min >= 0:
        return _floordiv(a, divisor)
    return EVERYTHING


def _truncmod(a: Bound, divisor: Bound) -> Bound:
    if a.min is not None and a.min >= 0:
        return _floormod(a, divisor)
    if divisor.is_const and divisor.min is not None and divisor.min > 0:
        return Bound(-(divisor.min - 1), divisor.min - 1)
    return EVERYTHING


def _binary(
    combine: Callable[[Bound, Bound], Bound],
) -> Callable[[Callable[[PrimExpr], Bound], PrimExpr], Bound]:
    def rule(bound: Callable[[PrimExpr], Bound], node: PrimExpr) -> Bound:
        assert isinstance(node, E.BinaryOp)  # registered for BinaryOp classes only
        return combine(bound(node.a), bound(node.b))

    return rule


# The bounds of each operation from its operands' (the context: the bound of an operand);
# any other expression is bounded by its dtype.
_RULES: Dispatch[Callable[[PrimExpr], Bound], [], Bound] = Dispatch("constant bound")
_RULES.register(E.Add)(_binary(lambda a, b: Bound(_add(a.min, b.min), _add(a.max, b.max))))
_RULES.register(E.Sub)(
    _binary(lambda a, b: Bound(_add(a.min, _neg(b.max)), _add(a.max, _neg(b.min))))
)
_RULES.register(E.Mul)(_binary(_mul))
_RULES.register(E.FloorDiv)(_binary(_floordiv))
_RULES.register(E.FloorMod)(_binary(_floormod))
_RULES.register(E.Div)(_binary(_truncdiv))
_RULES.register(E.Mod)(_binary(_truncmod))
_RULES.register(E.Min)(
    _binary(
        lambda a, b: Bound(
            None if a.min is None or b.min is None else min(a.min, b.min),
            b.max if a.max is None else a.max if b.max is None else min(a.max, b.max),
        )
    )
)
_RULES.register(E.Max)(
    _binary(
        lambda a, b: Bound(
            b.min if a.min is None else a.min if b.min is None else max(a.min, b.min),
            None if a.max is None or b.max is None else max(a.max, b.max),
        )
    )
)


@_RULES.register(E.Select)
def _select(bound: Callable[[PrimExpr], Bound], node: E.Select) -> Bound:
    return bound(node.true_value).union(bound(node.false_value))


@_RULES.register(E.Call)
def _call(bound: Callable[[PrimExpr], Bound], node: E.Call) -> Bound:
    """Shifts of a non-negative value by a non-negative amount below the width grow (or
    shrink) monotonically with both: `31 << i` for i in [0, 15] is at most `31 << 15`."""
    if node.op not in ("shift_left", "shift_right") or len(node.args) != 2:
        return EVERYTHING
    a, b = (bound(arg) if isinstance(arg, E.PrimExpr) else EVERYTHING for arg in node.args)
    width = node.dtype.bits
    if (
        a.min is None
        or a.max is None
        or b.min is None
        or b.max is None
        or a.min < 0
        or not 0 <= b.min <= b.max < width
    ):
        return EVERYTHING
    if node.op == "shift_left":
        return Bound(a.min << b.min, a.max << b.max)
    return Bound(a.min >> b.max, a.max >> b.min)


def _ceil_log2_argument(node: E.Cast) -> PrimExpr | None:
    """`n` of an integer `T.Cast(T.ceil(T.log2(n)))`, topi's ceil_log2, which loop bounds
    hold (TVM bounds it as below)."""
    value = node.value
    if not node.dtype.is_integer or not isinstance(value, E.Call) or value.op != "ceil":
        return None
    inner = value.args[0] if len(value.args) == 1 else None
    if isinstance(inner, E.Call) and inner.op == "log2" and len(inner.args) == 1:
        argument = inner.args[0]
        return argument if isinstance(argument, PrimExpr) else None
    return None


def _ceil_log2(bound: Callable[[PrimExpr], Bound], argument: PrimExpr) -> Bound:
    """ceil(log2(n)) grows with n: its bounds are those of n's ends, for n of at least 1 (an
    integer converted to float, or a float constant)."""
    if isinstance(argument, E.FloatImm):
        if not argument.value >= 1 or math.isinf(argument.value):
            return EVERYTHING
        value = math.ceil(math.log2(argument.value))
        return Bound(value, value)
    if not (isinstance(argument, E.Cast) and argument.value.dtype.is_integer):
        return EVERYTHING
    source = bound(argument.value)
    if source.min is None or source.max is None or source.min < 1:
        return EVERYTHING
    exact = 1 << {64: 53, 32: 24}.get(argument.dtype.bits, 0)  # integers the float holds
    if source.max > exact:
        return EVERYTHING
    return Bound(math.ceil(math.log2(source.min)), math.ceil(math.log2(source.max)))


def const_bound(expr: PrimExpr, ranges: Mapping[Var, Bound] | None = None) -> Bound:
    """Bounds of integer expression `expr`, given bounds of some variables."""
    known = ranges or {}

    def bound(node: PrimExpr) -> Bound:
        dtype = node.dtype
        if isinstance(node, E.IntImm):
            return Bound(node.value, node.value)
        if not (dtype.is_integer or dtype.is_bool) or dtype.is_vector:
            return EVERYTHING
        limits = Bound(*int_range(dtype))
        if isinstance(node, Var):
            found = known.get(node)
            if found is not None:
                # an end the caller left open stays open rather than taking the dtype's
                # limit: a symbolic value (a shape variable marked non-negative, a loop
                # variable below one) is not assumed to reach it, so `n + 2` does not wrap
                # and keeps its least value, as TVM's bounds assume no overflow
                return found.clamp_closed_ends(limits)
            return Bound(0, limits.max) if node.is_size_var else limits
        if isinstance(node, E.Cast):
            inner = node.value.dtype
            logarithm = _ceil_log2_argument(node)
            if logarithm is not None:
                return _ceil_log2(bound, logarithm).intersect(limits)
            if inner.is_integer or inner.is_bool:
                source = bound(node.value)
                if source.is_within(*int_range(dtype)):
                    return source
            return limits
        if isinstance(node, E.CompareOp | E.LogicalOp | E.Not):
            return Bound(0, 1)
        rule = _RULES.get(type(node))
        if rule is None:
            return limits
        result = rule(bound, node)
        # arithmetic that may overflow the dtype wraps: then nothing is known
        if (
            result.min is not None
            and result.max is not None
            and not result.is_within(*int_range(dtype))
        ):
            return limits
        return result.intersect(limits)

    return bound(expr)

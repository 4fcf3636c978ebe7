"""Interval sets with symbolic ends: what values an index takes as some variables range.

`relax(v0 * 8 + ax0, {ax0: [0, 8)})` is `[v0 * 8, v0 * 8 + 7]`: the variables named in the
domain map are relaxed, all others stay symbolic. Used to infer the region a block or a loop
nest touches. Ends are inclusive; `None` means unbounded on that side.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from tirc.analysis.arith.facts import Facts
from tirc.ir import expr as E
from tirc.ir.buffer import Range
from tirc.ir.expr import IntImm, PrimExpr, Var
from tirc.ir.functor import Dispatch, walk
from tirc.ir.integer import int_range
from tirc.ir.structural import expr_key


@dataclass(frozen=True, slots=True)
class IntervalSet:
    min: PrimExpr | None
    max: PrimExpr | None

    @staticmethod
    def point(value: PrimExpr) -> IntervalSet:
        return IntervalSet(value, value)

    @property
    def is_bounded(self) -> bool:
        return self.min is not None and self.max is not None


def _const(expr: PrimExpr | None) -> int | None:
    return expr.value if isinstance(expr, IntImm) else None


class _Relaxer:
    def __init__(self, domains: Mapping[Var, Range], analyzer: Facts):
        self.domains = domains
        self.analyzer = analyzer

    def simplify(self, expr: PrimExpr | None) -> PrimExpr | None:
        return None if expr is None else self.analyzer.simplify(expr)

    def relax(self, expr: PrimExpr) -> IntervalSet:
        if not self._depends(expr):
            return IntervalSet.point(expr)
        if isinstance(expr, Var):
            domain = self.domains.get(expr)
            if domain is None:
                return IntervalSet.point(expr)
            last = E.Sub(E.Add(domain.min, domain.extent), IntImm(1, domain.extent.dtype))
            return IntervalSet(domain.min, self.simplify(last))
        rule = _RULES.get(type(expr))
        return rule(self, expr) if rule is not None else _by_bounds(self, expr)

    def _depends(self, expr: PrimExpr) -> bool:
        found = False

        def visit(node: object) -> None:
            nonlocal found
            if isinstance(node, Var) and node in self.domains:
                found = True

        walk(expr, visit)
        return found

    def combine(
        self, make: Callable[[PrimExpr, PrimExpr], PrimExpr], low: tuple, high: tuple
    ) -> IntervalSet:
        def end(pair: tuple[PrimExpr | None, PrimExpr | None]) -> PrimExpr | None:
            a, b = pair
            if a is None or b is None:
                return None
            result = make(a, b)
            if isinstance(a, IntImm) and isinstance(b, IntImm):
                # constant ends: compute exactly; an end past the dtype's range is unbounded
                exact = self.analyzer.const_bound(result)
                if exact.min is None or not exact.is_const:
                    return None
            return self.simplify(result)

        return IntervalSet(end(low), end(high))


def _add(relaxer: _Relaxer, expr: E.Add) -> IntervalSet:
    a, b = relaxer.relax(expr.a), relaxer.relax(expr.b)
    return relaxer.combine(E.Add, (a.min, b.min), (a.max, b.max))


def _sub(relaxer: _Relaxer, expr: E.Sub) -> IntervalSet:
    a, b = relaxer.relax(expr.a), relaxer.relax(expr.b)
    return relaxer.combine(E.Sub, (a.min, b.max), (a.max, b.min))


def _mul(relaxer: _Relaxer, expr: E.Mul) -> IntervalSet:
    a, b = relaxer.relax(expr.a), relaxer.relax(expr.b)
    scale = _const(expr.b) if _const(expr.b) is not None else _const(expr.a)
    if scale is None:
        return _by_bounds(relaxer, expr)
    x = a if _const(expr.b) is not None else b
    factor = IntImm(scale, expr.dtype)
    if scale >= 0:
        return relaxer.combine(lambda v, _: E.Mul(v, factor), (x.min, factor), (x.max, factor))
    return relaxer.combine(lambda v, _: E.Mul(v, factor), (x.max, factor), (x.min, factor))


def _symbolic_divisor(relaxer: _Relaxer, divisor: PrimExpr) -> bool:
    """A divisor that is one value as the domains range (a shape variable) and is never
    negative: floor division by it is monotone, floor modulo lies in [0, divisor - 1]."""
    if _const(divisor) is not None or relaxer._depends(divisor):
        return False
    low = relaxer.analyzer.const_bound(divisor).min
    return low is not None and low >= 0


def _point(relaxer: _Relaxer, expr: E.FloorDiv | E.FloorMod) -> IntervalSet | None:
    """A division whose operands each take one value as the domains range (`(f + u) // n`
    for a unit loop u) takes one value: whatever the divisor's sign, as TVM's sets of
    single points."""
    a = relaxer.relax(expr.a)
    if not (a.is_bounded and _same(a.min, a.max)) or relaxer._depends(expr.b):
        return None
    assert a.min is not None
    return IntervalSet.point(relaxer.analyzer.simplify(type(expr)(a.min, expr.b)))


def _same(a: PrimExpr | None, b: PrimExpr | None) -> bool:
    return a is not None and b is not None and (a is b or expr_key(a) == expr_key(b))


def _floordiv(relaxer: _Relaxer, expr: E.FloorDiv) -> IntervalSet:
    divisor = _const(expr.b)
    if divisor is None and (point := _point(relaxer, expr)) is not None:
        return point
    if _symbolic_divisor(relaxer, expr.b):
        a = relaxer.relax(expr.a)
        return relaxer.combine(E.FloorDiv, (a.min, expr.b), (a.max, expr.b))
    if divisor is None or divisor <= 0:
        return _by_bounds(relaxer, expr)
    a = relaxer.relax(expr.a)
    return relaxer.combine(E.FloorDiv, (a.min, expr.b), (a.max, expr.b))


def _floormod(relaxer: _Relaxer, expr: E.FloorMod) -> IntervalSet:
    divisor = _const(expr.b)
    if divisor is None and (point := _point(relaxer, expr)) is not None:
        return point
    if _symbolic_divisor(relaxer, expr.b):
        last = relaxer.simplify(E.Sub(expr.b, IntImm(1, expr.dtype)))
        return IntervalSet(IntImm(0, expr.dtype), last)
    if divisor is None or divisor <= 0:
        return _by_bounds(relaxer, expr)
    a = relaxer.relax(expr.a)
    if a.min is not None and a.max is not None:
        # the whole interval inside one period: the modulo is monotone there
        same_period = E.EQ(E.FloorDiv(a.min, expr.b), E.FloorDiv(a.max, expr.b))
        if relaxer.analyzer.can_prove(same_period):
            return relaxer.combine(E.FloorMod, (a.min, expr.b), (a.max, expr.b))
    dtype = expr.dtype
    return IntervalSet(IntImm(0, dtype), IntImm(divisor - 1, dtype))


def _extremum(make: type) -> Callable[[_Relaxer, PrimExpr], IntervalSet]:
    def rule(relaxer: _Relaxer, expr: PrimExpr) -> IntervalSet:
        assert isinstance(expr, E.BinaryOp)  # registered for Min and Max
        a, b = relaxer.relax(expr.a), relaxer.relax(expr.b)
        return relaxer.combine(make, (a.min, b.min), (a.max, b.max))

    return rule


def _select(relaxer: _Relaxer, expr: E.Select) -> IntervalSet:
    a, b = relaxer.relax(expr.true_value), relaxer.relax(expr.false_value)
    return IntervalSet(
        None if a.min is None or b.min is None else relaxer.simplify(E.Min(a.min, b.min)),
        None if a.max is None or b.max is None else relaxer.simplify(E.Max(a.max, b.max)),
    )


def _by_bounds(relaxer: _Relaxer, expr: PrimExpr) -> IntervalSet:
    """Constant bounds of `expr`; the dtype's own limits say nothing, so they are dropped."""
    if not relaxer._depends(expr):
        return IntervalSet.point(expr)
    bound = relaxer.analyzer.const_bound(expr)
    dtype = expr.dtype
    if not dtype.is_integer:
        return IntervalSet(None, None)
    low, high = int_range(dtype)
    return IntervalSet(
        None if bound.min is None or bound.min == low else IntImm(bound.min, dtype),
        None if bound.max is None or bound.max == high else IntImm(bound.max, dtype),
    )


# The interval of each operation from its operands'; any other expression is bounded by
# its constant bounds (_by_bounds).
_RULES: Dispatch[_Relaxer, [], IntervalSet] = Dispatch("interval")
_RULES.register(E.Add)(_add)
_RULES.register(E.Sub)(_sub)
_RULES.register(E.Mul)(_mul)
_RULES.register(E.FloorDiv)(_floordiv)
_RULES.register(E.FloorMod)(_floormod)
_RULES.register(E.Min)(_extremum(E.Min))
_RULES.register(E.Max)(_extremum(E.Max))
_RULES.register(E.Select)(_select)


def relax(
    expr: PrimExpr, domains: Mapping[Var, Range], analyzer: Facts | None = None
) -> IntervalSet:
    """The interval `expr` spans when each variable in `domains` ranges over its Range."""
    if analyzer is None:
        analyzer = Facts.over(domains)
    return _Relaxer(domains, analyzer).relax(expr)


def relax_range(
    region: Range, domains: Mapping[Var, Range], analyzer: Facts | None = None
) -> Range | None:
    """The Range covering `[min, min + extent)` as the variables in `domains` range."""
    low = relax(region.min, domains, analyzer)
    last = E.Sub(E.Add(region.min, region.extent), IntImm(1, region.extent.dtype))
    high = relax(last, domains, analyzer)
    if low.min is None or high.max is None:
        return None
    helper = analyzer or Facts()
    extent = helper.simplify(E.Add(E.Sub(high.max, low.min), IntImm(1, region.extent.dtype)))
    return Range(helper.simplify(low.min), extent)

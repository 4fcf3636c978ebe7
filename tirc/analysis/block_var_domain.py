"""Which values a block's iteration variables must take so that the block provides a region.

compute_at and reverse_compute_at regenerate the loops of a moved block: given the region one
instance of the block provides (its writes, or its reads) and the region the blocks around it
require, solve for an interval of each iteration variable (`dom`) and the interval its
values must stay in (`bound`, from the buffer's shape and the variable's own domain), which
becomes a predicate where the loops cannot express it. TVM's rules, so that the loops match.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from tirc.analysis.arith import Analyzer
from tirc.analysis.arith.iter_map import IterSplit, IterSum, Level, detect_iter_map
from tirc.analysis.symbolic_dims import is_constant, lone_symbolic_dims
from tirc.ir import expr as E
from tirc.ir.arith import arithmetic
from tirc.ir.buffer import Buffer, Range
from tirc.ir.expr import IntImm, PrimExpr, Var
from tirc.ir.functor import uses_var
from tirc.ir.stmt import IterVar


def fold(op: str, a: PrimExpr, b: PrimExpr) -> PrimExpr:
    """`a op b` with TVM's constant folding (`0 + x` is `x`), as TVM's C++ operators build it."""
    return arithmetic(op, a, b)


@dataclass(frozen=True)
class Interval:
    """`[min, max]`, inclusive; an end of None is unbounded. `EMPTY` is the empty set."""

    min: PrimExpr | None
    max: PrimExpr | None
    empty: bool = False

    @property
    def is_bounded(self) -> bool:
        return not self.empty and self.min is not None and self.max is not None

    @staticmethod
    def point(value: PrimExpr) -> Interval:
        return Interval(value, value)


EMPTY = Interval(None, None, empty=True)


def _pick(op: str, a: PrimExpr | None, b: PrimExpr | None, absorbing: bool) -> PrimExpr | None:
    """min/max of two ends where None is the infinity on that side: `absorbing` when the
    infinity wins (min of lower ends), else the other end wins (min of upper ends)."""
    if a is None or b is None:
        return None if absorbing else (b if a is None else a)
    return fold(op, a, b)


def union(a: Interval, b: Interval) -> Interval:
    if a.empty:
        return b
    if b.empty:
        return a
    plain = Analyzer()
    low = _pick("min", a.min, b.min, absorbing=True)
    high = _pick("max", a.max, b.max, absorbing=True)
    return Interval(_simplify(plain, low), _simplify(plain, high))


def intersect(a: Interval, b: Interval) -> Interval:
    if a.empty or b.empty:
        return EMPTY
    plain = Analyzer()
    low = _pick("max", a.min, b.min, absorbing=False)
    high = _pick("min", a.max, b.max, absorbing=False)
    if low is not None and high is not None and plain.can_prove(E.LT(high, low)):
        return EMPTY
    return Interval(_simplify(plain, low), _simplify(plain, high))


def _simplify(analyzer: Analyzer, expr: PrimExpr | None) -> PrimExpr | None:
    return None if expr is None else analyzer.simplify(expr)


def simplified(interval: Interval, analyzer: Analyzer) -> Interval:
    if interval.empty:
        return interval
    return Interval(_simplify(analyzer, interval.min), _simplify(analyzer, interval.max))


def from_range(region: Range) -> Interval:
    if isinstance(region.extent, IntImm) and region.extent.value == 1:
        return Interval.point(region.min)
    last = fold("-", fold("+", region.min, region.extent), IntImm(1, region.extent.dtype))
    return Interval(region.min, last)


@dataclass
class VarDomain:
    """What an iteration variable must cover (`dom`) and where it must stay (`bound`)."""

    dom: Interval = EMPTY
    bound: Interval = EMPTY

    def union(self, other: VarDomain) -> None:
        # (d0 ∩ b0) ∪ (d1 ∩ b1) relaxed to (d0 ∪ d1) ∩ (b0 ∪ b1)
        self.dom = union(self.dom, other.dom)
        self.bound = union(self.bound, other.bound)

    def simplify(self, analyzer: Analyzer) -> None:
        """Drop the bound where the domain already respects it; adopt it where tighter."""
        if self.dom.empty:
            if self.bound.is_bounded:
                self.dom, self.bound = simplified(self.bound, analyzer), EMPTY
            return
        self.dom = simplified(self.dom, analyzer)
        self.bound = simplified(self.bound, analyzer)
        both = simplified(intersect(self.dom, self.bound), analyzer)
        if _same(analyzer, self.dom, both):
            self.bound = EMPTY
        elif _same(analyzer, self.bound, both):
            self.dom, self.bound = self.bound, EMPTY
        elif isinstance(both.min, IntImm) and isinstance(both.max, IntImm):
            self.dom, self.bound = both, EMPTY

    def cover_range(self, fallback: Range) -> Range:
        if not self.dom.is_bounded:
            return fallback
        plain = Analyzer()
        low, high = self.dom.min, self.dom.max
        assert low is not None and high is not None
        extent = fold("-", fold("+", high, IntImm(1, high.dtype)), low)
        return Range(plain.simplify(low), plain.simplify(extent))


def _same(analyzer: Analyzer, a: Interval, b: Interval) -> bool:
    if a.empty or b.empty:
        return a.empty and b.empty
    return _equal(analyzer, a.min, b.min) and _equal(analyzer, a.max, b.max)


def _equal(analyzer: Analyzer, a: PrimExpr | None, b: PrimExpr | None) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return analyzer.can_prove_equal(a, b)


class UnsolvableRegion(Exception):
    """No iteration variable can be found that provides a dimension of the region; `index`
    is the provided index that none provides, for the caller to print."""

    def __init__(self, reason: str, index: PrimExpr | None = None):
        super().__init__(reason)
        self.index = index


Region = list[Interval]


def solve_block_var_domains(
    iter_vars: Sequence[IterVar],
    provided: Mapping[Buffer, list[Region]],
    required: Mapping[Buffer, list[Region]],
    analyzer: Analyzer,
) -> list[VarDomain]:
    """A VarDomain per iteration variable, in order, covering every required region."""
    domains: dict[Var, VarDomain] = {iter_var.var: VarDomain() for iter_var in iter_vars}
    for buffer, provided_regions in provided.items():
        required_regions = required.get(buffer)
        if not required_regions:
            continue
        want = _union_regions(required_regions)
        have = _within_domains(_union_regions(provided_regions), iter_vars, analyzer)
        if not _solve_affine(buffer, iter_vars, have, want, analyzer, domains):
            _solve_by_dimension(buffer, have, want, analyzer, domains)
    result = []
    for iter_var in iter_vars:
        info = domains[iter_var.var]
        assert iter_var.dom is not None
        own = from_range(iter_var.dom)
        info.bound = own if info.bound.empty else intersect(info.bound, own)
        info.simplify(analyzer)
        result.append(info)
    return result


def _within_domains(region: Region, iter_vars: Sequence[IterVar], analyzer: Analyzer) -> Region:
    """The block's own region simplified knowing its iterators lie in their domains, as
    TVM's solver reads it (`(v1 // 768 + v0) % 64` is `v0` for v1 < 768, v0 < 64)."""
    local = Analyzer()
    local.ranges.update(analyzer.ranges)
    local.domains.update(analyzer.domains)
    for iter_var in iter_vars:
        dom = iter_var.dom
        # a unit iterator stays a variable (its one value would hide which one it is)
        if dom is not None and is_constant(dom) and not E.is_const_int(dom.extent, 1):
            local.bind(iter_var.var, dom)
    return [
        interval
        if interval.empty
        else Interval(_simplify(local, interval.min), _simplify(local, interval.max))
        for interval in region
    ]


def _union_regions(regions: list[Region]) -> Region:
    merged = list(regions[0])
    for region in regions[1:]:
        merged = [union(a, b) for a, b in zip(merged, region, strict=True)]
    return merged


def _is_single_point(interval: Interval, analyzer: Analyzer) -> bool:
    if not interval.is_bounded:
        return False
    return interval.min is interval.max or _equal(analyzer, interval.min, interval.max)


def _last_index(buffer: Buffer, dim: int) -> PrimExpr:
    extent = buffer.shape[dim]
    return fold("max", fold("-", extent, IntImm(1, extent.dtype)), IntImm(0, extent.dtype))


def _solve_affine(
    buffer: Buffer,
    iter_vars: Sequence[IterVar],
    have: Region,
    want: Region,
    analyzer: Analyzer,
    domains: dict[Var, VarDomain],
) -> bool:
    """Where the provided point is a bijective affine map of the iteration variables, invert
    the map at the ends of the required region (and of the buffer)."""
    if not all(_is_single_point(interval, analyzer) for interval in have):
        return False
    var_ranges = {iv.var: iv.dom for iv in iter_vars if iv.dom is not None}
    indices = [interval.min for interval in have if interval.min is not None]  # all bounded
    lone = lone_symbolic_dims(indices, var_ranges)
    if lone is None:
        return False
    affine_dims = [dim for dim in range(len(indices)) if dim not in lone]
    constant_ranges = {var: dom for var, dom in var_ranges.items() if is_constant(dom)}
    sums: list[IterSum] = []
    if affine_dims:
        picked = [indices[dim] for dim in affine_dims]
        result = detect_iter_map(picked, constant_ranges, None, Level.BIJECTIVE)
        if not result.ok or not result.sums:
            return False
        sums = result.sums
    elif not lone:
        return False
    if not all(interval.is_bounded for interval in want):
        return False
    whole = [
        Interval(IntImm(0, buffer.shape[dim].dtype), _last_index(buffer, dim))
        for dim in range(buffer.ndim)
    ]

    def invert(point: list[PrimExpr]) -> dict[Var, PrimExpr] | None:
        found = inverse_iter_map(sums, [point[dim] for dim in affine_dims])
        if found is None:
            return None
        for dim, (var, base) in lone.items():
            found[var] = fold("-", point[dim], base)
        return found

    inverse_want = _inverse_intervals(invert, want, analyzer)
    inverse_whole = _inverse_intervals(invert, whole, analyzer)
    if inverse_want is None or inverse_whole is None:
        return False
    for var, dom in inverse_want.items():
        domains.setdefault(var, VarDomain()).union(VarDomain(dom, inverse_whole[var]))
    return True


def _inverse_intervals(
    invert: Callable[[list[PrimExpr]], dict[Var, PrimExpr] | None],
    region: Region,
    analyzer: Analyzer,
) -> dict[Var, Interval] | None:
    lows = [interval.min for interval in region if interval.min is not None]
    highs = [interval.max for interval in region if interval.max is not None]
    if len(lows) != len(region) or len(highs) != len(region):
        return None
    low, high = invert(lows), invert(highs)
    if low is None or high is None:
        return None
    result = {}
    for var, low_value in low.items():
        high_value = high[var]
        result[var] = Interval(
            analyzer.simplify(fold("min", low_value, high_value)),
            analyzer.simplify(fold("max", low_value, high_value)),
        )
    return result


def inverse_iter_map(sums: list[IterSum], outputs: list[PrimExpr]) -> dict[Var, PrimExpr] | None:
    """The iterators' values at which the map takes `outputs` (None for shapes not handled:
    fused marks, non-unit scales of a lone split)."""
    inverse: dict[Var, PrimExpr] = {}
    for total, output in zip(sums, outputs, strict=True):
        value = fold("-", output, total.base)
        splits = total.splits
        if not splits:
            continue
        parts: list[tuple[IterSplit, PrimExpr]] = []
        if len(splits) == 1:
            if splits[0].scale != 1:
                return None
            parts.append((splits[0], value))
        else:
            for position in range(len(splits) - 1, -1, -1):
                split = splits[position]
                dtype = value.dtype
                part = fold("floordiv", value, IntImm(split.scale, dtype))
                if position > 0:
                    assert isinstance(split.extent, int)  # detect_iter_map's are constant
                    part = fold("floormod", part, IntImm(split.extent, dtype))
                parts.append((split, part))
        for split, part in parts:
            mark = split.mark
            if not isinstance(mark.source, Var):
                return None
            dtype = part.dtype
            contribution = fold("*", part, IntImm(split.lower, dtype))
            previous = inverse.get(mark.source)
            inverse[mark.source] = (
                contribution if previous is None else fold("+", previous, contribution)
            )
    return inverse


def _solve_by_dimension(
    buffer: Buffer, have: Region, want: Region, analyzer: Analyzer, domains: dict[Var, VarDomain]
) -> None:
    for dim in range(buffer.ndim):
        provided, required = have[dim], want[dim]
        if _is_single_point(provided, analyzer) and isinstance(provided.min, IntImm):
            continue  # a constant index: nothing to solve
        var, info = _solve_dimension(provided, required, _last_index(buffer, dim), analyzer)
        if var in domains:
            domains[var].union(info)


def _solve_dimension(
    provided: Interval, required: Interval, last: PrimExpr, analyzer: Analyzer
) -> tuple[Var, VarDomain]:
    """The iteration variable behind one dimension and the interval it must cover, for the
    patterns `v * e`, `v`, `x // f` and `x % f` of the provided index."""
    first, last_provided = provided.min, provided.max
    if provided.empty or first is None or last_provided is None or required.empty:
        raise UnsolvableRegion("the provided region is unbounded")
    low = analyzer.simplify(first)
    high = analyzer.simplify(last_provided)
    need_low = None if required.min is None else analyzer.simplify(required.min)
    need_high = None if required.max is None else analyzer.simplify(required.max)
    if isinstance(low, E.Mul) and (isinstance(low.a, Var) or isinstance(low.b, Var)):
        var, scale = (low.a, low.b) if isinstance(low.a, Var) else (low.b, low.a)
        assert isinstance(var, Var)
        dom = Interval(
            None if need_low is None else fold("floordiv", need_low, scale),
            None if need_high is None else fold("floordiv", need_high, scale),
        )
        bound = Interval(IntImm(0, last.dtype), fold("floordiv", last, scale))
        return var, VarDomain(dom, bound)
    if analyzer.can_prove_equal(low, high):
        if isinstance(low, Var):
            bound = Interval(IntImm(0, last.dtype), last)
            return low, VarDomain(Interval(need_low, need_high), bound)
        if isinstance(low, E.Sub) and isinstance(low.b, Var) and not uses_var(low.a, low.b):
            # a reversed index `c - v`: v runs the required interval backwards from c
            var, base = low.b, low.a
            dom = Interval(
                None if need_high is None else fold("-", base, need_high),
                None if need_low is None else fold("-", base, need_low),
            )
            return var, VarDomain(dom, Interval(fold("-", base, last), base))
        if isinstance(low, E.FloorDiv) and analyzer.can_prove(E.GE(low.b, IntImm(1, low.b.dtype))):
            factor = low.b
            one = IntImm(1, factor.dtype)

            def widen(end: PrimExpr | None) -> PrimExpr | None:
                if end is None:
                    return None
                return analyzer.simplify(fold("-", fold("+", fold("*", end, factor), factor), one))

            scaled_low = None if need_low is None else fold("*", need_low, factor)
            if isinstance(low.a, Var):
                dom = Interval(scaled_low, widen(need_high))
                bound = Interval(IntImm(0, last.dtype), widen(last))
                return low.a, VarDomain(dom, bound)
            return _solve_dimension(
                Interval.point(low.a), Interval(scaled_low, widen(need_high)), last, analyzer
            )
        if isinstance(low, E.FloorMod):
            if isinstance(low.a, Var):
                return low.a, VarDomain()  # `x % f` says nothing about the range of x
            one = IntImm(1, low.a.dtype)
            if (
                analyzer.can_prove(E.GE(low.a, one))
                and analyzer.can_prove(E.GE(low.b, one))
                and need_low is not None
                and analyzer.can_prove(E.GE(need_low, IntImm(0, need_low.dtype)))
            ):
                return _solve_dimension(
                    Interval.point(low.a), Interval(need_low, None), last, analyzer
                )
    raise UnsolvableRegion("no iteration variable provides the index", low)

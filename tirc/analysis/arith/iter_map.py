"""Iterator maps: is a list of index expressions an affine map of some loops' iterators?

Each index is decomposed into splits of "marks": a mark is a loop iterator or a fused group
of them, a split takes digits `[lower, lower * extent)` of a mark scaled by `scale`. A list
of indices is a valid map when each index reads as one fused iterator (its splits' scales
are 1, e1, e1*e2, ...; in a surjective map, all of them times one factor: `h * 2`) and, for
each mark, its splits tile the mark without overlap (bijective: and cover it whole). This is
the check behind "the block's binding is affine", and what split/fuse/reorder preserve.
Extents must be constant, except in `normalize_iter_map` (and
`detect_iter_map(symbolic=True)`), where a loop of symbolic extent may appear whole, as the
highest digit of an index (`i_0 * 32 + i_1` with `i_0` in `[0, (n + 31) // 32)`).
"""

from __future__ import annotations

import enum
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field

from tirc.analysis.arith.analyzer import Analyzer
from tirc.ir import expr as E
from tirc.ir.buffer import Range
from tirc.ir.canonical import to_sum
from tirc.ir.dtype import DataType
from tirc.ir.expr import IntImm, PrimExpr, Var
from tirc.ir.functor import walk
from tirc.ir.structural import expr_key
from tirc.ir.substitute import substitute


class Level(enum.Enum):
    SURJECTIVE = "surjective"  # splits of a mark never overlap
    BIJECTIVE = "bijective"  # ... and cover every used loop whole
    NO_CHECK = "no_check"  # any decomposition; divisions of partial extents round up


@dataclass(frozen=True, eq=False)
class IterMark:
    """An iterator over [0, extent): a loop variable, or a fused group of splits. The extent
    is an expression only for a loop of symbolic extent (normalize_iter_map's)."""

    source: Var | tuple[IterSplit, ...]
    extent: int | PrimExpr


@dataclass(frozen=True)
class IterSplit:
    """`(mark // lower) % extent * scale`; `(mark // divisor) % extent * scale` where a
    symbolic `divisor` is given (`lower` is then 1), which only normalize_iter_map's
    detections make (`fused // n` for a fused iterator over `n * 32`)."""

    mark: IterMark
    lower: int
    extent: int | PrimExpr
    scale: int
    divisor: PrimExpr | None = None


@dataclass
class IterSum:
    """One index: `base + sum(splits)`, splits ordered by falling scale."""

    splits: tuple[IterSplit, ...]
    base: PrimExpr
    extent: int | PrimExpr


@dataclass
class IterMapResult:
    sums: list[IterSum] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.errors


class _NotAffine(Exception):
    pass


class _UnreadPredicate(_NotAffine):
    """The predicate bounds sums that no index reads whole."""


class _Detector:
    def __init__(
        self,
        domains: Mapping[Var, Range],
        analyzer: Analyzer,
        padded: bool = False,
        overlap: bool = False,
        symbolic: bool = False,
        symbolic_divisors: bool = False,
    ):
        self.analyzer = analyzer
        self.symbolic_divisors = symbolic_divisors  # `x // n` for x over `n * c` (see IterSplit)
        self.padded = padded  # accept divisions that do not divide an extent (NO_CHECK)
        self.overlap = overlap  # accept sums whose terms overlap (`h * 2 + rh`; not BIJECTIVE)
        self.extents: dict[Var, int | PrimExpr] = {}
        for var, domain in domains.items():
            if not (isinstance(domain.min, IntImm) and domain.min.value == 0):
                raise _NotAffine(f"loop {var.name} does not start at 0")
            if isinstance(domain.extent, IntImm):
                self.extents[var] = domain.extent.value
            elif symbolic:
                self.extents[var] = domain.extent
            else:
                raise _NotAffine(f"loop {var.name} has a non-constant extent")
        self.var_marks: dict[Var, IterMark] = {}
        self.fused_marks: dict[Hashable, IterMark] = {}
        self.limits: dict[Hashable, int] = {}  # fused key -> extent bound by the predicate
        self.groups: dict[Hashable, tuple[IterSplit, ...]] = {}  # bounded key -> its splits
        self.used: set[frozenset[int]] = set()  # iterators of the sums indices read whole
        self.bounded: list[frozenset[int]] = []  # iterators of the sums the predicate bounds

    # -- building splits ---------------------------------------------------------------------

    def mark_of(self, var: Var) -> IterMark:
        mark = self.var_marks.get(var)
        if mark is None:
            mark = self.var_marks[var] = IterMark(var, self.extents[var])
        return mark

    def depends(self, expr: PrimExpr) -> bool:
        found = False

        def visit(node: object) -> None:
            nonlocal found
            if isinstance(node, Var) and node in self.extents:
                found = True

        walk(expr, visit)
        return found

    def splits_of(self, expr: PrimExpr) -> tuple[list[IterSplit], PrimExpr]:
        """Splits and loop-invariant base of an index expression."""
        total = to_sum(expr)
        splits: list[IterSplit] = []
        base_terms: list[tuple[PrimExpr, int]] = []
        for atom, coeff in total.terms.values():
            if not self.depends(atom):
                base_terms.append((atom, coeff))
                continue
            for split in self.atom_splits(atom):
                splits.append(
                    IterSplit(
                        split.mark, split.lower, split.extent, split.scale * coeff, split.divisor
                    )
                )
        splits = _merge_adjacent(splits)
        dtype = expr.dtype
        base: PrimExpr = IntImm(total.const, dtype)
        for atom, coeff in base_terms:
            term = atom if coeff == 1 else E.Mul(atom, IntImm(coeff, dtype))
            base = E.Add(base, term)
        return splits, self.analyzer.simplify(base)

    def atom_splits(self, atom: PrimExpr) -> list[IterSplit]:
        if isinstance(atom, Var):
            mark = self.mark_of(atom)
            return [IterSplit(mark, 1, mark.extent, 1)]
        if isinstance(atom, E.Cast) and atom.dtype.is_integer and atom.value.dtype.is_integer:
            # an index cast to another integer type (`T.Cast("int32", f % 1280)` after a
            # fuse of int64 and int32 loops) reads as the index itself, as in TVM
            inner, base = self.splits_of(atom.value)
            if not (isinstance(base, IntImm) and base.value == 0):
                raise _NotAffine("a cast of an iterator with an offset")
            return inner
        if isinstance(atom, (E.FloorDiv, E.FloorMod)) and not isinstance(atom.b, IntImm):
            return self.symbolic_division(atom)
        if isinstance(atom, (E.FloorDiv, E.FloorMod)) and isinstance(atom.b, IntImm):
            divisor = atom.b.value
            if divisor <= 0:
                raise _NotAffine("division by a non-positive constant")
            inner, base = self.splits_of(atom.a)
            if not (isinstance(base, IntImm) and base.value == 0):
                raise _NotAffine("division of an iterator with an offset")
            source = self.as_single(inner)
            if not isinstance(source.extent, int):
                return self.symbolic_digits(atom, source, divisor)
            if isinstance(atom, E.FloorDiv):
                if source.extent % divisor and source.extent > divisor and not self.padded:
                    raise _NotAffine(f"extent {source.extent} is not divisible by {divisor}")
                extent = max(1, -(-source.extent // divisor))
                return [IterSplit(source.mark, source.lower * divisor, extent, 1)]
            if source.extent % divisor:
                if source.extent < divisor:
                    return [source]
                if self.padded:
                    return [IterSplit(source.mark, source.lower, divisor, 1)]
                raise _NotAffine(f"extent {source.extent} is not divisible by {divisor}")
            return [IterSplit(source.mark, source.lower, divisor, 1)]
        raise _NotAffine(f"{type(atom).__name__} of iterators is not affine")

    def symbolic_division(self, atom: E.FloorDiv | E.FloorMod) -> list[IterSplit]:
        """`x % e` and `x // e` where `x` runs over exactly [0, e) for a symbolic `e`: `x`
        and nothing (what fuse leaves for a unit loop fused with one of symbolic extent:
        `fused % n` with `fused` in [0, n))."""
        inner, base = self.splits_of(atom.a)
        if not (isinstance(base, IntImm) and base.value == 0) or not inner:
            raise _NotAffine("division of an iterator with an offset")
        source = self.as_single(inner)
        if isinstance(source.extent, int) or source.lower != 1 or source.divisor is not None:
            raise _NotAffine("division of an iterator by a symbolic divisor")
        if self.analyzer.can_prove(E.EQ(source.extent, atom.b)):
            return [source] if isinstance(atom, E.FloorMod) else []
        if self.symbolic_divisors and source.mark.extent is source.extent:
            # an iterator over `n * c` read as digits `x % n` and `x // n` (of extent c)
            high = _multiple_of(source.extent, atom.b)
            if high is not None:
                if isinstance(atom, E.FloorMod):
                    return [IterSplit(source.mark, 1, atom.b, 1)]
                return [IterSplit(source.mark, 1, high, 1, atom.b)]
        raise _NotAffine("division of an iterator by a symbolic divisor")

    def symbolic_digits(
        self, atom: E.FloorDiv | E.FloorMod, source: IterSplit, divisor: int
    ) -> list[IterSplit]:
        """`x // d` and `x % d` for an iterator `x` of symbolic extent that `d` divides (a
        fused loop over `n * 64`): its high digits, still of symbolic extent, and its low
        digits, of extent `d`; `(x // 8) // 8` is `x // 64`, as TVM normalizes it."""
        assert not isinstance(source.extent, int)
        extent = source.extent
        remainder = E.FloorMod(extent, IntImm(divisor, extent.dtype))
        if not self.analyzer.can_prove(E.EQ(remainder, IntImm(0, extent.dtype))):
            raise _NotAffine(f"a symbolic extent not divisible by {divisor}")
        if isinstance(atom, E.FloorMod):
            return [IterSplit(source.mark, source.lower, divisor, 1)]
        high = self.analyzer.simplify(E.FloorDiv(extent, IntImm(divisor, extent.dtype)))
        return [IterSplit(source.mark, source.lower * divisor, high, 1)]

    def as_single(self, splits: list[IterSplit]) -> IterSplit:
        """Splits that read as one iterator: one unscaled split, or a fused group."""
        if len(splits) == 1 and splits[0].scale == 1:
            return splits[0]
        key, extent, ordered = self.fuse_order(splits)
        self.used.add(_iterators(splits))
        mark = self.fused_marks.get(key)
        if mark is None:
            mark = self.fused_marks[key] = IterMark(ordered, self.limits.get(key, extent))
        return IterSplit(mark, 1, mark.extent, 1)

    def fuse_order(
        self, splits: list[IterSplit]
    ) -> tuple[Hashable, int | PrimExpr, tuple[IterSplit, ...]]:
        """Checks that `splits` fuse into one iterator; gives its key, extent and the splits
        in the order the fused iterator lists them (highest first).

        Scales must run 1, e1, e1*e2, ...: starting from the last-written split of the
        smallest scale, the next is the last-written one of exactly the expected scale, a
        unit-extent one first (it leaves the expected scale as it is). Where none has that
        scale, the one of the largest smaller scale is taken: a unit-extent split always
        (`z + u * 5`), another only unless `overlap` is off (bijective maps), the terms then
        overlapping (`h * 2 + rh` with `rh` in [0, 3)) and the extent growing by the
        overlap. The fused iterator lists the splits in the reverse of the order taken, as
        TVM's does (`f2 * 4 + f0 * 128 + fused` for unit f0, f2). The extent is an
        expression where the highest split is a loop of symbolic extent.
        """
        key = tuple(
            sorted(
                (id(s.mark), s.lower, _extent_key(s.extent), s.scale, _extent_key(s.divisor or 0))
                for s in splits
            )
        )
        units = all(_is_unit(s) for s in splits)
        if units and min(s.scale for s in splits) != 1:
            return key, 1, tuple(sorted(splits, key=lambda s: -s.scale))
        smallest = min(s.scale for s in splits if units or not _is_unit(s))
        if smallest != 1:
            raise _NotAffine(f"scales do not fuse: expected a term scaled by 1, found {smallest}")
        rest = list(splits)
        taken = [rest.pop(_pick(rest, [i for i, s in enumerate(rest) if s.scale == smallest]))]
        expected: int | PrimExpr = _scaled(taken[0].extent, taken[0].scale)
        top, tail = expected, 0  # the extent so far (of the non-unit splits) and the overlap
        while rest:
            if not isinstance(expected, int):
                if all(_is_unit(s) for s in rest):  # units fit under a symbolic top
                    taken += sorted(rest, key=lambda s: -s.scale)
                    break
                raise _NotAffine("a term above an iterator of symbolic extent")
            exact = [i for i, s in enumerate(rest) if s.scale == expected]
            if exact:
                index = _pick(rest, exact)
            else:
                smaller = [s.scale for s in rest if s.scale < expected]
                units_only = all(_is_unit(s) for s in rest if s.scale in smaller)
                if not smaller or not (self.overlap or units_only):
                    found = min(s.scale for s in rest)
                    raise _NotAffine(
                        f"scales do not fuse: expected a term scaled by {expected}, found {found}"
                    )
                index = _pick(rest, [i for i, s in enumerate(rest) if s.scale == max(smaller)])
                if not _is_unit(rest[index]):
                    tail += expected - rest[index].scale
            split = rest.pop(index)
            taken.append(split)
            expected = _scaled(split.extent, split.scale)
            if not _is_unit(split):
                top = expected
        return key, _plus(top, tail), tuple(reversed(taken))

    # -- the predicate -----------------------------------------------------------------------

    def add_predicate(self, predicate: PrimExpr | None) -> None:
        """Record `fused < c` conjuncts: they shorten a fused iterator (imperfect splits)."""
        stack = [predicate] if predicate is not None else []
        while stack:
            item = stack.pop()
            if isinstance(item, E.And):
                stack += [item.a, item.b]
            elif isinstance(item, E.LT) and isinstance(item.b, IntImm):
                splits, base = self.splits_of(item.a)
                if splits and isinstance(base, IntImm) and base.value == 0:
                    key, _, ordered = self.fuse_order(splits)
                    self.limits[key] = item.b.value
                    self.groups[key] = ordered
                    self.bounded.append(_iterators(splits))
            elif isinstance(item, IntImm) and item.value:
                continue
            else:
                raise _NotAffine("the predicate is not a conjunction of `iterator < constant`")

    # -- whole-map checks -------------------------------------------------------------------

    def index_sum(self, expr: PrimExpr) -> IterSum:
        splits, base = self.splits_of(expr)
        if not splits:
            return IterSum((), base, 1)
        factor = _common_scale(splits)
        if factor != 1 and self.overlap:
            return self._scaled_sum(splits, base, factor)
        key, extent, ordered = self.fuse_order(splits)
        self.used.add(_iterators(splits))
        if key not in self.limits:
            bounded = self.bounded_top(ordered)
            if bounded is not None:
                return IterSum(bounded[0], base, bounded[1])
        return IterSum(ordered, base, self.limits.get(key, extent))

    def _scaled_sum(self, splits: list[IterSplit], base: PrimExpr, factor: int) -> IterSum:
        """An index whose splits are all scaled by a multiple of `factor` > 1 reads as one
        fused iterator times `factor`, as in TVM (`h * 2`, `h * 2 + c * 8`); its extent is
        that iterator's (the values it takes, not their span). Its terms may not overlap
        (`h * 4 + rh * 2` with rh in [0, 3) is no such index, `h * 2 + rh` is one of
        overlapping terms). Only surjective maps read it so: such an index is never part of a
        bijective map, nor inverted."""
        unscaled = [
            IterSplit(split.mark, split.lower, split.extent, split.scale // factor)
            for split in splits
        ]
        overlap, self.overlap = self.overlap, False  # scaled, the terms must tile exactly
        try:
            key, extent, ordered = self.fuse_order(unscaled)
        finally:
            self.overlap = overlap
        extent = self.limits.get(key, extent)
        if not isinstance(extent, int):
            raise _NotAffine("a scaled iterator of symbolic extent")
        self.used.add(_iterators(splits))
        scaled = tuple(
            IterSplit(split.mark, split.lower, split.extent, split.scale * factor)
            for split in ordered
        )
        return IterSum(scaled, base, extent)

    def bounded_top(
        self, ordered: tuple[IterSplit, ...]
    ) -> tuple[tuple[IterSplit, ...], int] | None:
        """The splits of a sum whose highest digits are an iterator the predicate bounds,
        with those digits read as that one iterator, and the sum's extent.

        `(i_0 * 128 + i_1) * 8 + j` under `i_0 * 128 + i_1 < 1376` is the bounded iterator
        times 8 plus `j`, of extent 1376 * 8 (TVM reads a constrained sum inside a larger one
        the same way). Digits above the bounded ones qualify only where the lowest of them
        starts exactly at the bound, the next where that one ends, and so on (`x * 64 +
        (b_0 * 32 + b_1)` under `b_0 * 32 + b_1 < 64`): anywhere else the bound would leave
        holes.
        """
        for key, group in self.groups.items():
            scale = min(split.scale for split in group)
            if scale != 1:
                continue
            places = [self._find(ordered, split) for split in group]
            found = [index for index in places if index is not None]
            if len(found) != len(places):
                continue
            factor = ordered[found[-1]].scale
            if any(
                ordered[index].scale != split.scale * factor
                for index, split in zip(found, group, strict=True)
            ):
                continue
            rest = [split for i, split in enumerate(ordered) if i not in found]
            extent = self.limits[key]
            top = _digits_above(rest, factor, extent * factor)
            if top is None:
                continue
            mark = self.fused_marks.get(key)
            if mark is None:
                mark = self.fused_marks[key] = IterMark(group, extent)
            self.used.add(_iterators(list(group)))
            first = min(found)
            merged = IterSplit(mark, 1, extent, factor)
            result = [split for i, split in enumerate(ordered) if i not in found and i < first]
            result.append(merged)
            result += [split for i, split in enumerate(ordered) if i not in found and i > first]
            return tuple(result), top
        return None

    @staticmethod
    def _find(ordered: tuple[IterSplit, ...], split: IterSplit) -> int | None:
        for index, candidate in enumerate(ordered):
            if (candidate.mark, candidate.lower, candidate.extent) == (
                split.mark,
                split.lower,
                split.extent,
            ):
                return index
        return None

    def check_predicate_used(self) -> None:
        """A predicate bounds a fused iterator; unless an index reads that iterator whole,
        the indices do not range over a box, and the map is not affine. Where no index reads
        any sum of those iterators (not even one the bound is nested in), the predicate is
        of no use to the map (_UnreadPredicate: normalize_iter_map goes on without it)."""
        for iterators in self.bounded:
            if iterators in self.used:
                continue
            if any(iterators < used for used in self.used):  # a bound nested in a read one
                raise _NotAffine("the predicate bounds iterators that no index fuses")
            raise _UnreadPredicate("the predicate bounds iterators that no index reads")

    def _check_symbolic_digits(self, mark: IterMark, splits: list[IterSplit], level: Level) -> None:
        """A mark read through a symbolic divisor: its digits, constant lower ones first,
        must follow one another exactly (`x % n`, then `x // n`)."""
        ordered = sorted(splits, key=lambda s: (s.divisor is not None, s.lower))
        covered: PrimExpr = IntImm(1, _dtype_of(mark))
        for split in ordered:
            lower: PrimExpr = split.divisor or IntImm(split.lower, covered.dtype)
            if not self.analyzer.can_prove(E.EQ(lower, covered)):
                raise _NotAffine(f"iterator {_name(mark)} is used twice")
            extent = split.extent
            extent_expr = IntImm(extent, covered.dtype) if isinstance(extent, int) else extent
            covered = self.analyzer.simplify(E.Mul(lower, extent_expr))
        top = mark.extent
        top_expr = IntImm(top, covered.dtype) if isinstance(top, int) else top
        if level is Level.BIJECTIVE and not self.analyzer.can_prove(E.EQ(covered, top_expr)):
            raise _NotAffine(f"iterator {_name(mark)} is not covered whole")

    def check_tiling(self, sums: Sequence[IterSum], level: Level) -> None:
        uses: dict[int, list[IterSplit]] = {}
        marks: dict[int, IterMark] = {}

        def collect(split: IterSplit) -> None:
            uses.setdefault(id(split.mark), []).append(split)
            if id(split.mark) not in marks:
                marks[id(split.mark)] = split.mark
                if isinstance(split.mark.source, tuple):
                    for inner in split.mark.source:
                        collect(inner)

        for index in sums:
            for split in index.splits:
                collect(split)
        for mark_id, splits in uses.items():
            mark = marks[mark_id]
            if any(split.divisor is not None for split in splits):
                self._check_symbolic_digits(mark, splits, level)
                continue
            covered = 1
            for split in sorted(splits, key=lambda s: s.lower):
                if not isinstance(split.extent, int):  # the high digits of a symbolic extent
                    if split is not max(splits, key=lambda s: s.lower):
                        raise _NotAffine(f"iterator {_name(mark)} is used twice")
                    if split.lower < covered or split.lower % covered:
                        raise _NotAffine(f"iterator {_name(mark)} is used twice")
                    if level is Level.BIJECTIVE and split.lower != covered:
                        raise _NotAffine(f"part of iterator {_name(mark)} is not used")
                    break
                if split.lower < covered or split.lower % covered:
                    raise _NotAffine(f"iterator {_name(mark)} is used twice")
                if level is Level.BIJECTIVE and split.lower != covered:
                    raise _NotAffine(f"part of iterator {_name(mark)} is not used")
                covered = split.lower * split.extent
            else:
                if not isinstance(mark.extent, int):  # a symbolic top digit is never read
                    if splits and level is Level.BIJECTIVE:
                        raise _NotAffine(f"iterator {_name(mark)} is not covered whole")
                    continue
            if level is Level.BIJECTIVE and isinstance(mark.extent, int) and covered < mark.extent:
                raise _NotAffine(f"iterator {_name(mark)} is not covered whole")
        if level is Level.BIJECTIVE:
            for var, extent in self.extents.items():
                if (not isinstance(extent, int) or extent > 1) and var not in self.var_marks:
                    raise _NotAffine(f"loop {var.name} is not used by any index")


def _digits_above(rest: Sequence[IterSplit], factor: int, bound: int) -> int | None:
    """The extent of a sum whose digits, other than a bounded group at `factor` that ends at
    `bound`, are `rest`: each non-unit one below the group (ending at most at `factor`), or
    above it, the lowest starting at `bound` and each next where the one before ends.
    None where they fit neither way."""
    above = []
    for split in rest:
        if _is_unit(split):
            continue
        if not isinstance(split.extent, int):
            return None
        if split.scale * split.extent > factor:
            above.append(split)
    top = bound
    for split in sorted(above, key=lambda s: s.scale):
        assert isinstance(split.extent, int)
        if split.scale != top:
            return None
        top = split.scale * split.extent
    return top


def _common_scale(splits: Sequence[IterSplit]) -> int:
    """The smallest scale of the non-unit splits where every split's scale is a multiple
    of it, else 1."""
    scales = [split.scale for split in splits if not _is_unit(split)]
    if not scales:
        return 1
    factor = min(scales)
    if factor <= 1 or any(split.scale % factor for split in splits):
        return 1
    return factor


def _iterators(splits: Sequence[IterSplit]) -> frozenset[int]:
    """The iterators a sum reads, unit ones aside (they may be kept or dropped alike)."""
    return frozenset(id(split.mark) for split in splits if not _is_unit(split))


def _pick(splits: list[IterSplit], candidates: list[int]) -> int:
    """Of the candidate positions (all of one scale), TVM's choice: the last unit-extent
    split written, else the last split written."""
    units = [i for i in candidates if _is_unit(splits[i])]
    return (units or candidates)[-1]


def _is_unit(split: IterSplit) -> bool:
    return isinstance(split.extent, int) and split.extent == 1


def _scaled(extent: int | PrimExpr, scale: int) -> int | PrimExpr:
    if isinstance(extent, int):
        return extent * scale
    return extent if scale == 1 else E.Mul(extent, IntImm(scale, extent.dtype))


def _plus(extent: int | PrimExpr, offset: int) -> int | PrimExpr:
    if isinstance(extent, int):
        return extent + offset
    return extent if offset == 0 else E.Add(extent, IntImm(offset, extent.dtype))


def _extent_key(extent: int | PrimExpr) -> Hashable:
    return extent if isinstance(extent, int) else id(extent)


def _merge_adjacent(splits: list[IterSplit]) -> list[IterSplit]:
    """Joins consecutive digits of one iterator: `x // 32 * 32 + x % 32` is `x` (also where
    the high digits have a symbolic extent), wherever the two stand among the other terms
    (`l0 * 4 + f // 4 * 4 + f % 4` is `l0 * 4 + f`). The joined split takes the place of its
    lower digit; the others keep the written order."""
    result = list(splits)
    merged = True
    while merged:
        merged = False
        for low_index, low in enumerate(result):
            high_index = next(
                (
                    index
                    for index, high in enumerate(result)
                    if high.mark is low.mark
                    and isinstance(low.extent, int)
                    and low.divisor is None
                    and high.divisor is None
                    and high.lower == low.lower * low.extent
                    and high.scale == low.scale * low.extent
                    and index != low_index
                ),
                None,
            )
            if high_index is None:
                continue
            high = result[high_index]
            assert isinstance(low.extent, int)
            extent: int | PrimExpr
            if isinstance(high.extent, int):
                extent = low.extent * high.extent
            else:  # the high digits of a symbolic extent: `f // 32 * 32 + f % 32` is `f`
                extent = E.Mul(high.extent, IntImm(low.extent, high.extent.dtype))
            result[low_index] = IterSplit(low.mark, low.lower, extent, low.scale)
            del result[high_index]
            merged = True
            break
    return splits if len(result) == len(splits) else result


def _multiple_of(extent: PrimExpr, divisor: PrimExpr) -> int | None:
    """`c` where `extent` is `divisor * c` for a constant c > 1 (`n * 32` of `n`), else None."""
    total = to_sum(extent)
    if total.const != 0 or len(total.terms) != 1:
        return None
    ((atom, coeff),) = total.terms.values()
    if coeff > 1 and expr_key(atom) == expr_key(divisor):
        return int(coeff)
    return None


def _dtype_of(mark: IterMark) -> DataType:
    """The dtype of a mark's values: its loop variable's, or its highest split's."""
    if isinstance(mark.source, Var):
        return mark.source.dtype
    return _dtype_of(mark.source[0].mark)


def _reaches_top(split: IterSplit, mark: IterMark) -> bool:
    """Whether the split's digits are the mark's highest (`lower * extent` is its extent)."""
    if isinstance(split.extent, int) and isinstance(mark.extent, int) and split.divisor is None:
        return split.lower * split.extent == mark.extent
    if isinstance(mark.extent, int):
        return False
    dtype = mark.extent.dtype
    lower = split.divisor or IntImm(split.lower, dtype)
    extent = IntImm(split.extent, dtype) if isinstance(split.extent, int) else split.extent
    return Analyzer().can_prove(E.EQ(E.Mul(lower, extent), mark.extent))


def _name(mark: IterMark) -> str:
    return mark.source.name if isinstance(mark.source, Var) else "(fused)"


def detect_iter_map(
    indices: Sequence[PrimExpr],
    domains: Mapping[Var, Range],
    predicate: PrimExpr | None = None,
    level: Level = Level.SURJECTIVE,
    analyzer: Analyzer | None = None,
    symbolic: bool = False,
) -> IterMapResult:
    """Decompose `indices` over the loops in `domains`; errors say why they are not affine.
    With `symbolic`, a loop of symbolic extent may appear whole as the highest digit of an
    index (`a0 * 16 + a1` with `a0` in `[0, n)`), as in normalize_iter_map."""
    if analyzer is None:
        analyzer = Analyzer.over(domains)
    # As written first (fused forms such as `(i_0 * 1024 + i_1) // 128` are read whole
    # there), then simplified (which may bring a sum of splits into a readable form).
    reason = ""
    for prepare in (lambda index: index, analyzer.simplify):
        try:
            detector = _Detector(
                domains,
                analyzer,
                padded=level is Level.NO_CHECK,
                overlap=level is Level.SURJECTIVE,
                symbolic=symbolic,
            )
            detector.add_predicate(predicate)
            sums = [detector.index_sum(prepare(index)) for index in indices]
            if level is not Level.NO_CHECK:
                detector.check_predicate_used()
                detector.check_tiling(sums, level)
        except _NotAffine as error:
            reason = reason or str(error)
            continue
        return IterMapResult(sums)
    return IterMapResult([], [reason])


def normalize_iter_map(
    indices: Sequence[PrimExpr],
    domains: Mapping[Var, Range],
    predicate: PrimExpr | None = None,
    keep_unit_iters: bool = True,
) -> list[PrimExpr] | None:
    """`indices` rewritten in the normal form of their iterator map, or None if not affine.

    Each index reads as a sum of splits by falling scale, a split as `source`,
    `source // lower` or `source % (lower * extent) // lower` times its scale, and a fused
    source as the sum it fuses: `(i_0 * 1024 + i_1) // 512`, not `i_0 * 2 + i_1 // 512`
    (this is how TVM writes block bindings after split and fuse). Unit iterators become 0
    unless `keep_unit_iters`. A predicate that bounds sums no index reads whole says
    nothing of how the indices read: they are normalized without it, as TVM's
    iterator-map simplification retries without a predicate it cannot use.
    """

    for domain in domains.values():
        if not isinstance(domain.min, IntImm):
            return None
    casts: list[E.Cast] = []
    for index in indices:
        walk(index, lambda node: casts.append(node) if isinstance(node, E.Cast) else None)
    if casts:
        return None  # an index cast to another type stays as written (the detector reads it)
    if not keep_unit_iters:
        zeros: dict[Var, PrimExpr] = {
            var: IntImm(0, var.dtype)
            for var, domain in domains.items()
            if isinstance(domain.extent, IntImm) and domain.extent.value == 1
        }
        indices = [substitute(index, zeros) for index in indices]
        predicate = None if predicate is None else substitute(predicate, zeros)
    analyzer = Analyzer.over(domains)
    try:
        detector = _Detector(domains, analyzer, overlap=True, symbolic=True, symbolic_divisors=True)
        detector.add_predicate(predicate)
        sums = [detector.index_sum(index) for index in indices]
        detector.check_predicate_used()
        detector.check_tiling(sums, Level.SURJECTIVE)
    except _UnreadPredicate:
        return normalize_iter_map(indices, domains, None, keep_unit_iters)
    except _NotAffine:
        return None
    return [_sum_expr(total, index.dtype) for total, index in zip(sums, indices, strict=False)]


def _sum_expr(total: IterSum, dtype: DataType) -> PrimExpr:
    result: PrimExpr | None = None
    for split in total.splits:
        if _is_always_zero(split):
            continue
        term = _split_expr(split, dtype)
        result = term if result is None else E.Add(result, term)
    base = total.base
    if result is None:
        return base
    if not (isinstance(base, IntImm) and base.value == 0):
        result = E.Add(result, base)
    return result


def _is_always_zero(split: IterSplit) -> bool:
    """A split of one value above all the digits of an iterator that takes several
    (`v // 64` for v in [0, 64)): it is 0, and TVM's normal form leaves it out. A unit
    iterator itself (`a` in [0, 1)) stays, for keep_unit_iters to decide."""
    mark = split.mark
    return (
        _is_unit(split)
        and split.divisor is None
        and not (isinstance(mark.extent, int) and mark.extent == 1)
        and _reaches_top(split, mark)
    )


def _split_expr(split: IterSplit, dtype: DataType) -> PrimExpr:
    mark = split.mark
    if isinstance(mark.source, Var):
        source: PrimExpr = mark.source
    else:
        source = _sum_expr(IterSum(mark.source, IntImm(0, dtype), mark.extent), dtype)
    result: PrimExpr
    if split.divisor is not None:
        result = E.FloorDiv(source, split.divisor)
        if not _reaches_top(split, mark):
            result = E.FloorMod(
                result,
                IntImm(split.extent, dtype) if isinstance(split.extent, int) else split.extent,
            )
    elif (
        not isinstance(split.extent, int)
        and split.lower == 1
        and split.extent is not mark.extent
        and not _reaches_top(split, mark)
    ):
        result = E.FloorMod(source, split.extent)  # the low digits `x % n` below a divisor
    elif split.lower == 1 and split.extent == mark.extent:
        result = source
    elif not isinstance(split.extent, int):  # the high digits of a symbolic extent
        result = source if split.lower == 1 else E.FloorDiv(source, IntImm(split.lower, dtype))
    else:
        if split.lower * split.extent == mark.extent:
            result = E.FloorDiv(source, IntImm(split.lower, dtype))
        else:
            result = E.FloorMod(source, IntImm(split.lower * split.extent, dtype))
            if split.lower != 1:
                result = E.FloorDiv(result, IntImm(split.lower, dtype))
    if split.scale != 1:
        result = E.Mul(result, IntImm(split.scale, dtype))
    return result

"""Subspace division: each index of an iterator map written as `outer * E + inner`, where
`inner` reads only the "inner" loops (those below some loop) and `outer` only the others.

What blockize needs to split a block's bindings between an outer and an inner block. An index
divides when its splits over inner loops are its lowest digits; predicates divide by
conjunct, each reading only inner or only outer loops.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from tirc.analysis.arith.analyzer import Analyzer
from tirc.analysis.arith.iter_map import (
    IterMark,
    IterSplit,
    IterSum,
    Level,
    _Detector,
    _NotAffine,
    _sum_expr,
)
from tirc.ir import expr as E
from tirc.ir.buffer import Range
from tirc.ir.dtype import DataType
from tirc.ir.expr import IntImm, PrimExpr, Var
from tirc.ir.functor import vars_in, walk
from tirc.ir.substitute import substitute


@dataclass(frozen=True)
class Part:
    """One side of a divided index: its binding and the extent it ranges over (an
    expression only for a loop of symbolic extent read whole)."""

    binding: PrimExpr
    extent: int | PrimExpr


@dataclass(frozen=True)
class Division:
    outer: tuple[Part, ...]  # per index
    inner: tuple[Part, ...]
    outer_predicate: PrimExpr | None
    inner_predicate: PrimExpr | None


class DivisionError(Exception):
    """The indices do not divide; the message says which index or predicate and why."""


def divide_subspace(
    indices: Sequence[PrimExpr],
    domains: Mapping[Var, Range],
    inner: set[Var],
    predicate: PrimExpr | None = None,
    keep_unit_iters: bool = True,
    extents: Sequence[PrimExpr] | None = None,
) -> Division:
    """`indices` (an affine map of the loops in `domains`) divided between the `inner` loops
    and the rest; raises DivisionError when some index or predicate mixes them otherwise.
    `extents`, the ranges of the indices, let an index of loops of symbolic extent go whole
    to the one side whose loops it reads."""
    symbolic = [
        var
        for var, domain in domains.items()
        if not (isinstance(domain.min, IntImm) and isinstance(domain.extent, IntImm))
    ]
    if symbolic:
        whole = _divide_whole_loops(indices, domains, inner, predicate, extents)
        if whole is not None:
            return whole
        return _divide_around_symbolic(
            indices, domains, inner, predicate, keep_unit_iters, extents, symbolic
        )
    if not keep_unit_iters:
        # Unit loops always hold 0: dropping them keeps them out of the outer bindings.
        zeros = {
            var: IntImm(0, var.dtype)
            for var, domain in domains.items()
            if isinstance(domain.extent, IntImm) and domain.extent.value == 1
        }
        indices = [substitute(index, zeros) for index in indices]
        predicate = None if predicate is None else substitute(predicate, zeros)
    casts: list[E.Cast] = []
    for index in indices:
        walk(index, lambda node: casts.append(node) if isinstance(node, E.Cast) else None)
    if casts:  # its parts would be rebuilt in the wrong integer type
        raise DivisionError("a binding casts an iterator to another integer type")
    outer_predicate, inner_predicate = _divide_predicate(predicate, inner)
    # each side's predicate in simplified form, as TVM writes it again ((j_0 * 2 + j_1) * 4
    # + j_2 < 7 becomes j_0 * 8 + j_1 * 4 + j_2 < 7)
    outer_predicate, inner_predicate = (
        None if part is None else Analyzer().simplify(part)
        for part in (outer_predicate, inner_predicate)
    )
    analyzer = Analyzer.over(domains)
    sums = _detect(indices, domains, predicate, analyzer)
    outer: list[Part] = []
    inner_parts: list[Part] = []
    for position, (total, index) in enumerate(zip(sums, indices, strict=True)):
        try:
            outer_part, inner_part = _divide_sum(total, inner, index.dtype)
        except _NotAffine as error:
            raise DivisionError(f"binding {position} does not divide: {error}") from None
        outer.append(outer_part)
        inner_parts.append(inner_part)
    return Division(tuple(outer), tuple(inner_parts), outer_predicate, inner_predicate)


def _divide_around_symbolic(
    indices: Sequence[PrimExpr],
    domains: Mapping[Var, Range],
    inner: set[Var],
    predicate: PrimExpr | None,
    keep_unit_iters: bool,
    extents: Sequence[PrimExpr] | None,
    symbolic: list[Var],
) -> Division:
    """Where loops of symbolic extent are read only by indices that read loops of one side:
    those indices go whole to that side, over their extents, and the others are divided over
    the loops of constant extent (`vb = b` outer, `vc = c_0 * 3 + c_1` divided at c_1; an
    inner `vk = k` over `n` is `vk_o = 0`, `vk_i = k`, as TVM divides it)."""
    unsupported = DivisionError(f"loop {symbolic[0].name} does not have a constant range")
    reads_symbolic = [bool(vars_in(index) & set(symbolic)) for index in indices]
    if extents is None:
        raise unsupported
    if predicate is not None and vars_in(predicate) & set(symbolic):
        raise unsupported
    pairs = list(zip(indices, reads_symbolic, strict=True))
    for index, read in pairs:
        loops = vars_in(index) & set(domains)
        if read and loops & inner and loops - inner:
            raise unsupported
    constant = {var: domain for var, domain in domains.items() if var not in symbolic}
    rest = [index for index, read in pairs if not read]
    division = divide_subspace(rest, constant, inner, predicate, keep_unit_iters)
    parts = iter(zip(division.outer, division.inner, strict=True))
    outer: list[Part] = []
    inner_parts: list[Part] = []
    for position, (index, read) in enumerate(pairs):
        if not read:
            outer_part, inner_part = next(parts)
        else:
            whole, zero = Part(index, extents[position]), Part(IntImm(0, index.dtype), 1)
            is_inner = bool(vars_in(index) & inner)
            outer_part, inner_part = (zero, whole) if is_inner else (whole, zero)
        outer.append(outer_part)
        inner_parts.append(inner_part)
    return Division(
        tuple(outer), tuple(inner_parts), division.outer_predicate, division.inner_predicate
    )


def _divide_whole_loops(
    indices: Sequence[PrimExpr],
    domains: Mapping[Var, Range],
    inner: set[Var],
    predicate: PrimExpr | None,
    extents: Sequence[PrimExpr] | None,
) -> Division | None:
    """Where loops have symbolic extents: the division when each index is one loop read
    whole, or (given the indices' `extents`) reads loops of one side only (the index goes
    whole to that side: `fused // n` and `fused % n` of an inner fused loop; one that reads
    no loop to the outer side), and there is no predicate; None otherwise."""
    if predicate is not None and not (isinstance(predicate, IntImm) and predicate.value):
        return None
    outer: list[Part] = []
    inner_parts: list[Part] = []
    for position, index in enumerate(indices):
        extent: int | PrimExpr
        if isinstance(index, Var) and index in domains:
            domain = domains[index]
            if not (isinstance(domain.min, IntImm) and domain.min.value == 0):
                return None
            extent, is_inner = domain.extent, index in inner
        else:
            loops = vars_in(index) & set(domains)
            if extents is None or (loops & inner and loops - inner):
                return None
            extent, is_inner = extents[position], bool(loops & inner)
        if isinstance(extent, IntImm):
            extent = extent.value
        zero = Part(IntImm(0, index.dtype), 1)
        whole = Part(index, extent)
        outer.append(zero if is_inner else whole)
        inner_parts.append(whole if is_inner else zero)
    return Division(tuple(outer), tuple(inner_parts), None, None)


def _detect(
    indices: Sequence[PrimExpr],
    domains: Mapping[Var, Range],
    predicate: PrimExpr | None,
    analyzer: Analyzer,
) -> list[IterSum]:
    """The iterator sums of `indices`: as written first, then simplified (as detection does)."""
    reason = ""
    for prepare in (lambda index: index, analyzer.simplify):
        try:
            detector = _Detector(domains, analyzer)
            detector.add_predicate(predicate)
            sums = [detector.index_sum(prepare(index)) for index in indices]
            detector.check_tiling(sums, Level.SURJECTIVE)
        except _NotAffine as error:
            reason = reason or str(error)
            continue
        return sums
    raise DivisionError(f"the bindings are not an affine map of the loops: {reason}")


def _mark_vars(mark: IterMark) -> set[Var]:
    if isinstance(mark.source, Var):
        return {mark.source}
    found: set[Var] = set()
    for split in mark.source:
        found |= _mark_vars(split.mark)
    return found


def _flatten(split: IterSplit, inner: set[Var]) -> list[IterSplit]:
    """The split itself when it reads only inner or only outer loops; a fused mark read whole
    is opened into its parts (scaled), so that each part can go to its side."""
    variables = _mark_vars(split.mark)
    if variables <= inner or not (variables & inner) or split.extent == 1:
        return [split]
    mark = split.mark
    if isinstance(mark.source, tuple) and split.lower == 1 and split.extent == mark.extent:
        parts: list[IterSplit] = []
        for part in mark.source:
            scaled = IterSplit(part.mark, part.lower, part.extent, part.scale * split.scale)
            parts.extend(_flatten(scaled, inner))
        return parts
    raise _NotAffine("a fused iterator mixes the inner and the outer loops")


def _divide_sum(total: IterSum, inner: set[Var], dtype: DataType) -> tuple[Part, Part]:
    splits = [part for split in total.splits for part in _flatten(split, inner)]
    inner_splits = [s for s in splits if s.extent != 1 and _mark_vars(s.mark) <= inner]
    outer_splits = [s for s in splits if not _mark_vars(s.mark) <= inner]
    inner_extent = 1
    for split in sorted(inner_splits, key=lambda s: s.scale):
        if split.scale != inner_extent:
            raise _NotAffine("the inner loops are not its lowest digits")
        assert isinstance(split.extent, int)  # the loops have constant extents (see above)
        inner_extent *= split.extent
    divided = []
    for split in outer_splits:
        if split.extent != 1 and split.scale % inner_extent:
            raise _NotAffine("an outer loop sits between the inner loops' digits")
        divided.append(
            IterSplit(split.mark, split.lower, split.extent, max(1, split.scale // inner_extent))
        )
    base = total.base
    if inner_extent != 1:
        if not (isinstance(base, IntImm) and base.value % inner_extent == 0):
            raise _NotAffine("its offset is not a multiple of the inner extent")
        base = IntImm(base.value // inner_extent, base.dtype)
    assert isinstance(total.extent, int)
    outer_extent = max(1, -(-total.extent // inner_extent))
    ordered = tuple(sorted(divided, key=lambda s: -s.scale))
    outer_binding = _sum_expr(IterSum(ordered, base, outer_extent), dtype)
    # unit inner loops stay in the inner binding (they are gone already unless unit
    # iterators are kept), with their scale: j_0 * 7 + j_1 for a split (1, 7)
    units = [s for s in splits if s.extent == 1 and _mark_vars(s.mark) <= inner]
    inner_ordered = tuple(sorted(inner_splits + units, key=lambda s: -s.scale))
    zero = IntImm(0, dtype)
    inner_binding = _sum_expr(IterSum(inner_ordered, zero, inner_extent), dtype)
    if not outer_splits and isinstance(total.extent, int) and total.extent < inner_extent:
        # all of the index is inner and a predicate bounds it (`i_0 * 8 + i_1 < 30`): the
        # inner iterator ranges over the bound, as TVM's iterator map reads the predicate
        inner_extent = total.extent
    return Part(outer_binding, outer_extent), Part(inner_binding, inner_extent)


def _divide_predicate(
    predicate: PrimExpr | None, inner: set[Var]
) -> tuple[PrimExpr | None, PrimExpr | None]:
    """(outer, inner) conjunctions of the predicate's conjuncts by the loops they read."""
    outer_terms: list[PrimExpr] = []
    inner_terms: list[PrimExpr] = []
    pending = [predicate] if predicate is not None else []
    while pending:
        term = pending.pop(0)
        if isinstance(term, E.And):
            pending[:0] = [term.a, term.b]
            continue
        if isinstance(term, IntImm) and term.value:
            continue
        variables = vars_in(term)
        reads_inner = bool(variables & inner)
        if reads_inner and variables - inner:
            raise DivisionError("the predicate mixes inner and outer loops in one condition")
        (inner_terms if reads_inner else outer_terms).append(term)
    return _conjunction(outer_terms), _conjunction(inner_terms)


def _conjunction(terms: list[PrimExpr]) -> PrimExpr | None:
    result: PrimExpr | None = None
    for term in terms:
        result = term if result is None else E.And(result, term)
    return result

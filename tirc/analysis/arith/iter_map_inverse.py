"""Inverting an iterator map: given indices as affine maps of some iterators and the values
those indices take, recover each iterator as an expression of the values.

`[i // 16, i % 16]` taking values `[a, b]` gives `i = b + a * 16`. Only a map that reads
every iterator it uses whole (bijective) can be inverted; otherwise the answer is None.
"""

from __future__ import annotations

from collections.abc import Sequence

from tirc.analysis.arith.iter_map import IterMark, IterSplit, IterSum
from tirc.ir import expr as E
from tirc.ir.expr import IntImm, PrimExpr, Var

Digits = dict[int, list[tuple[int, int | PrimExpr, PrimExpr]]]  # id(mark) -> (lower, extent, digit)


def inverse_iter_map(
    sums: Sequence[IterSum], values: Sequence[PrimExpr]
) -> dict[Var, PrimExpr] | None:
    """Each iterator of `sums` (as detect_iter_map gives them) in terms of `values`, the
    value of each sum; None when some iterator is only partly read."""
    digits: Digits = {}
    marks: dict[int, IterMark] = {}
    for total, value in zip(sums, values, strict=True):
        _read_digits(total.splits, _minus(value, total.base), digits, marks)
    result: dict[Var, PrimExpr] = {}
    done: set[int] = set()
    while len(done) < len(marks):
        key, mark = next((k, m) for k, m in marks.items() if k not in done)
        done.add(key)
        assembled = _assemble(mark, digits.get(key, []))
        if assembled is None:
            return None
        value = assembled
        if isinstance(mark.source, Var):
            result[mark.source] = value
        else:  # a fused iterator: its value is read in turn as a sum of its parts
            _read_digits(mark.source, value, digits, marks)
    return result


def _assemble(mark: IterMark, found: list[tuple[int, int | PrimExpr, PrimExpr]]) -> PrimExpr | None:
    """The mark's value from its digits, lowest first (`b + a * 16`); None unless the
    digits tile the mark whole."""
    if not isinstance(mark.extent, int):  # a loop of symbolic extent is only read whole
        whole = [digit for lower, extent, digit in found if lower == 1 and extent is mark.extent]
        return whole[0] if len(found) == 1 and whole else None
    covered = 1
    value: PrimExpr | None = None
    for lower, extent, digit in sorted(found, key=lambda item: item[0]):
        if lower != covered or not isinstance(extent, int):
            return None
        term = digit if lower == 1 else E.Mul(digit, IntImm(lower, digit.dtype))
        value = term if value is None else E.Add(value, term)
        covered = lower * extent
    if covered < mark.extent:
        return None
    return value


def _read_digits(
    splits: Sequence[IterSplit], value: PrimExpr, digits: Digits, marks: dict[int, IterMark]
) -> None:
    """`value` read digit by digit: the outermost split takes `value // scale`, the others
    `value // scale % extent` (a unit scale drops the division); unit splits carry none
    unless alone in their sum, where they take the value itself."""
    ordered = sorted(splits, key=lambda s: -s.scale)
    if len(ordered) > 1:
        ordered = [s for s in ordered if s.extent != 1]
    dtype = value.dtype
    for position, split in enumerate(ordered):
        digit = value if split.scale == 1 else E.FloorDiv(value, IntImm(split.scale, dtype))
        if position > 0:
            # only the highest digit may be a loop of symbolic extent (detect_iter_map's rule)
            assert isinstance(split.extent, int)
            digit = E.FloorMod(digit, IntImm(split.extent, dtype))
        marks.setdefault(id(split.mark), split.mark)
        digits.setdefault(id(split.mark), []).append((split.lower, split.extent, digit))


def _minus(value: PrimExpr, base: PrimExpr) -> PrimExpr:
    if isinstance(base, IntImm):
        if base.value == 0:
            return value
        if base.value < 0:
            return E.Add(value, IntImm(-base.value, base.dtype))
    return E.Sub(value, base)

"""Which computations of a block's stores cache_index precomputes: TVM's rule of common
computations, counted up to equivalence (equal after simplification).

A computation is a pure expression (no load, no effectful call, not a Ramp or Broadcast) of
more than one node whose variables are all the block's iterators. In each store, the
largest computations (value, then indices) are counted; one seen fewer than `threshold` times
passes its count down to its own largest sub-computations, which may reach it together:

    threshold 4:  max(min(f(i), 39), 0) x2,  max(min(f(i) + 1, 39), 0) x2   ->   f(i) x4

The chosen computations are those met in a store's value, in post-order, most nodes first.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterator

from tirc.analysis.arith.facts import Facts
from tirc.analysis.effects import reads_no_memory
from tirc.ir.expr import (
    Broadcast,
    FloatImm,
    IntImm,
    PrimExpr,
    Ramp,
    StringImm,
    Var,
)
from tirc.ir.functor import child_fields, walk
from tirc.ir.stmt import BufferStore
from tirc.ir.structural import expr_key


def children(expr: PrimExpr) -> Iterator[PrimExpr]:
    """The expression operands of `expr`, in field order (a load's indices, a call's
    arguments; buffers and dtypes are not operands)."""
    for name in child_fields(type(expr)):
        value = getattr(expr, name)
        if isinstance(value, PrimExpr):
            yield value
        elif isinstance(value, tuple):
            yield from (item for item in value if isinstance(item, PrimExpr))


def size(expr: PrimExpr) -> int:
    """The number of expression nodes in `expr`, leaves included."""
    return 1 + sum(size(child) for child in children(expr))


def post_order(expr: PrimExpr) -> Iterator[PrimExpr]:
    for child in children(expr):
        yield from post_order(child)
    yield expr


class Equivalence:
    """Expressions compared after simplification, each simplified once."""

    def __init__(self) -> None:
        self._facts = Facts()
        self._keys: dict[int, tuple[PrimExpr, Hashable]] = {}

    def key(self, expr: PrimExpr) -> Hashable:
        known = self._keys.get(id(expr))
        if known is None:
            # the expression is kept beside its key so that its id is not reused
            known = (expr, expr_key(self._facts.simplify(expr)))
            self._keys[id(expr)] = known
        return known[1]

    def same(self, a: PrimExpr, b: PrimExpr) -> bool:
        return a is b or (a.dtype == b.dtype and self.key(a) == self.key(b))


def is_computation(expr: PrimExpr, iterators: set[Var]) -> bool:
    """Pure, more than one node, not a vector literal, and over the iterators only (TVM
    takes other variables too, then fails to find their loops)."""
    if isinstance(expr, (Var, IntImm, FloatImm, StringImm, Ramp, Broadcast)):
        return False
    if not reads_no_memory(expr):
        return False
    names: list[Var] = []
    walk(expr, lambda node: names.append(node) if isinstance(node, Var) else None)
    return bool(names) and all(var in iterators for var in names)


class Entry:
    __slots__ = ("count", "expr", "size")

    def __init__(self, expr: PrimExpr, count: int):
        self.expr, self.count, self.size = expr, count, size(expr)


def repeated_computations(
    stores: list[BufferStore], iterators: set[Var], threshold: int, same: Equivalence
) -> list[PrimExpr]:
    """The computations to cache for `stores` (in the order TVM numbers them)."""

    def eligible(expr: PrimExpr) -> bool:
        return is_computation(expr, iterators)

    chosen: list[PrimExpr] = []
    for store in stores:
        entries = _merged(_largest(store, eligible), same)
        _pass_down(entries, threshold, eligible, same)
        for node in post_order(store.value):
            for entry in entries:
                if entry.count >= threshold and same.same(node, entry.expr):
                    if not any(expr is entry.expr for expr in chosen):
                        chosen.append(entry.expr)
        chosen.sort(key=lambda expr: -size(expr))  # stable: post-order breaks ties
    return chosen


def _largest(store: BufferStore, eligible: Callable[[PrimExpr], bool]) -> list[Entry]:
    """The largest computations of a store, value first, each with its count, in order of
    first occurrence (structurally equal ones counted together)."""
    table: dict[Hashable, Entry] = {}

    def visit(expr: PrimExpr) -> None:
        if isinstance(expr, (Var, IntImm, FloatImm, StringImm)):
            return
        if eligible(expr):
            key = expr_key(expr)
            entry = table.get(key)
            if entry is None:
                table[key] = Entry(expr, 1)
            else:
                entry.count += 1
            return
        for child in children(expr):
            visit(child)

    visit(store.value)
    for index in store.indices:
        visit(index)
    return list(table.values())


def _merged(entries: list[Entry], same: Equivalence) -> list[Entry]:
    """Equivalent entries as one, at the first one's place, their counts added."""
    merged: dict[Hashable, Entry] = {}
    for entry in entries:
        key = (entry.expr.dtype, same.key(entry.expr))
        found = merged.get(key)
        if found is None:
            merged[key] = entry
        else:
            found.count += entry.count
    return list(merged.values())


def _pass_down(
    entries: list[Entry],
    threshold: int,
    eligible: Callable[[PrimExpr], bool],
    same: Equivalence,
) -> None:
    """Each entry seen fewer than `threshold` times adds its count to its largest
    sub-computations, which join the list (kept by falling size) if they are new; the list
    grows as it is walked, so a new entry may pass its count on in turn."""
    position = 0
    while position < len(entries):
        entry = entries[position]
        position += 1
        if entry.count >= threshold:
            continue
        for part in _direct_parts(entry.expr, eligible):
            found = next((other for other in entries if same.same(other.expr, part)), None)
            if found is not None:
                found.count += entry.count
            else:
                new = Entry(part, entry.count)
                entries.insert(_insertion_point(entries, new.size), new)


def _direct_parts(expr: PrimExpr, eligible: Callable[[PrimExpr], bool]) -> list[PrimExpr]:
    """The largest computations strictly inside `expr`, repeats kept."""
    parts: list[PrimExpr] = []

    def visit(node: PrimExpr) -> None:
        if eligible(node):
            parts.append(node)
            return
        for child in children(node):
            visit(child)

    for child in children(expr):
        visit(child)
    return parts


def _insertion_point(entries: list[Entry], new_size: int) -> int:
    """Where a binary search places an entry of `new_size` among entries meant to be in
    falling size: after every entry at least as large. The first entries keep their order of
    occurrence, so the list is not always sorted; the search's own steps decide then (as
    in TVM, whose counts depend on them)."""
    first, length = 0, len(entries)
    while length > 0:
        half = length >> 1
        middle = first + half
        if entries[middle].size >= new_size:
            first = middle + 1
            length -= half + 1
        else:
            length = half
    return first

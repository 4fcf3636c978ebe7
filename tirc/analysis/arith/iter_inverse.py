"""Inverting an iterator map: given the sums `detect_iter_map` found for some indices and an
expression standing for each index, express each loop iterator in terms of those.

Each sum hands its value down to its splits (`value % (scale * extent) // scale`, the
outermost `value // scale`), each split to its mark (times `lower`), and a fused mark is
handed down like a sum once every split of it has contributed. Meant for bijective maps; the
result is not simplified.
"""

from __future__ import annotations

from collections.abc import Sequence

from tirc.analysis.arith.iter_map import IterMark, IterSplit, IterSum
from tirc.ir import expr as E
from tirc.ir.expr import IntImm, PrimExpr, Var


def inverse_iter_map(sums: Sequence[IterSum], outputs: Sequence[PrimExpr]) -> dict[Var, PrimExpr]:
    """Each iterator the sums read, as an expression of `outputs` (one per sum)."""
    solver = _Solver()
    for total, output in zip(sums, outputs, strict=True):
        solver.hand_down(total.splits, _minus(output, total.base))
    solver.run()
    return solver.solved


def _minus(value: PrimExpr, base: PrimExpr) -> PrimExpr:
    if isinstance(base, IntImm) and base.value == 0:
        return value
    return E.Sub(value, _as(base, value))


def _as(expr: PrimExpr, like: PrimExpr) -> PrimExpr:
    """`expr` in `like`'s dtype (an iterator map's constants are plain integers)."""
    dtype = like.dtype
    if expr.dtype == dtype:
        return expr
    if isinstance(expr, IntImm):
        return IntImm(expr.value, dtype)
    return E.Cast(dtype, expr)


def _const(value: int, like: PrimExpr) -> IntImm:
    return IntImm(value, like.dtype)


def _add(total: PrimExpr | None, term: PrimExpr) -> PrimExpr:
    return term if total is None else E.Add(total, _as(term, total))


class _Solver:
    def __init__(self) -> None:
        self.received: dict[int, PrimExpr] = {}  # id(split or fused mark) -> value so far
        self.splits: dict[int, IterSplit] = {}
        self.waiting: dict[int, int] = {}  # id(fused mark) -> splits not yet handed down
        self.marks: dict[int, IterMark] = {}
        self.solved: dict[Var, PrimExpr] = {}
        self.order: list[int] = []  # splits in the order they were first reached

    def hand_down(self, splits: Sequence[IterSplit], value: PrimExpr) -> None:
        for position, split in enumerate(splits):
            if position == 0:  # the outermost digit: nothing above it to cut off
                part = value if split.scale == 1 else E.FloorDiv(value, _const(split.scale, value))
            else:  # `value % (scale * extent) // scale`: TVM's canonical spelling of the digit
                assert isinstance(split.extent, int)  # only the outermost digit is symbolic
                part = E.FloorMod(value, _const(split.scale * split.extent, value))
                if split.scale != 1:
                    part = E.FloorDiv(part, _const(split.scale, value))
            self._receive(split, part)

    def _receive(self, split: IterSplit, part: PrimExpr) -> None:
        key = id(split)
        if key not in self.splits:
            self.splits[key] = split
            self.order.append(key)
            mark = split.mark
            if isinstance(mark.source, tuple):
                self.marks[id(mark)] = mark
                self.waiting[id(mark)] = self.waiting.get(id(mark), 0) + 1
        self.received[key] = _add(self.received.get(key), part)

    def run(self) -> None:
        position = 0
        while position < len(self.order):
            split = self.splits[self.order[position]]
            position += 1
            value = self.received[id(split)]
            if split.lower != 1:
                value = E.Mul(value, _const(split.lower, value))
            mark = split.mark
            if isinstance(mark.source, Var):
                self.solved[mark.source] = _add(self.solved.get(mark.source), value)
                continue
            key = id(mark)
            self.received[key] = _add(self.received.get(key), value)
            self.waiting[key] -= 1
            if self.waiting[key] == 0:  # every split of the fused mark has contributed
                self.hand_down(mark.source, self.received[key])

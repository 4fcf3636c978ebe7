"""What a run of a function moves and computes, for `tirc run --bench`: floating-point
operations counted statically over the lowered program (loop extents times the float
arithmetic in each store, lanes counted), and the bytes of its buffer arguments; and the
timing of a call, said as throughput."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from tirc.ir import expr as E
from tirc.ir import stmt as S
from tirc.ir.function import PrimFunc
from tirc.ir.functor import walk
from tirc.ir.node import Node

_FLOAT_OPS = (E.Add, E.Sub, E.Mul, E.Div, E.Min, E.Max)


@dataclass(frozen=True)
class Timing:
    """The median seconds of a call over `repeats` calls, measured by `clock` (empty: the
    host's clock)."""

    median: float
    repeats: int
    clock: str = ""

    def describe(self, flops: int | None, nbytes: int) -> str:
        """`median 1.2345 ms over 20 runs, 12.34 GFLOP/s` (GB/s of `nbytes` without flops)."""
        text = f"median {self.median * 1e3:.4f} ms over {self.repeats} runs"
        if self.clock:
            text += f" ({self.clock})"
        if flops:
            return f"{text}, {flops / self.median / 1e9:.2f} GFLOP/s"
        return f"{text}, {nbytes / self.median / 1e9:.2f} GB/s"


def count_flops(func: PrimFunc, sizes: Mapping[E.Var, int] | None = None) -> int | None:
    """Float operations one call performs, or None where a loop extent is unknown."""
    known = dict(sizes or {})
    try:
        return _stmt(func.body, known)
    except _Unknown:
        return None


class _Unknown(Exception):
    pass


def _extent(expr: E.PrimExpr, known: Mapping[E.Var, int]) -> int:
    if isinstance(expr, E.IntImm):
        return expr.value
    if isinstance(expr, E.Var) and expr in known:
        return known[expr]
    raise _Unknown


def _stmt(stmt: S.Stmt | None, known: Mapping[E.Var, int]) -> int:
    if stmt is None:
        return 0
    if isinstance(stmt, S.For):
        return _extent(stmt.extent, known) * _stmt(stmt.body, known)
    if isinstance(stmt, S.SeqStmt):
        return sum(_stmt(child, known) for child in stmt.stmts)
    if isinstance(stmt, S.IfThenElse):
        # a guarded statement (a reduction's init, a boundary) is counted as always running
        return max(_stmt(stmt.then_case, known), _stmt(stmt.else_case, known))
    if isinstance(stmt, (S.AttrStmt, S.While)):
        return _stmt(stmt.body, known)
    if isinstance(stmt, S.BufferStore):
        return _expr_flops(stmt.value)
    if isinstance(stmt, S.SBlockRealize):
        # s-tir: the block's body runs once per binding; its init is a store of a constant
        return _stmt(stmt.block.body, known)
    body = getattr(stmt, "body", None)  # let-bindings, allocations, asserts...
    return _stmt(body, known) if isinstance(body, S.Stmt) else 0


def _expr_flops(expr: E.PrimExpr) -> int:
    total = 0

    def visit(node: Node) -> None:
        nonlocal total
        if isinstance(node, _FLOAT_OPS) and node.dtype.is_float:
            total += node.dtype.lanes
        elif isinstance(node, E.Call) and node.dtype.is_float:
            total += node.dtype.lanes

    walk(expr, visit)
    return total

"""A static estimate of how much a function does: the number of statement executions, from
the loop extents (a loop with a non-constant extent counts as UNKNOWN_EXTENT iterations).

The interpreter runs a few million statements a second; callers use this to decide whether
a run is practical (the conformance tests skip what would take hours)."""

from __future__ import annotations

from collections.abc import Callable

from tirc.ir import stmt as S
from tirc.ir.expr import IntImm
from tirc.ir.function import PrimFunc

UNKNOWN_EXTENT = 1000


def estimate_work(func: PrimFunc) -> int:
    return _count(func.body, 1)


def _count(stmt: S.Stmt | None, times: int) -> int:
    if stmt is None:
        return 0
    rule = _RULES.get(type(stmt))
    return rule(stmt, times) if rule is not None else times


def _for(stmt: S.Stmt, times: int) -> int:
    assert isinstance(stmt, S.For)
    extent = stmt.extent.value if isinstance(stmt.extent, IntImm) else UNKNOWN_EXTENT
    return _count(stmt.body, times * max(extent, 0))


def _seq(stmt: S.Stmt, times: int) -> int:
    assert isinstance(stmt, S.SeqStmt)
    return sum(_count(item, times) for item in stmt.stmts)


def _realize(stmt: S.Stmt, times: int) -> int:
    assert isinstance(stmt, S.SBlockRealize)
    return _count(stmt.block.body, times) + _count(stmt.block.init, times)


def _if(stmt: S.Stmt, times: int) -> int:
    assert isinstance(stmt, S.IfThenElse)
    return _count(stmt.then_case, times) + _count(stmt.else_case, times)


def _while(stmt: S.Stmt, times: int) -> int:
    assert isinstance(stmt, S.While)
    return _count(stmt.body, times * UNKNOWN_EXTENT)


def _attr(stmt: S.Stmt, times: int) -> int:
    assert isinstance(stmt, S.AttrStmt)
    if stmt.key in ("thread_extent", "virtual_thread") and isinstance(stmt.value, IntImm):
        return _count(stmt.body, times * stmt.value.value)
    return _count(stmt.body, times)


_RULES: dict[type, Callable[[S.Stmt, int], int]] = {
    S.For: _for,
    S.SeqStmt: _seq,
    S.SBlockRealize: _realize,
    S.IfThenElse: _if,
    S.While: _while,
    S.AttrStmt: _attr,
}

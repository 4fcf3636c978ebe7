"""A static estimate of how much a function does: the number of statement executions, from
the loop extents (a loop with a non-constant extent counts as UNKNOWN_EXTENT iterations).

The interpreter runs a few million statements a second; callers use this to decide whether
a run is practical (the conformance tests skip what would take hours)."""

from __future__ import annotations

from tirc.ir import stmt as S
from tirc.ir.expr import IntImm
from tirc.ir.function import PrimFunc
from tirc.ir.functor import Dispatch

UNKNOWN_EXTENT = 1000


def estimate_work(func: PrimFunc) -> int:
    return _count(func.body, 1)


def _count(stmt: S.Stmt | None, times: int) -> int:
    if stmt is None:
        return 0
    rule = _RULES.get(type(stmt))
    return rule(times, stmt) if rule is not None else times


# the iterations under each statement that repeats or holds others (the context: how many
# times the statement itself runs); any other statement counts once per run
_RULES: Dispatch[int, [], int] = Dispatch("work estimate")


@_RULES.register(S.For)
def _for(times: int, stmt: S.For) -> int:
    extent = stmt.extent.value if isinstance(stmt.extent, IntImm) else UNKNOWN_EXTENT
    return _count(stmt.body, times * max(extent, 0))


@_RULES.register(S.SeqStmt)
def _seq(times: int, stmt: S.SeqStmt) -> int:
    return sum(_count(item, times) for item in stmt.stmts)


@_RULES.register(S.SBlockRealize)
def _realize(times: int, stmt: S.SBlockRealize) -> int:
    return _count(stmt.block.body, times) + _count(stmt.block.init, times)


@_RULES.register(S.IfThenElse)
def _if(times: int, stmt: S.IfThenElse) -> int:
    return _count(stmt.then_case, times) + _count(stmt.else_case, times)


@_RULES.register(S.While)
def _while(times: int, stmt: S.While) -> int:
    return _count(stmt.body, times * UNKNOWN_EXTENT)


@_RULES.register(S.AttrStmt)
def _attr(times: int, stmt: S.AttrStmt) -> int:
    if stmt.key in ("thread_extent", "virtual_thread") and isinstance(stmt.value, IntImm):
        return _count(stmt.body, times * stmt.value.value)
    return _count(stmt.body, times)

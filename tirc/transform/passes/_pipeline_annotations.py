"""The annotations that ask for a software pipeline (inject-software-pipeline, inject-warp-
specialization) and how a pipelined loop's are read: its stages and order as lists of
non-negative integers, one per statement of its body (the children of its body block)."""

from __future__ import annotations

from tirc.diagnostics import DiagnosticError
from tirc.ir import expr as E
from tirc.ir import stmt as S

STAGE = "software_pipeline_stage"
ORDER = "software_pipeline_order"
ASYNC_STAGES = "software_pipeline_async_stages"
PIPELINE_KEYS = (STAGE, ORDER, ASYNC_STAGES)


def is_pipelined(stmt: S.Stmt) -> bool:
    """Whether `stmt` is a loop that asks for a software pipeline."""
    return isinstance(stmt, S.For) and STAGE in stmt.annotations


def int_list(loop: S.For, key: str, count: int | None) -> tuple[int, ...]:
    """The loop's annotation `key` as non-negative integers, `count` of them where given; a
    located error otherwise."""
    value = loop.annotations.get(key)
    items = value if isinstance(value, tuple) else (value,)
    result: list[int] = []
    for item in items:
        if isinstance(item, E.IntImm):
            item = item.value
        if not isinstance(item, int) or isinstance(item, bool) or item < 0:
            raise DiagnosticError.at(
                loop.span, f"the loop's '{key}' must be a list of non-negative integers"
            )
        result.append(item)
    if count is not None and len(result) != count:
        raise DiagnosticError.at(
            loop.span,
            f"the loop's '{key}' has {len(result)} entries but its body has {count} statements",
        )
    return tuple(result)


def body_block(loop: S.For) -> S.SBlock | None:
    """The plain block (no iterators, no init, always run) that is the loop's body, if any:
    its children are the pipeline's statements, and its buffers the ones it may version."""
    body = loop.body
    if (
        isinstance(body, S.SBlockRealize)
        and not body.block.iter_vars
        and body.block.init is None
        and E.is_const_int(body.predicate, 1)
    ):
        return body.block
    return None


def body_statements(stmt: S.Stmt) -> tuple[S.Stmt, ...]:
    """The statements of a pipelined loop's body: a sequence's children, or the one."""
    return stmt.stmts if isinstance(stmt, S.SeqStmt) else (stmt,)

"""A pipelined loop inside another pipelined loop's body (inject-software-pipeline rewrites
the inner one first): the outer loop counts it as one statement, or, as TVM does, as three,
its prologue, body and epilogue, when the outer stages list that many; then the buffers the
inner pipeline versioned are the outer loop's to version too."""

from __future__ import annotations

from dataclasses import dataclass

from tirc.diagnostics import DiagnosticError
from tirc.ir import expr as E
from tirc.ir import stmt as S
from tirc.ir.buffer import Buffer
from tirc.transform.passes._pipeline_annotations import STAGE, body_statements


@dataclass(frozen=True)
class Nested:
    """A pipelined loop's result inside another pipelined loop's body: its prologue, body and
    epilogue, and the buffers its block allocates (versioned fragments, say)."""

    result: S.Stmt  # kept alive, as it is looked up by identity
    parts: tuple[S.Stmt, S.Stmt, S.Stmt]
    allocs: tuple[Buffer, ...]


def nested_pipeline(stmt: S.Stmt, nested: dict[int, Nested]) -> Nested | None:
    """The nested pipeline `stmt` is, also inside a plain block that allocates around it."""
    found = nested.get(id(stmt))
    if found is not None or not isinstance(stmt, S.SBlockRealize):
        return found
    block = stmt.block
    if stmt.iter_values or not E.is_const_int(stmt.predicate, 1) or block.init is not None:
        return None
    if block.match_buffers:
        return None
    inner = nested.get(id(block.body))
    if inner is None:
        return None
    return Nested(inner.result, inner.parts, block.alloc_buffers + inner.allocs)


def pipeline_statements(
    loop: S.For, body: S.Stmt, nested: dict[int, Nested]
) -> tuple[tuple[S.Stmt, ...], tuple[Buffer, ...]]:
    """The pipelined loop's statements, and the buffers of the nested pipelines among them
    that become the loop's own. A nested pipeline is one statement, or, as in TVM, three (its
    prologue, body and epilogue) when the loop's stages list that many: then a stage and an
    order place the next iteration's prologue (its first fragments, say) among this one's."""
    children = body_statements(body)
    inner = [nested_pipeline(child, nested) for child in children]
    count = _stage_count(loop)
    spliced = len(children) + 2 * sum(found is not None for found in inner)
    if count == len(children) or spliced == len(children):
        return children, ()  # nested pipelines as one statement each; the count checked later
    if count != spliced:
        raise DiagnosticError.at(
            loop.span,
            f"the loop's '{STAGE}' has {count} entries but its body has {len(children)} "
            f"statements, or {spliced} with each nested pipeline as its prologue, body and "
            "epilogue",
        )
    stmts: list[S.Stmt] = []
    allocs: list[Buffer] = []
    for child, found in zip(children, inner, strict=True):
        if found is None:
            stmts.append(child)
        else:
            stmts.extend(found.parts)
            allocs.extend(found.allocs)
    return tuple(stmts), tuple(allocs)


def _stage_count(loop: S.For) -> int:
    value = loop.annotations.get(STAGE)
    return len(value) if isinstance(value, tuple) else 1

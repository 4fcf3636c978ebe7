"""Remarks: what a schedule asked of a loop that lowering did not do (a `vectorize` whose body
has no vector form, an `unroll` of unknown extent, a `parallel` inside another), said on
stderr as `remark: ...` at the loop (or, for a loop a schedule made, at what it runs).

A command opens a `remark_scope`; lowering reports into it, each remark once however often
the command lowers. `-W error` (`as_errors`) turns remarks into errors. Outside a scope (a
library caller) nothing is said.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field

from tirc.diagnostics import Diagnostic, DiagnosticError, Note, Severity
from tirc.ir import expr as E
from tirc.ir import stmt as S
from tirc.ir.function import IRModule
from tirc.ir.functor import Visitor, walk
from tirc.ir.node import Node
from tirc.ir.target import Target


@dataclass
class _Scope:
    as_errors: bool
    said: set[tuple[str, int | None]] = field(default_factory=set)


_SCOPE: ContextVar[_Scope | None] = ContextVar("tirc_remark_scope", default=None)


@contextmanager
def remark_scope(*, as_errors: bool = False) -> Iterator[None]:
    token = _SCOPE.set(_Scope(as_errors))
    try:
        yield
    finally:
        _SCOPE.reset(token)


def is_listening() -> bool:
    return _SCOPE.get() is not None


def report(remarks: list[Diagnostic]) -> None:
    """Say each remark not said yet in this scope; raise them as errors under `-W error`."""
    scope = _SCOPE.get()
    if scope is None:
        return
    fresh = []
    for remark in remarks:
        key = (remark.message, remark.span.start if remark.span is not None else None)
        if key not in scope.said:
            scope.said.add(key)
            fresh.append(remark)
    if not fresh:
        return
    if scope.as_errors:
        raise DiagnosticError(
            [
                Diagnostic.error(r.message, r.span, *r.notes, Note("-W error makes it an error"))
                for r in fresh
            ]
        )
    # deferred: rich, only when there is something to show
    from tirc.diagnostics.render import render

    render(fresh)


def remark(message: str, site: Node, *notes: Note) -> Diagnostic:
    """A remark at `site`, or, where a schedule built it without a span, at the first
    statement inside it that has one."""
    span = site.span
    if span is None:
        located: list[Node] = []

        def first(node: Node) -> None:
            if not located and node.span is not None and not isinstance(node, E.Var):
                located.append(node)

        walk(site, first)
        span = located[0].span if located else None
    return Diagnostic(Severity.REMARK, message, span, tuple(notes))


class LoopWatch:
    """A pipeline hook that compares the loops before and after `vectorize-loop`, and
    `finish` that looks at the lowered module for loops the backend runs as plain loops."""

    def __init__(self, module: IRModule):
        self.previous = module
        self.remarks: list[Diagnostic] = []

    def __call__(self, pass_: object, module: IRModule) -> None:
        if getattr(pass_, "name", "") == "vectorize-loop":
            enabled = bool(getattr(pass_, "enable", True))
            self.remarks += unvectorized(self.previous, module, enabled)
        self.previous = module

    def finish(self, lowered: IRModule, target: Target) -> list[Diagnostic]:
        found = self.remarks + ununrolled(lowered)
        if target.backend == "llvm":
            found += nested_parallel(lowered)
        return found


def loops(node: object) -> list[S.For]:
    found: list[S.For] = []

    def collect(item: Node) -> None:
        if isinstance(item, S.For):
            found.append(item)

    walk(node, collect)
    return found


def unvectorized(before: IRModule, after: IRModule, enabled: bool) -> list[Diagnostic]:
    """A remark for each vectorized loop of `before` that is serial in `after`, wholly or for
    some of its statements (run lane by lane)."""
    requested = {loop.loop_var: loop for loop in loops(before) if loop.kind is S.ForKind.VECTORIZED}
    if not requested:
        return []
    names = {var.name for var in requested}
    known = {loop.loop_var for loop in loops(before)}
    found = []
    for loop in loops(after):
        name = loop.loop_var.name
        if loop.loop_var in requested and loop.kind is S.ForKind.SERIAL:
            if not enabled:
                why = "the pipeline turns vectorize-loop off"
            elif not isinstance(loop.extent, E.IntImm):
                why = "its extent is not a constant"
            else:
                why = "its body has no vector form (an allocation, or a value that later "
                why += "statements use, defined per lane)"
            found.append(remark(f"vectorized loop '{name}' runs serially: {why}", loop))
        elif (
            loop.loop_var not in known
            and name.endswith("_s")
            and name[:-2] in names
            and loop.kind is S.ForKind.SERIAL
        ):
            found.append(
                remark(
                    f"part of vectorized loop '{name[:-2]}' runs lane by lane: this statement "
                    "has no vector form (a condition or an index that differs per lane, a "
                    "store of every lane to one place, or a call with effects)",
                    loop.body,
                )
            )
    return found


def ununrolled(module: IRModule) -> list[Diagnostic]:
    return [
        remark(
            f"unrolled loop '{loop.loop_var.name}' runs as an ordinary loop: its extent is not "
            "a constant",
            loop,
        )
        for loop in loops(module)
        if loop.kind is S.ForKind.UNROLLED and not isinstance(loop.extent, E.IntImm)
    ]


class _NestedParallel(Visitor):
    def __init__(self) -> None:
        self.outer: list[S.For] = []
        self.remarks: list[Diagnostic] = []

    def visit_For(self, loop: S.For) -> None:
        if loop.kind is not S.ForKind.PARALLEL:
            self.generic_visit(loop)
            return
        if self.outer:
            outer = self.outer[-1]
            self.remarks.append(
                remark(
                    f"parallel loop '{loop.loop_var.name}' runs serially: it is inside "
                    f"parallel loop '{outer.loop_var.name}', whose threads already share the "
                    "work (one OpenMP region at a time)",
                    loop,
                    Note("the outer parallel loop", outer.span),
                )
            )
        self.outer.append(loop)
        try:
            self.generic_visit(loop)
        finally:
            self.outer.pop()


def nested_parallel(module: IRModule) -> list[Diagnostic]:
    finder = _NestedParallel()
    finder.visit(module)
    return finder.remarks

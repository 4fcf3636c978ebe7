"""The base of every validity rule: a Visitor that collects located diagnostics.

A node built by a pass may carry no span; its diagnostic then falls back to the innermost
enclosing node that has one, so every error points somewhere in the user's text.
"""

from __future__ import annotations

from tirc.diagnostics import Diagnostic, Note, Severity, Span
from tirc.ir.buffer import Buffer
from tirc.ir.expr import Var
from tirc.ir.functor import Visitor
from tirc.ir.node import Node


class Checker(Visitor):
    """Walks one function; `error` records a violation and the walk goes on."""

    def __init__(self) -> None:
        self.diagnostics: list[Diagnostic] = []
        self._spans: list[Span] = []

    def visit(self, node: object) -> None:
        # Vars and Buffers are shared by every use, so their own span is where they were
        # defined, never where they are used: a use is located by its enclosing node.
        span = node.span if isinstance(node, Node) and not isinstance(node, (Var, Buffer)) else None
        if span is None:
            super().visit(node)
            return
        self._spans.append(span)
        try:
            super().visit(node)
        finally:
            self._spans.pop()

    def span_of(self, node: object | None) -> Span | None:
        """`node`'s own span, else that of the innermost enclosing node that has one."""
        if isinstance(node, Node) and not isinstance(node, (Var, Buffer)) and node.span:
            return node.span
        return self._spans[-1] if self._spans else None

    def first_located(self, *nodes: object) -> object | None:
        """The first of `nodes` with a span of its own (a bare variable has none at a use)."""
        for node in nodes:
            if isinstance(node, Node) and not isinstance(node, (Var, Buffer)) and node.span:
                return node
        return None

    def error(self, message: str, node: object | None, *notes: Note) -> None:
        self.diagnostics.append(Diagnostic.error(message, self.span_of(node), *notes))

    def warning(self, message: str, node: object | None, *notes: Note) -> None:
        """Valid, but probably not what was meant: reported without failing the check."""
        span = self.span_of(node)
        self.diagnostics.append(Diagnostic(Severity.WARNING, message, span, tuple(notes)))

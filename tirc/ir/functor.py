"""Generic traversal of IR trees: a Visitor and a Mutator that dispatch on a table.

Subclasses define `visit_<ClassName>` for the nodes they care about; every other node is walked
field by field. The Mutator rebuilds a node only when a child changed, so unchanged subtrees
are shared. Vars and Buffers are leaves by default: they are referenced from many places, and
rewriting one is a decision (see `substitute`), not a side effect of walking.
"""

from __future__ import annotations

import dataclasses
from functools import cache
from typing import Any, Callable

from tirc.ir.buffer import Buffer
from tirc.ir.expr import Var
from tirc.ir.node import Node


@cache
def child_fields(cls: type) -> tuple[str, ...]:
    """The constructor fields of an IR class, in order, without `span`."""
    return tuple(f.name for f in dataclasses.fields(cls) if f.init and f.name != "span")


@cache
def _dispatch(visitor_cls: type, node_cls: type) -> Callable[..., Any] | None:
    for klass in node_cls.__mro__:
        method = getattr(visitor_cls, f"visit_{klass.__name__}", None)
        if method is not None:
            return method  # type: ignore[no-any-return]
    return None


LEAVES = (Var, Buffer)


class Visitor:
    """Walks a tree in field order (definitions before uses in a well-formed program)."""

    def visit(self, node: object) -> None:
        if isinstance(node, Node):
            method = _dispatch(type(self), type(node))
            if method is not None:
                method(self, node)
            elif not isinstance(node, LEAVES):
                self.generic_visit(node)
        elif isinstance(node, tuple):
            for item in node:
                self.visit(item)

    def generic_visit(self, node: Node) -> None:
        for name in child_fields(type(node)):
            value = getattr(node, name)
            if isinstance(value, (Node, tuple)):
                self.visit(value)


class Mutator:
    """Returns a rewritten tree; the same object where nothing changed."""

    def visit(self, node: Any) -> Any:
        if isinstance(node, Node):
            method = _dispatch(type(self), type(node))
            if method is not None:
                return method(self, node)
            if isinstance(node, LEAVES):
                return node
            return self.generic_visit(node)
        if isinstance(node, tuple):
            items = tuple(self.visit(item) for item in node)
            if all(new is old for new, old in zip(items, node)):
                return node
            return items
        return node

    def generic_visit(self, node: Node) -> Node:
        changes: dict[str, Any] = {}
        for name in child_fields(type(node)):
            value = getattr(node, name)
            if isinstance(value, (Node, tuple)):
                new = self.visit(value)
                if new is not value:
                    changes[name] = new
        if not changes:
            return node
        return dataclasses.replace(node, **changes)  # type: ignore[type-var]


def walk(node: object, callback: Callable[[Node], None]) -> None:
    """Calls `callback` on every node of the tree, parents before children."""

    class _Walker(Visitor):
        def visit(self, item: object) -> None:
            if isinstance(item, Node):
                callback(item)
            super().visit(item)

    _Walker().visit(node)

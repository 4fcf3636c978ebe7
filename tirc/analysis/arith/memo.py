"""What the simplifier found, remembered by structure while the variable bounds stay the same:
an expression met again as another object (an unrolled body's indices and conditions, the
same guard on every statement) is looked up, not simplified again.

A node's key is a small integer for its class and its fields' keys, each subtree keyed once
(variables and buffers by identity, as `expr_key` does), so keying a tree costs one walk.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from typing import TYPE_CHECKING

from tirc.ir.buffer import Buffer
from tirc.ir.expr import Var
from tirc.ir.functor import child_fields
from tirc.ir.node import Node

if TYPE_CHECKING:
    from tirc.analysis.arith.bound import Bound
    from tirc.ir.expr import PrimExpr

# Past this many keyed nodes a memo starts afresh, so that a long-lived analyzer does not keep
# every expression it was ever asked about alive.
LIMIT = 200_000


class SimplifyMemo:
    """Simplified results by (structural key, whether simplifying a comparison's difference),
    valid for the bounds they were found under."""

    def __init__(self) -> None:
        self._ranges: dict[Var, Bound] = {}
        self._context: object | None = None  # the simplifier's Context, compared by identity
        self._keys: dict[int, tuple[Node, int]] = {}  # id -> (node, key): keeps ids unique
        self._interned: dict[Hashable, int] = {}
        self.results: dict[tuple[int, bool], PrimExpr] = {}

    def under(self, ranges: Mapping[Var, Bound], context: object) -> SimplifyMemo:
        """This memo, emptied first if `ranges` or the facts in `context` differ from those
        of its results (or it grew past LIMIT)."""
        if ranges != self._ranges or context is not self._context or len(self._keys) > LIMIT:
            self._ranges = dict(ranges)
            self._context = context
            self._keys.clear()
            self._interned.clear()
            self.results.clear()
        return self

    def key(self, node: Node) -> int:
        """The same integer for structurally identical nodes over the same variables, written
        at the same place (an unrolled body's copies share their spans)."""
        known = self._keys.get(id(node))
        if known is not None:
            return known[1]
        fields = child_fields(type(node))
        # the span is part of the key: a result carries its node's span into diagnostics, so
        # the same expression written on another line is simplified for that line
        parts = (type(node), node.span, *(self._field_key(getattr(node, f)) for f in fields))
        key = self._interned.setdefault(parts, len(self._interned))
        self._keys[id(node)] = (node, key)
        return key

    def _field_key(self, value: object) -> Hashable:
        if isinstance(value, (Var, Buffer)):
            return value  # by identity (neither defines equality); the tuple keeps it alive
        if isinstance(value, Node):
            return self.key(value)
        if isinstance(value, tuple):
            return tuple(self._field_key(item) for item in value)
        if isinstance(value, float):
            return ("float", repr(value))  # -0.0 and 0.0 differ, nan equals itself
        return value  # a dtype, an int, a string: hashable

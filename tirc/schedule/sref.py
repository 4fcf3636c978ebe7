"""Stable handles to the loops and blocks of a function being scheduled.

IR nodes are immutable, so a rewrite makes new nodes; an SRef follows its loop or block
across rewrites (the state moves it to the new node), and becomes invalid when the loop or
block is removed. Plans name SRefs, never nodes.
"""

from __future__ import annotations

from tirc.ir.stmt import For, SBlock


class SRef:
    __slots__ = ("stmt", "parent")

    def __init__(self, stmt: For | SBlock, parent: SRef | None):
        self.stmt: For | SBlock | None = stmt
        self.parent = parent

    @property
    def is_valid(self) -> bool:
        return self.stmt is not None

    @property
    def is_block(self) -> bool:
        return isinstance(self.stmt, SBlock)

    @property
    def is_loop(self) -> bool:
        return isinstance(self.stmt, For)

    @property
    def node(self) -> For | SBlock:
        """The loop or block this handle follows; it must not have been removed."""
        assert self.stmt is not None, "the loop or block was removed"
        return self.stmt

    @property
    def block(self) -> SBlock:
        assert isinstance(self.stmt, SBlock), "not a block"
        return self.stmt

    @property
    def loop(self) -> For:
        assert isinstance(self.stmt, For), "not a loop"
        return self.stmt

    def ancestors(self) -> list[SRef]:
        """Parents from the nearest up to the root block."""
        result = []
        node = self.parent
        while node is not None:
            result.append(node)
            node = node.parent
        return result

    def enclosing_block(self) -> SRef | None:
        """The nearest block strictly above: the scope this loop or block lives in."""
        node = self.parent
        while node is not None and not node.is_block:
            node = node.parent
        return node

    def __repr__(self) -> str:
        if self.stmt is None:
            return "SRef(<removed>)"
        if isinstance(self.stmt, SBlock):
            return f"SRef(block {self.stmt.name})"
        return f"SRef(loop {self.stmt.loop_var.name})"

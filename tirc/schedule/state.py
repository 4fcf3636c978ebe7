"""The schedule state: a function under rewriting, its SRef tree, and its block scopes.

`replace(src, target)` swaps the loop or block at `src` for a new statement and rebuilds
only the path from it to the root (path copying); SRefs of reused nodes stay put, blocks a
primitive renews are carried over through `block_reuse`, rebuilt loops by their loop variable,
and only the scopes the rewrite touched forget their cached dependences, to be recomputed
when next asked for.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import TypeVar

from tirc.ir.function import IRModule, PrimFunc
from tirc.ir.functor import Mutator, child_fields
from tirc.ir.node import Node
from tirc.ir.stmt import For, SBlock, SBlockRealize, Stmt
from tirc.schedule.scope import BlockScope, build_scope, child_blocks
from tirc.schedule.sref import SRef


class _ReplaceChild(Mutator):
    """Rebuilds a parent with one child object swapped, not looking below other loops/blocks."""

    def __init__(self, old: Node, new: Node):
        self.old, self.new = old, new

    def visit(self, node: object) -> object:
        if node is self.old:
            return self.new
        if isinstance(node, (For, SBlock)):
            return node  # another sref's subtree: the child is not inside it
        return super().visit(node)


_ParentT = TypeVar("_ParentT", bound=Node)


def with_child_replaced(parent: _ParentT, old: Node, new: Node) -> _ParentT:
    """`parent` (a loop or block) rebuilt with `old`, a loop or block directly below it,
    swapped for `new` (any statement)."""
    return _ReplaceChild(old, new).generic_visit(parent)


# A block's init is part of the block, not of its scope: loops and blocks inside it (after
# blockize) have no handles, and do not count as writers in the scope (TVM's rule too).
_BLOCK_FIELDS = tuple(name for name in child_fields(SBlock) if name != "init")


def children(stmt: object) -> list[For | SBlock]:
    """The loops and blocks directly below `stmt` (not below them), in program order; none
    below anything that is not a node (an sref's missing statement).

    Only statement fields are searched: expressions never hold loops or blocks.
    """
    found: list[For | SBlock] = []
    if isinstance(stmt, Node):
        _collect_children(stmt, found)
    return found


def _collect_children(node: Node, found: list[For | SBlock]) -> None:
    names = _BLOCK_FIELDS if isinstance(node, SBlock) else child_fields(type(node))
    for name in names:
        value = getattr(node, name)
        if isinstance(value, Stmt):
            if isinstance(value, (For, SBlock)):
                found.append(value)
            else:
                _collect_children(value, found)
        elif isinstance(value, tuple):
            for item in value:
                if isinstance(item, (For, SBlock)):
                    found.append(item)
                elif isinstance(item, Stmt):
                    _collect_children(item, found)


def _subtree(stmt: Node) -> list[For | SBlock]:
    """Every loop and block in `stmt`, itself included."""
    found: list[For | SBlock] = []
    stack: list[Node] = [stmt]
    while stack:
        node = stack.pop()
        if isinstance(node, (For, SBlock)):
            found.append(node)
        stack.extend(children(node))
    return found


class ScheduleState:
    def __init__(self, module: IRModule, func_name: str):
        func = module[func_name]
        if not isinstance(func.body, SBlockRealize):
            raise ValueError(f"function {func_name} has no root block: it is not s-tir")
        self.module = module
        self.func_name = func_name
        self.stmt2ref: dict[int, SRef] = {}
        self.root = self._index(func.body.block, None)
        self._scopes: dict[int, BlockScope] = {}

    @property
    def func(self) -> PrimFunc:
        return self.module[self.func_name]

    def get_sref(self, stmt: For | SBlock) -> SRef:
        sref = self.stmt2ref.get(id(stmt))
        if sref is None:
            raise KeyError("statement is not part of the scheduled function")
        return sref

    def _index(self, stmt: For | SBlock, parent: SRef | None) -> SRef:
        """Give srefs to `stmt` and everything below; nodes that have one keep it."""
        top = self._link(stmt, parent)
        stack = [top]
        while stack:
            current = stack.pop()
            for child in children(current.stmt):
                stack.append(self._link(child, current))
        return top

    def _link(self, stmt: For | SBlock, parent: SRef | None) -> SRef:
        sref = self.stmt2ref.get(id(stmt))
        if sref is None:
            sref = self.stmt2ref[id(stmt)] = SRef(stmt, parent)
        else:
            sref.parent = parent
        return sref

    # -- rewriting ---------------------------------------------------------------------------

    def replace(
        self, src: SRef, target: Stmt, block_reuse: Mapping[SBlock, SBlock] | None = None
    ) -> None:
        """Put `target` where `src`'s loop or block is; `block_reuse` maps old blocks to the
        new blocks that continue them (their srefs follow)."""
        old = src.stmt
        assert old is not None, "replacing a removed statement"
        reuse: dict[int, For | SBlock] = {id(k): v for k, v in (block_reuse or {}).items()}
        if isinstance(old, SBlock):
            if not isinstance(target, SBlock):
                raise TypeError("a block can only be replaced by a block")
            if target is not old:
                reuse.setdefault(id(old), target)  # src follows its stmt
        parent = src.parent
        fresh = _subtree(target)
        kept = {id(node) for node in fresh}
        # A rebuilt loop that keeps its loop variable is the same loop to the user (TVM's
        # rule too): its handle follows it, so plans can keep using it after e.g. a reorder.
        loops_by_var = {
            id(node.loop_var): node
            for node in reversed(fresh)
            if isinstance(node, For) and id(node) not in self.stmt2ref
        }
        for node in _subtree(old):
            if id(node) in kept:
                continue
            sref = self.stmt2ref.pop(id(node), None)
            if sref is None:
                continue
            renewed = reuse.get(id(node))
            if renewed is None and isinstance(node, For):
                renewed = loops_by_var.pop(id(node.loop_var), None)
            if renewed is not None:
                sref.stmt = renewed
                self.stmt2ref[id(renewed)] = sref
            else:
                sref.stmt, sref.parent = None, None
        self._copy_path(parent, old, target)
        for child in [target] if isinstance(target, (For, SBlock)) else children(target):
            self._index(child, parent)
        self._forget_scopes(parent, target)

    def _copy_path(self, parent: SRef | None, child_old: Node, child_new: Node) -> None:
        while parent is not None:
            parent_old = parent.stmt
            assert parent_old is not None
            parent_new = with_child_replaced(parent_old, child_old, child_new)
            del self.stmt2ref[id(parent_old)]
            parent.stmt = parent_new
            self.stmt2ref[id(parent_new)] = parent
            child_old, child_new = parent_old, parent_new
            parent = parent.parent
        if child_old is not child_new:
            func = self.func
            body = func.body
            assert isinstance(body, SBlockRealize) and body.block is child_old
            assert isinstance(child_new, SBlock)  # the root block's replacement is a block
            new_func = dataclasses.replace(func, body=dataclasses.replace(body, block=child_new))
            self.module = self.module.with_function(self.func_name, new_func)

    # -- scopes ------------------------------------------------------------------------------

    def scope(self, block: SRef) -> BlockScope:
        """The child blocks of scope root `block` and the dependences between them."""
        cached = self._scopes.get(id(block))
        if cached is None:
            blocks = child_blocks(block, children, self.get_sref)
            cached = self._scopes[id(block)] = build_scope(block, blocks)
        return cached

    def _forget_scopes(self, parent: SRef | None, target: Node) -> None:
        node = parent
        while node is not None and not node.is_block:
            node = node.parent
        if node is not None:
            self._scopes.pop(id(node), None)
        for inner in _subtree(target):
            if isinstance(inner, SBlock):
                sref = self.stmt2ref.get(id(inner))
                if sref is not None:
                    self._scopes.pop(id(sref), None)

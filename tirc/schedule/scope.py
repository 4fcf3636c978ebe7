"""Block scopes: the blocks directly under a scope root, and the dependences among them.

Dependences come from the blocks' declared regions, by buffer: a later block that reads what
an earlier one writes depends on it (RAW), as do later writers of what was read (WAR) or
written (WAW). Regions are compared by buffer only, as TVM's block scope does.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from tirc.ir.stmt import For, SBlock
from tirc.schedule.sref import SRef


class DepKind(enum.Enum):
    RAW = "RAW"
    WAW = "WAW"
    WAR = "WAR"


@dataclass(frozen=True)
class Dependency:
    src: SRef
    dst: SRef
    kind: DepKind


@dataclass
class BlockScope:
    root: SRef
    blocks: list[SRef] = field(default_factory=list)  # in program order
    deps_by_src: dict[int, list[Dependency]] = field(default_factory=dict)
    deps_by_dst: dict[int, list[Dependency]] = field(default_factory=dict)
    writers: dict[int, list[SRef]] = field(default_factory=dict)  # id(buffer) -> blocks

    def producers(self, block: SRef) -> list[SRef]:
        return _unique(d.src for d in self.deps_to(block) if d.kind is DepKind.RAW)

    def consumers(self, block: SRef) -> list[SRef]:
        return _unique(d.dst for d in self.deps_from(block) if d.kind is DepKind.RAW)

    def deps_from(self, block: SRef) -> list[Dependency]:
        return self.deps_by_src.get(id(block), [])

    def deps_to(self, block: SRef) -> list[Dependency]:
        return self.deps_by_dst.get(id(block), [])


def _unique(srefs: Iterable[SRef]) -> list[SRef]:
    seen: set[int] = set()
    result = []
    for sref in srefs:
        if id(sref) not in seen:
            seen.add(id(sref))
            result.append(sref)
    return result


def child_blocks(
    root: SRef, children: Callable[[object], list[For | SBlock]], sref_of: Callable[[SBlock], SRef]
) -> list[SRef]:
    """Blocks whose nearest enclosing block is `root`, in program order."""
    result: list[SRef] = []
    pending = list(reversed(children(root.stmt)))
    while pending:
        node = pending.pop()
        if isinstance(node, SBlock):
            result.append(sref_of(node))
        else:
            pending.extend(reversed(children(node)))
    return result


def build_scope(root: SRef, blocks: list[SRef]) -> BlockScope:
    """Dependences among `blocks` (the scope's children in program order)."""
    scope = BlockScope(root, blocks)
    readers: dict[int, list[SRef]] = {}
    for block_ref in blocks:
        block = block_ref.block
        read_ids = {id(region.buffer) for region in block.reads}
        write_ids = {id(region.buffer) for region in block.writes}
        found: list[tuple[SRef, DepKind]] = []
        for buffer_id in read_ids:
            found += [(writer, DepKind.RAW) for writer in scope.writers.get(buffer_id, [])]
        for buffer_id in write_ids:
            found += [(writer, DepKind.WAW) for writer in scope.writers.get(buffer_id, [])]
            found += [(reader, DepKind.WAR) for reader in readers.get(buffer_id, [])]
        seen: set[tuple[int, DepKind]] = set()
        for src, kind in found:
            if src is block_ref or (id(src), kind) in seen:
                continue
            seen.add((id(src), kind))
            dep = Dependency(src, block_ref, kind)
            scope.deps_by_src.setdefault(id(src), []).append(dep)
            scope.deps_by_dst.setdefault(id(block_ref), []).append(dep)
        for buffer_id in read_ids:
            readers.setdefault(buffer_id, []).append(block_ref)
        for buffer_id in write_ids:
            scope.writers.setdefault(buffer_id, []).append(block_ref)
    return scope

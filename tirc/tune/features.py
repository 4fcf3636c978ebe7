"""Features of a scheduled program for the cost model: a fixed-length vector of numbers.

Read from the scheduled program (cheap: no lowering), for the two blocks that run most often
and for the whole: how many times each runs, the nest's depth and its parallel, vectorized
(vector width), unrolled and serial extents, the register tile (the iterations inside the
outermost reduction loop), the bytes of `local` and `shared` buffers, the unroll depth
requested, the bytes each run of the innermost loop touches and the arithmetic intensity of
the block (stores per distinct element read), all on a log2 scale.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from tirc.ir.buffer import Buffer
from tirc.ir.expr import IntImm, Var
from tirc.ir.function import PrimFunc
from tirc.ir.functor import vars_in, walk
from tirc.ir.node import Node
from tirc.ir.stmt import For, ForKind, IterType, SBlock, SBlockRealize
from tirc.schedule.state import children

BLOCK_FEATURES = 12
TOP_BLOCKS = 2
LENGTH = TOP_BLOCKS * BLOCK_FEATURES + 4


@dataclass
class _Nest:
    block: SBlock
    loops: list[For] = field(default_factory=list)
    scale: int = 1
    roles: dict[Var, IterType] = field(default_factory=dict)


def features(func: PrimFunc) -> list[float]:
    nests: list[_Nest] = []
    allocations: list[Buffer] = []
    _collect(func.body, [], nests, allocations)
    nests.sort(key=lambda nest: -nest.scale)
    vector: list[float] = []
    for nest in nests[:TOP_BLOCKS]:
        vector += _block_features(nest)
    vector += [0.0] * (TOP_BLOCKS * BLOCK_FEATURES - len(vector))
    local = sum(_bytes(b) for b in allocations if b.scope in ("local", "local.fragment"))
    shared = sum(_bytes(b) for b in allocations if b.scope.startswith("shared"))
    total = sum(nest.scale for nest in nests)
    vector += [_log(local), _log(shared), _log(total), float(len(nests))]
    return vector


def _collect(
    node: Node,
    loops: list[For],
    nests: list[_Nest],
    allocations: list[Buffer],
    parent: Node | None = None,
) -> None:
    if isinstance(node, SBlock):
        allocations.extend(node.alloc_buffers)
    inner = children(node)
    if isinstance(node, SBlock) and not any(_has_block(child) for child in inner):
        scale = math.prod(_extent(loop) for loop in loops)
        nests.append(_Nest(node, list(loops), scale, _bindings(parent, node)))
        return
    for child in inner:
        below = loops + [child] if isinstance(child, For) else loops
        _collect(child, below, nests, allocations, node)


def _bindings(parent: Node | None, block: SBlock) -> dict[Var, IterType]:
    """Each loop variable the block's bindings use, and the kind of the iterators it feeds
    (REDUCE only when it feeds reduction iterators alone)."""
    found: dict[Var, IterType] = {}
    if parent is None:
        return found

    def visit(node: Node) -> None:
        if isinstance(node, SBlockRealize) and node.block is block:
            for iv, value in zip(block.iter_vars, node.iter_values, strict=True):
                for var in vars_in(value):
                    if found.get(var, iv.iter_type) is IterType.REDUCE:
                        found[var] = iv.iter_type
                    else:
                        found[var] = IterType.SPATIAL

    walk(parent, visit)
    return found


def _has_block(node: Node) -> bool:
    return isinstance(node, SBlock) or any(_has_block(child) for child in children(node))


def _extent(loop: For) -> int:
    return loop.extent.value if isinstance(loop.extent, IntImm) else 64


def _log(value: float) -> float:
    return math.log2(value + 1)


def _bytes(buffer: Buffer) -> int:
    count = math.prod(dim.value if isinstance(dim, IntImm) else 64 for dim in buffer.shape)
    return count * max(buffer.dtype.bits * buffer.dtype.lanes // 8, 1)


def _block_features(nest: _Nest) -> list[float]:
    kinds: dict[ForKind, int] = {}
    for loop in nest.loops:
        kinds[loop.kind] = kinds.get(loop.kind, 1) * _extent(loop)
    unroll = 0
    for loop in nest.loops:
        value = loop.annotations.get("pragma_auto_unroll_max_step") if loop.annotations else None
        if isinstance(value, IntImm):
            unroll = max(unroll, value.value)
        elif isinstance(value, int):
            unroll = max(unroll, value)
    innermost = nest.loops[-1] if nest.loops else None
    vector_width = _extent(innermost) if innermost and innermost.kind is ForKind.VECTORIZED else 1
    reduce_at = _outermost_reduction(nest)
    register_tile = math.prod(_extent(loop) for loop in nest.loops[reduce_at + 1 :])
    inner_bytes = _innermost_bytes(nest)
    reads = sum(_bytes(region.buffer) for region in nest.block.reads) or 1
    intensity = nest.scale / reads
    return [
        _log(nest.scale),
        float(len(nest.loops)),
        _log(kinds.get(ForKind.PARALLEL, 1)),
        _log(vector_width),
        _log(kinds.get(ForKind.UNROLLED, 1)),
        _log(kinds.get(ForKind.SERIAL, 1)),
        _log(register_tile),
        _log(unroll),
        _log(inner_bytes),
        _log(intensity),
        _log(_extent(innermost)) if innermost else 0.0,
        float(nest.block.init is not None),
    ]


def _outermost_reduction(nest: _Nest) -> int:
    """The position of the outermost loop that only reduction iterators depend on (-1: none)."""
    for position, loop in enumerate(nest.loops):
        if nest.roles.get(loop.loop_var) is IterType.REDUCE:
            return position
    return len(nest.loops) - 1


def _innermost_bytes(nest: _Nest) -> int:
    """Bytes the block's regions span, scaled down by the loops above the innermost: what one
    run of the innermost loop touches, roughly."""
    if not nest.loops:
        return 0
    total = sum(_bytes(region.buffer) for region in nest.block.reads + nest.block.writes)
    above = math.prod(_extent(loop) for loop in nest.loops[:-1]) or 1
    return max(total // above, 1)

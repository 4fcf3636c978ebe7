"""multi-level-tiling (CPU): SSRSRS tiles with a register-tile write cache.

Applies to a reduction block with data reuse (some input is read without one of the spatial
iterators: matmul, batch matmul, conv2d, depthwise conv2d) under a plain nest of constant
loops. Each spatial loop is tiled in four (S0 S1 S2 S3), each reduction loop in two (R0 R1),
ordered S0 S1 R0 S2 R1 S3: the S0 loops are fused and run in parallel, the innermost S3 loop
is vectorized where it indexes the output's last dimension, and the output tile lives in a
`local` write cache, written back after the S0 or S1 level (a choice), its initialization
decomposed in front of the R0 loops. An input read along a reduction and the vectorized axis
(matmul's B) may be packed into panels first (rules/packing.py, a choice). Where the last
spatial loop is not whole vectors and another spatial iterator can be made contiguous by
packing (conv2d's 56-wide x and its output channel), the vector axis is a choice between
them: choosing the other packs the inputs it indexes, moves its S3 loop innermost and lays
the write cache out with its dimension last. An unroll depth for the whole nest is sampled
too.
"""

from __future__ import annotations

from tirc.ir.expr import Var
from tirc.ir.functor import vars_in
from tirc.ir.stmt import IterType
from tirc.schedule.properties import realize_of
from tirc.schedule.sref import SRef
from tirc.tune.builder import PlanBuilder, loop_extent, tile_nest
from tirc.tune.rules.analysis import Nest, has_reuse, is_innermost_contiguous, plain_nest
from tirc.tune.rules.common import annotate_unroll, vector_lanes, vectorize_innermost
from tirc.tune.rules.packing import (
    innermost_map,
    pack,
    pack_along,
    packable_reads,
    packed_axes,
    sole_dimension,
)

MAX_INNERMOST = 64


def apply(builder: PlanBuilder, name: str) -> list[str] | None:
    nest = plain_nest(builder, name)
    if nest is None or not nest.reduce or not nest.spatial or not has_reuse(nest.block):
        return None
    if len(nest.block.block.writes) != 1:
        return None
    block = builder.get_sblock(name)
    lanes = vector_lanes()
    spatial = [i for i, role in enumerate(nest.roles) if role is IterType.SPATIAL]
    axis = _vector_axis(builder, nest, spatial[-1], lanes)

    def preferred(position: int, loop: SRef) -> list[int]:
        # a register tile: whole vectors along the vector axis, a few rows along the others
        if position == axis:
            return _vector_tiles(loop_extent(loop) or 1, lanes)
        return [1, 2, 4, 8]

    tiles = tile_nest(builder, builder.get_loops(block), nest.roles, MAX_INNERMOST, preferred)
    levels, reductions = tiles.spatial, tiles.reduce
    packed = axis != spatial[-1]
    if packed:
        moved = levels[3][spatial.index(axis)]
        levels[3] = [loop for loop in levels[3] if loop is not moved] + [moved]
        builder.run("reorder", ordered_loops=levels[3])
    innermost = levels[3][-1]
    vector = packed or is_innermost_contiguous(nest.block, innermost)

    outer = builder.fuse(levels[0])
    builder.run("parallel", loop=outer)
    if vector:
        builder.run("vectorize", loop=innermost)
    vector_iterator = _iterator_of(nest.block, innermost)
    width = tiles.factors[spatial.index(axis)][-1].value
    if packed and vector_iterator is not None:
        for index, region in enumerate(nest.block.block.reads):
            dim = sole_dimension(region, vector_iterator)
            if dim is not None and region.buffer is not nest.block.block.writes[0].buffer:
                pack_along(builder, block, index, dim, width)
    elif vector and vector_iterator is not None:
        for index in packable_reads(nest.block, vector_iterator):
            if width > 1 and builder.sample_choice([False, True]).value:
                pack(builder, block, index, width)
    write_level = builder.sample_choice([0, 1]).value
    cache, _ = builder.run("cache_write", block=block, write_buffer_index=0, storage_scope="local")
    if packed and vector_iterator is not None:
        write = nest.block.block.writes[0]
        dim = sole_dimension(write, vector_iterator)
        assert dim is not None  # packed_axes chose it for this
        builder.run(
            "transform_layout",
            block=cache,
            buffer_index=0,
            buffer_index_type="read",
            index_map=innermost_map(len(write.region), dim),
        )
    at = outer if write_level == 0 else levels[1][-1]
    builder.run("reverse_compute_at", block=cache, loop=at)
    init, _ = builder.run("decompose_reduction", block=block, loop=reductions[0][0])
    if vector:
        vectorize_innermost(builder, init)
        vectorize_innermost(builder, cache)
    annotate_unroll(builder, outer)
    return [name, cache.block.name, init.block.name]


def _vector_axis(builder: PlanBuilder, nest: Nest, last: int, lanes: int) -> int:
    """The position of the loop to vectorize: the last spatial one, or (a choice, where the
    last one's extent is not whole vectors) one whose iterator packing makes contiguous and
    whose extent is whole vectors. Where the last axis fills whole vectors, packing another
    only mirrors the same tiles (matmul's i for its j) at the cost of a transposed
    write-back, and would halve the search's samples of the natural space."""
    if (loop_extent(nest.loops[last]) or 0) % lanes == 0:
        return last
    packable = packed_axes(nest.block)
    others = [
        position
        for position, loop in enumerate(nest.loops)
        if any(_iterator_of(nest.block, loop) is var for var in packable)
        and (loop_extent(loop) or 0) % lanes == 0
    ]
    return int(builder.sample_choice([last, *others]).value) if others else last


def _vector_tiles(extent: int, lanes: int) -> list[int]:
    """Innermost tiles of whole vectors (1, 2 or 4 of them) where they divide the extent,
    else its divisors from half a vector up to MAX_INNERMOST."""
    whole = [k * lanes for k in (1, 2, 4) if extent % (k * lanes) == 0]
    if whole:
        return whole
    return [d for d in range(max(lanes // 2, 1), MAX_INNERMOST + 1) if extent % d == 0]


def _iterator_of(block: SRef, loop: SRef) -> Var | None:
    """The iterator of `block` that `loop` alone feeds (the loop is one of its tiles)."""
    realize = realize_of(block)
    var = loop.loop.loop_var
    fed = [
        iv.var
        for iv, value in zip(block.block.iter_vars, realize.iter_values, strict=True)
        if var in vars_in(value)
    ]
    return fed[0] if len(fed) == 1 else None

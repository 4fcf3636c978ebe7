"""multi-level-tiling (CPU): SSRSRS tiles with a register-tile write cache.

Applies to a reduction block with data reuse (some input is read without one of the spatial
iterators: matmul, batch matmul, conv2d, depthwise conv2d) under a plain nest of constant
loops. Each spatial loop is tiled in four (S0 S1 S2 S3), each reduction loop in two (R0 R1),
ordered S0 S1 R0 S2 R1 S3: the S0 loops are fused and run in parallel, the innermost S3 loop
is vectorized where it indexes the output's last dimension, and the output tile lives in a
`local` write cache, written back after the S0 or S1 level (a choice), its initialization
decomposed in front of the R0 loops. An input read along a reduction and the vectorized axis
(matmul's B) may be packed into panels first (rules/packing.py, a choice). An unroll depth for
the whole nest is sampled too.
"""

from __future__ import annotations

from tirc.ir.expr import Var
from tirc.ir.functor import vars_in
from tirc.ir.stmt import IterType
from tirc.schedule.properties import realize_of
from tirc.schedule.sref import SRef
from tirc.tune.builder import PlanBuilder, loop_extent, tile_nest
from tirc.tune.rules.analysis import has_reuse, is_innermost_contiguous, plain_nest
from tirc.tune.rules.common import annotate_unroll, vector_lanes, vectorize_innermost
from tirc.tune.rules.packing import pack, packable_reads

MAX_INNERMOST = 64


def apply(builder: PlanBuilder, name: str) -> list[str] | None:
    nest = plain_nest(builder, name)
    if nest is None or not nest.reduce or not nest.spatial or not has_reuse(nest.block):
        return None
    if len(nest.block.block.writes) != 1:
        return None
    block = builder.get_sblock(name)
    lanes = vector_lanes()
    last_spatial = max(i for i, role in enumerate(nest.roles) if role is IterType.SPATIAL)

    def preferred(position: int, loop: SRef) -> list[int]:
        # a register tile: whole vectors along the last axis, a few rows along the others
        if position == last_spatial:
            return _vector_tiles(loop_extent(loop) or 1, lanes)
        return [1, 2, 4, 8]

    tiles = tile_nest(builder, builder.get_loops(block), nest.roles, MAX_INNERMOST, preferred)
    levels, reductions = tiles.spatial, tiles.reduce
    innermost = levels[3][-1]
    vector = is_innermost_contiguous(nest.block, innermost)

    outer = builder.fuse(levels[0])
    builder.run("parallel", loop=outer)
    if vector:
        builder.run("vectorize", loop=innermost)
    vector_iterator = _iterator_of(nest.block, innermost)
    if vector and vector_iterator is not None:
        width = tiles.factors[-1][-1].value
        for index in packable_reads(nest.block, vector_iterator):
            if width > 1 and builder.sample_choice([False, True]).value:
                pack(builder, block, index, width)
    write_level = builder.sample_choice([0, 1]).value
    cache, _ = builder.run("cache_write", block=block, write_buffer_index=0, storage_scope="local")
    at = outer if write_level == 0 else levels[1][-1]
    builder.run("reverse_compute_at", block=cache, loop=at)
    init, _ = builder.run("decompose_reduction", block=block, loop=reductions[0][0])
    if vector:
        vectorize_innermost(builder, init)
        vectorize_innermost(builder, cache)
    annotate_unroll(builder, outer)
    return [name, cache.block.name, init.block.name]


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

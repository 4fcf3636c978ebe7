"""tensor-core (CUDA): a float16 matmul computed by warp-wide wmma 16x16x16 operations.

Applies to a reduction block C[i, j] += A[i, k] * B[k, j] under a plain nest of three
constant loops, each a multiple of 16, with float16 operands summed into float32 or float16,
when the whole schedule below goes through on a copy of the program with the smallest tiles
(anything else is left to gpu-multi-level-tiling). i and j are split (blocks, warp tiles of
16 x 16, 16) and k (outer, inner tiles of 16, 16); the tiles per block and the k tiles
staged at once are sampled. Each block is one warp: the inputs are staged in `shared`
memory per outer k step, fetched by the 32 threads together, loaded into `wmma.matrix_a` /
`wmma.matrix_b` fragments, multiplied into a `wmma.accumulator` fragment that is zeroed
first and stored to the output at the end, each 16 x 16 tile of these steps tensorized with
the library's wmma intrinsic.
"""

from __future__ import annotations

import random

from tirc.ir.stmt import IterType
from tirc.schedule.errors import ScheduleError
from tirc.schedule.sref import SRef
from tirc.tune.builder import Misfit, PlanBuilder, Sampler, loop_extent
from tirc.tune.rules.analysis import plain_nest

TILE = 16  # wmma's m, n and k
WARP = 32
MAX_TILES = 4  # 16 x 16 tiles of a block along i or j, and k tiles staged at once
ACCUMULATORS = {"float32": "f32", "float16": "f16"}


def apply(builder: PlanBuilder, name: str) -> list[str] | None:
    suffix = _accumulator(builder, name)
    if suffix is None:
        return None
    trial = PlanBuilder(builder.module, builder.func, Sampler(random.Random(0)))
    try:
        _schedule(trial, name, suffix)
    except (ScheduleError, Misfit, AssertionError):
        return None
    return _schedule(builder, name, suffix)


def _accumulator(builder: PlanBuilder, name: str) -> str | None:
    """The intrinsics' suffix for the output's type, where the block has the shape and types
    this rule covers; None otherwise."""
    nest = plain_nest(builder, name)
    if nest is None or nest.roles != [IterType.SPATIAL, IterType.SPATIAL, IterType.REDUCE]:
        return None
    if any((loop_extent(loop) or 1) % TILE for loop in nest.loops):
        return None
    block = nest.block.block
    if len(block.writes) != 1 or len(block.reads) != 2 or block.init is None:
        return None
    if any(str(region.buffer.dtype) != "float16" for region in block.reads):
        return None
    return ACCUMULATORS.get(str(block.writes[0].buffer.dtype))


def _schedule(builder: PlanBuilder, name: str, suffix: str) -> list[str]:
    block = builder.get_sblock(name)
    i, j, k = builder.get_loops(block)
    i0, i1, i2 = _split_tiles(builder, i)
    j0, j1, j2 = _split_tiles(builder, j)
    k0, k1, k2 = _split_tiles(builder, k)
    builder.run("reorder", ordered_loops=[i0, j0, k0, k1, i1, j1, i2, j2, k2])
    builder.run("bind", loop=i0, thread="blockIdx.y")
    builder.run("bind", loop=j0, thread="blockIdx.x")
    accumulator, _ = builder.run(
        "cache_write", block=block, write_buffer_index=0, storage_scope="wmma.accumulator"
    )
    builder.run("reverse_compute_at", block=accumulator, loop=j0)
    staged = []
    for index in (0, 1):
        shared, _ = builder.run(
            "cache_read", block=block, read_buffer_index=index, storage_scope="shared"
        )
        staged.append(shared)
    fragments = []
    for index, scope in ((0, "wmma.matrix_a"), (1, "wmma.matrix_b")):
        fragment, _ = builder.run(
            "cache_read", block=block, read_buffer_index=index, storage_scope=scope
        )
        builder.run("compute_at", block=fragment, loop=k0)
        fragments.append(fragment)
    for shared in staged:
        builder.run("compute_at", block=shared, loop=k0)
    init, _ = builder.run("decompose_reduction", block=block, loop=k0)
    builder.run(
        "tensorize", target=builder.get_loops(init)[-2], intrin=f"wmma_fill_16x16x16_{suffix}"
    )
    for fragment, operand in zip(fragments, ("a", "b"), strict=True):
        _tensorize_tiles(builder, fragment, f"wmma_load_16x16x16_f16_{operand}_shared")
    update = builder.get_loops(block)
    builder.run("tensorize", target=update[-3], intrin=f"wmma_sync_16x16x16_f16f16{suffix}")
    _tensorize_tiles(builder, accumulator, f"wmma_store_16x16x16_{suffix}_global")
    for shared in staged:
        rows, columns = builder.get_loops(shared)[-2:]
        fused = builder.fuse([rows, columns])
        _, lanes = builder.split(fused, [None, WARP])
        builder.run("bind", loop=lanes, thread="threadIdx.x")
    return [name, init.block.name, accumulator.block.name]


def _split_tiles(builder: PlanBuilder, loop: SRef) -> list[SRef]:
    """(outer, sampled tiles, 16): the loop split into 16-wide tiles, and the tiles into an
    outer part and a sampled number of them (at most MAX_TILES)."""
    outer, tile = builder.split(loop, [None, TILE])
    factors = builder.sample_tile(outer, 2, MAX_TILES)
    head, tiles = builder.split(outer, list(factors))
    return [head, tiles, tile]


def _tensorize_tiles(builder: PlanBuilder, copy: SRef, intrin: str) -> None:
    """The copy's two innermost loops split into 16 x 16 tiles, each one wmma load or
    store."""
    rows, columns = builder.get_loops(copy)[-2:]
    row_tiles, row = builder.split(rows, [None, TILE])
    column_tiles, column = builder.split(columns, [None, TILE])
    builder.run("reorder", ordered_loops=[row_tiles, column_tiles, row, column])
    builder.run("tensorize", target=row, intrin=intrin)

"""gpu-multi-level-tiling (CUDA): SSRSRS tiles bound to blocks and threads, with shared and
local caches.

Applies to a reduction block with data reuse under a plain nest of constant loops (matmul,
batch matmul, conv2d). Each spatial loop is tiled in four (S0 S1 S2 S3) and each reduction
loop in two (R0 R1), ordered S0 S1 R0 S2 R1 S3: the S0 loops are fused and bound to
blockIdx.x, the S1 loops fused and bound to threadIdx.x (at most 1024 threads), every input
is staged in `shared` memory per R0 step and fetched by all the threads together, and the
output tile is kept in a `local` write cache written back by each thread. Where the
operands are int8 or uint8 summed into 32 bits, the last reduction loop's innermost 4
iterations become one `__dp4a` (tensorize with the library's dp4a intrinsic, over the shared
operands and the local accumulator), the initialization decomposed first.
"""

from __future__ import annotations

import math

from tirc.ir.stmt import IterType
from tirc.schedule.errors import ScheduleError
from tirc.schedule.sref import SRef
from tirc.tune.builder import PlanBuilder, Redraw, loop_extent, tile_nest
from tirc.tune.rules.analysis import Nest, has_reuse, plain_nest
from tirc.tune.rules.tensorize import DP4A_INTRINSICS, description_shape

MAX_INNERMOST = 16
MAX_THREADS = 1024
TILE_TRIES = 8
DP4A = 4  # the elements of one __dp4a dot product


def apply(builder: PlanBuilder, name: str) -> list[str] | None:
    nest = plain_nest(builder, name)
    if nest is None or not nest.reduce or not nest.spatial or not has_reuse(nest.block):
        return None
    if len(nest.block.block.writes) != 1:
        return None
    block = builder.get_sblock(name)
    loops = builder.get_loops(block)
    intrinsics = dp4a_intrinsics(nest, loops)
    inner = None
    if intrinsics:
        # the last reduction loop's innermost 4 iterations are one __dp4a
        position = max(i for i, role in enumerate(nest.roles) if role is IterType.REDUCE)
        loops[position], inner = builder.split(loops[position], [None, DP4A])
        if position != len(loops) - 1:
            builder.run("reorder", ordered_loops=loops + [inner])
    tiles = tile_nest(builder, loops, nest.roles, MAX_INNERMOST)
    threads = math.prod(factors[1].value for factors in tiles.factors)
    if threads > MAX_THREADS:
        raise Redraw(f"{threads} threads in a block: more than {MAX_THREADS}")
    levels, reductions = tiles.spatial, tiles.reduce
    blocks_loop = builder.fuse(levels[0])
    builder.run("bind", loop=blocks_loop, thread="blockIdx.x")
    threads_loop = builder.fuse(levels[1])
    builder.run("bind", loop=threads_loop, thread="threadIdx.x")
    made = [name]
    cache, _ = builder.run("cache_write", block=block, write_buffer_index=0, storage_scope="local")
    made.append(cache.block.name)
    for index in range(len(nest.block.block.reads)):
        if nest.block.block.reads[index].buffer in {w.buffer for w in nest.block.block.writes}:
            continue
        shared, _ = builder.run(
            "cache_read", block=block, read_buffer_index=index, storage_scope="shared"
        )
        builder.run("compute_at", block=shared, loop=reductions[0][-1])
        _cooperative_fetch(builder, shared, reductions[0][-1], threads)
        made.append(shared.block.name)
    builder.run("reverse_compute_at", block=cache, loop=threads_loop)
    if inner is not None:
        init, _ = builder.run("decompose_reduction", block=block, loop=reductions[0][0])
        made.append(init.block.name)
        _tensorize(builder, inner, intrinsics)
    return made


def dp4a_intrinsics(nest: Nest, loops: list[SRef]) -> list[str]:
    """The dp4a intrinsics whose element types are the block's (int8 or uint8 operands into
    a 32-bit sum), where the last reduction loop splits by 4."""
    block = nest.block.block
    position = max(i for i, role in enumerate(nest.roles) if role is IterType.REDUCE)
    if (loop_extent(loops[position]) or 0) % DP4A:
        return []
    buffers = {region.buffer for region in block.reads + block.writes}
    dtypes = tuple(sorted(str(buffer.dtype) for buffer in buffers))
    return [name for name in DP4A_INTRINSICS if description_shape(name).dtypes == dtypes]


def _tensorize(builder: PlanBuilder, inner: SRef, intrinsics: list[str]) -> None:
    """The first of `intrinsics` that matches the tile; none that does leaves the loop as it
    is (a failed tensorize changes nothing and is not recorded)."""
    for intrin in intrinsics:
        try:
            builder.run("tensorize", target=inner, intrin=intrin)
        except ScheduleError:
            continue
        return


def _cooperative_fetch(builder: PlanBuilder, shared: SRef, at: SRef, threads: int) -> None:
    """The copy's own loops (those below `at`) fused and split so that every thread of the
    block takes a part."""
    loops = builder.get_loops(shared)
    own = loops[[id(loop) for loop in loops].index(id(at)) + 1 :]
    if not own:
        return
    fused = builder.fuse(own)
    total = loop_extent(fused)
    if total is None or threads == 1:
        return
    # every thread of the block takes part (a guard where they do not divide the copy)
    _, inner = builder.split(fused, [None, threads])
    builder.run("bind", loop=inner, thread="threadIdx.x")

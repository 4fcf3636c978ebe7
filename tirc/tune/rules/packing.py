"""Packing an input of a tiled reduction into panels its register tile reads contiguously.

Part of multi-level-tiling (CPU), as a choice: an input read as `B[k, j]`, with k a
reduction iterator and j the vectorized spatial one (matmul's B), is copied first into
`B_pack[j // J, k, j % J]`, J the innermost tile of j, so that successive k read successive
vectors of one panel instead of rows a whole matrix width apart. The copy runs in parallel
over the panels and vectorized within one.
"""

from __future__ import annotations

from tirc.ir.expr import Var
from tirc.ir.stmt import IterType
from tirc.schedule.sref import SRef
from tirc.tune.builder import PlanBuilder


def packable_reads(block: SRef, vector_iterator: Var) -> list[int]:
    """Indices of the block's reads of 2-D parameter buffers at [a reduction iterator,
    `vector_iterator`], each index exactly the iterator."""
    reduce = {iv.var for iv in block.block.iter_vars if iv.iter_type is IterType.REDUCE}
    found = []
    for index, region in enumerate(block.block.reads):
        if len(region.region) != 2 or region.buffer.scope != "global":
            continue
        row, column = (item.min for item in region.region)
        if row in reduce and column is vector_iterator:
            found.append(index)
    return found


def pack(builder: PlanBuilder, block: SRef, read_index: int, width: int) -> None:
    copy = repack(builder, block, read_index, f"lambda a, b: (b // {width}, a, b % {width})")
    rows, columns = builder.get_loops(copy)
    panels, lanes = builder.split(columns, [None, width])
    builder.run("reorder", ordered_loops=[panels, rows, lanes])
    builder.run("parallel", loop=panels)
    builder.run("vectorize", loop=lanes)


def repack(builder: PlanBuilder, block: SRef, read_index: int, index_map: str) -> SRef:
    """A global copy of the block's read `read_index`, written in the layout `index_map`
    gives; the copy's block."""
    copy, _ = builder.run(
        "cache_read", block=block, read_buffer_index=read_index, storage_scope="global"
    )
    builder.run(
        "transform_layout",
        block=copy,
        buffer_index=0,
        buffer_index_type="write",
        index_map=index_map,
    )
    return copy

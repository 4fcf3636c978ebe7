"""Packing inputs of a tiled reduction so that its register tile reads them contiguously.

Part of multi-level-tiling (CPU). Two uses:

- **Panels along the natural vector axis** (a choice): an input read as `B[k, j]`, with k a
  reduction iterator and j the vectorized spatial one (matmul's B), is copied first into
  `B_pack[j // J, k, j % J]`, J the innermost tile of j, so that successive k read
  successive vectors of one panel instead of rows a whole matrix width apart.
- **Another vector axis** (`packed_axes`): a spatial iterator that is not the output's last
  index can still be vectorized when every access that mentions it indexes one dimension by
  exactly that iterator (conv2d's output channel: `conv[n, f, y, x]`, `weight[f, c, r, s]`).
  Each such read is packed with that dimension innermost in panels of the tile's width
  (`weight_pack[f // F, c, r, s, f % F]`), and the rule lays its local write cache out with
  that dimension last; the write-back transposes once per output element. This is the
  NCHWc-style direct convolution: the register tile is whole vectors of output channels, each
  updated by one broadcast input element.

A copy runs in parallel over its panels, vectorized within one where it reads contiguously.
"""

from __future__ import annotations

from tirc.ir.buffer import BufferRegion
from tirc.ir.expr import Var
from tirc.ir.functor import vars_in
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


def sole_dimension(region: BufferRegion, var: Var) -> int | None:
    """The dimension that `region` indexes by exactly `var` (a point), when `var` appears in
    no other index or extent; None otherwise (also when it does not appear at all)."""
    found = None
    for dim, item in enumerate(region.region):
        if var not in vars_in(item.min) and var not in vars_in(item.extent):
            continue
        if item.min is not var or found is not None:
            return None
        found = dim
    return found


def packed_axes(block: SRef) -> list[Var]:
    """Spatial iterators, other than the one indexing the output's last dimension, that every
    access mentioning them indexes in exactly one dimension by the bare iterator: the block
    writes one buffer, which one of them indexes, and each read that mentions one is a global
    buffer the block does not write."""
    (write,) = block.block.writes
    reads = [region for region in block.block.reads if region.buffer is not write.buffer]
    found = []
    for iv in block.block.iter_vars:
        if iv.iter_type is not IterType.SPATIAL:
            continue
        dim = sole_dimension(write, iv.var)
        if dim is None or dim == len(write.region) - 1:
            continue
        mentioned = [r for r in reads if any(iv.var in vars_in(i.min) for i in r.region)]
        if all(
            r.buffer.scope == "global" and sole_dimension(r, iv.var) is not None for r in mentioned
        ):
            found.append(iv.var)
    return found


def innermost_map(rank: int, dim: int, width: int | None = None) -> str:
    """An index map moving dimension `dim` of a rank-`rank` buffer last; with `width`, split
    into panels of `width` (the panel index first, the lane last)."""
    names = [f"d{i}" for i in range(rank)]
    rest = [name for i, name in enumerate(names) if i != dim]
    moved = names[dim]
    if width is None:
        out = [*rest, moved]
    else:
        out = [f"{moved} // {width}", *rest, f"{moved} % {width}"]
    return f"lambda {', '.join(names)}: ({', '.join(out)})"


def pack(builder: PlanBuilder, block: SRef, read_index: int, width: int) -> None:
    """Pack the 2-D read `read_index` ([k, j]) into panels of `width` columns."""
    pack_along(builder, block, read_index, 1, width)


def pack_along(builder: PlanBuilder, block: SRef, read_index: int, dim: int, width: int) -> None:
    """Pack the read `read_index` with dimension `dim` innermost, in panels of `width`."""
    rank = len(block.block.reads[read_index].region)
    copy = repack(builder, block, read_index, innermost_map(rank, dim, width))
    loops = builder.get_loops(copy)
    panels, lanes = builder.split(loops[dim], [None, width])
    others = [loop for i, loop in enumerate(loops) if i != dim]
    builder.run("reorder", ordered_loops=[panels, *others, lanes])
    builder.run("parallel", loop=panels)
    if dim == rank - 1:  # the copy reads along the lanes contiguously
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

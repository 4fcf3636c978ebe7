"""tensorize (CPU): a reduction that a tensor intrinsic of the library computes is tiled to the
intrinsic's shape, and its innermost tile becomes the intrinsic.

Applies to a reduction block under a plain nest of constant loops when an intrinsic for the
host matches it: on a CPU with AVX-512 VNNI, `dot_16x4_vnni` (an int8 dense or matmul:
uint8 x int8 summed into int32, 16 outputs by 4 inputs per vpdpbusd). Each loop of the
intrinsic's description is mapped onto a loop of the block of the same kind whose extent its
extent divides; the mapping is the first that tensorize accepts, tried on a copy of the
schedule. The block's loops are split so that the mapped parts are innermost, in the
description's order; an input whose tile would not be contiguous (a weight `W[j, k]` read
16 rows by 4 columns) is first copied into the intrinsic's layout (`W[j // 16, k // 4,
j % 16, k % 4]`). The outer loops are then tiled S0 S1 R0 S2 R1 S3 as multi-level-tiling
does, the S0 loops fused and parallel, the initialization decomposed in front of the R0
loops and vectorized, and the inner tile tensorized. Programs no intrinsic matches are left
to multi-level-tiling.
"""

from __future__ import annotations

import itertools
import random
from dataclasses import dataclass
from functools import cache

from tirc.ir.expr import FloorDiv, FloorMod, IntImm, PrimExpr, Var
from tirc.ir.functor import uses_var
from tirc.ir.stmt import For, IterType, SBlock, SBlockRealize
from tirc.schedule.errors import ScheduleError
from tirc.schedule.intrinsics import lookup
from tirc.schedule.properties import realize_of
from tirc.schedule.sref import SRef
from tirc.tune.builder import PlanBuilder, Sampler, loop_extent, loop_roles, tile_nest
from tirc.tune.rules.analysis import Nest, plain_nest
from tirc.tune.rules.common import annotate_unroll, host_features, vectorize_innermost
from tirc.tune.rules.packing import repack

MAX_INNERMOST = 16
DP4A_INTRINSICS = ("dp4a_s8s8s32", "dp4a_u8s8s32", "dp4a_s8u8s32", "dp4a_u8u8u32")


@dataclass(frozen=True)
class Shape:
    """The loops of an intrinsic's description, outermost first: (kind, extent) each, and
    the element types of its buffers, sorted (a quick test before any trial)."""

    name: str
    loops: tuple[tuple[IterType, int], ...]
    dtypes: tuple[str, ...]


@dataclass(frozen=True)
class Mapping:
    """Which loop of the block (by position) each loop of the description takes, and the
    reads to copy into the intrinsic's layout first."""

    positions: tuple[int, ...]
    packed: tuple[int, ...]


def cpu_intrinsics() -> list[str]:
    """The library's intrinsics this host can run, best first."""
    return ["dot_16x4_vnni"] if "+avx512vnni" in host_features() else []


def apply(builder: PlanBuilder, name: str) -> list[str] | None:
    return tensorize_nest(builder, name, cpu_intrinsics())


def tensorize_nest(builder: PlanBuilder, name: str, intrinsics: list[str]) -> list[str] | None:
    nest = plain_nest(builder, name)
    if nest is None or not nest.reduce or not nest.spatial:
        return None
    if len(nest.block.block.writes) != 1 or nest.block.block.init is None:
        return None
    for intrin in intrinsics:
        shape = description_shape(intrin)
        block = nest.block.block
        buffers = {region.buffer for region in block.reads + block.writes}
        if tuple(sorted(str(buffer.dtype) for buffer in buffers)) != shape.dtypes:
            continue
        mapping = _find_mapping(builder, name, nest, shape)
        if mapping is not None:
            return _schedule(builder, name, nest, shape, mapping)
    return None


@cache
def description_shape(intrin: str) -> Shape:
    """The loops of a built-in intrinsic's description (the library is immutable data)."""
    found = lookup(intrin)
    assert found is not None, intrin
    loops: list[For] = []
    node = found.desc.body
    while isinstance(node, SBlockRealize):
        node = node.block.body
    while isinstance(node, For):
        loops.append(node)
        node = node.body
    assert isinstance(node, SBlockRealize), intrin
    block: SBlock = node.block
    kinds = []
    for loop, iter_var in zip(loops, block.iter_vars, strict=True):
        assert isinstance(loop.extent, IntImm)
        kinds.append((iter_var.iter_type, loop.extent.value))
    dtypes = tuple(sorted(str(buffer.dtype) for _, buffer in found.desc.buffer_map))
    return Shape(intrin, tuple(kinds), dtypes)


def _find_mapping(builder: PlanBuilder, name: str, nest: Nest, shape: Shape) -> Mapping | None:
    """The first mapping of the description's loops onto the block's that tensorize accepts,
    tried (unrecorded) on a copy of the schedule."""
    options = []
    for kind, extent in shape.loops:
        options.append(
            [
                position
                for position, (loop, role) in enumerate(zip(nest.loops, nest.roles, strict=True))
                if role is kind and (loop_extent(loop) or 0) % extent == 0
            ]
        )
    for positions in itertools.product(*options):
        if len(set(positions)) != len(positions):
            continue
        for packed in (), _tiled_reads(nest, shape, positions):
            mapping = Mapping(tuple(positions), tuple(packed))
            trial = PlanBuilder(builder.module, builder.func, Sampler(random.Random(0)))
            try:
                inner, outer, _ = _prepare(trial, name, shape, mapping)
                block = trial.get_sblock(name)
                reduce_outer = [loop for loop, role in outer if role is IterType.REDUCE] or [inner]
                trial.run("decompose_reduction", block=block, loop=reduce_outer[0])
                trial.run("tensorize", target=inner, intrin=shape.name)
            except (ScheduleError, AssertionError):
                continue
            if _is_contiguous(trial, name, mapping, nest, shape) or packed:
                return mapping
    return None


def _tiled_reads(nest: Nest, shape: Shape, positions: tuple[int, ...]) -> list[int]:
    """The reads of 2-D or wider parameter buffers indexed by mapped iterators in two or
    more of their dimensions: their tiles span rows, which a copy makes contiguous."""
    block = nest.block.block
    mapped = {_iterator(nest, position) for position in positions}
    found = []
    for index, region in enumerate(block.reads):
        if region.buffer in {w.buffer for w in block.writes}:
            continue
        dims = [item.min for item in region.region]
        if sum(1 for d in dims if d in mapped) >= 2 and all(d in _iterators(nest) for d in dims):
            found.append(index)
    return found


def _is_contiguous(
    trial: PlanBuilder, name: str, mapping: Mapping, nest: Nest, shape: Shape
) -> bool:
    """Each access's tile is contiguous in memory: below its outermost dimension of more
    than one element, every dimension is taken whole."""
    block = nest.block.block
    extents = {
        _iterator(nest, position): extent
        for position, (_, extent) in zip(mapping.positions, shape.loops, strict=True)
    }
    for region in block.reads + block.writes:
        tile = [_tile_extent(item.min, extents) for item in region.region]
        if None in tile:
            return False
        sizes = [s.value if isinstance(s, IntImm) else -1 for s in region.buffer.shape]
        first = next((i for i, t in enumerate(tile) if t != 1), len(tile))
        if any(tile[i] != sizes[i] for i in range(first + 1, len(tile))):
            return False
    return True


def _tile_extent(index: PrimExpr, extents: dict[Var, int]) -> int | None:
    """How many elements of one dimension the intrinsic's tile spans, where the index is
    an iterator (its extent when mapped), `v // e` or `v % e` of a mapped iterator of
    extent e (1 and e); None for anything else that uses a mapped iterator."""
    if isinstance(index, Var) and index in extents:
        return extents[index]
    if isinstance(index, (FloorDiv, FloorMod)) and isinstance(index.a, Var) and index.a in extents:
        if isinstance(index.b, IntImm) and index.b.value == extents[index.a]:
            return 1 if isinstance(index, FloorDiv) else extents[index.a]
        return None
    if any(uses_var(index, var) for var in extents):
        return None
    return 1


def _iterator(nest: Nest, position: int) -> Var:
    """The block iterator the loop at `position` feeds (a plain nest binds it alone)."""
    return _iterators(nest)[position]


def _iterators(nest: Nest) -> list[Var]:
    realize = realize_of(nest.block)
    by_var = {
        value: iv.var
        for iv, value in zip(nest.block.block.iter_vars, realize.iter_values, strict=True)
    }
    return [by_var[loop.loop.loop_var] for loop in nest.loops]


def _prepare(
    builder: PlanBuilder, name: str, shape: Shape, mapping: Mapping
) -> tuple[SRef, list[tuple[SRef, IterType]], SRef]:
    """Copy the reads to pack, split the mapped loops and put their inner parts innermost:
    (the outermost inner loop, the outer loops with their kinds, the block)."""
    block = builder.get_sblock(name)
    for index in mapping.packed:
        _pack(builder, block, index, name, shape, mapping)
    loops = builder.get_loops(block)
    roles = _roles(builder, block, loops)
    inner: list[SRef] = []
    outer: list[tuple[SRef, IterType]] = []
    split: dict[int, tuple[SRef, SRef]] = {}
    for position, (_, extent) in zip(mapping.positions, shape.loops, strict=True):
        head, tail = builder.split(loops[position], [None, extent])
        split[position] = (head, tail)
    for position, loop in enumerate(loops):
        if position in split:
            outer.append((split[position][0], roles[position]))
        else:
            outer.append((loop, roles[position]))
    inner = [split[position][1] for position in mapping.positions]
    builder.run("reorder", ordered_loops=[loop for loop, _ in outer] + inner)
    return inner[0], outer, block


def _roles(builder: PlanBuilder, block: SRef, loops: list[SRef]) -> list[IterType]:
    roles = loop_roles(block, loops)
    return [role if role is not None else IterType.SPATIAL for role in roles]


def _pack(
    builder: PlanBuilder, block: SRef, index: int, name: str, shape: Shape, mapping: Mapping
) -> None:
    """The read `index` copied into a buffer laid out as (outer tiles..., the intrinsic's
    tile), so that each tile the intrinsic reads is contiguous."""
    nest = plain_nest(builder, name)
    assert nest is not None
    extents = {
        _iterator(nest, position): extent
        for position, (_, extent) in zip(mapping.positions, shape.loops, strict=True)
    }
    region = block.block.reads[index]
    names = [f"a{i}" for i in range(len(region.region))]
    heads, tails = [], []
    for var, item in zip(names, region.region, strict=True):
        extent = extents.get(item.min) if isinstance(item.min, Var) else None
        if extent is None:
            heads.append(var)
        else:
            heads.append(f"{var} // {extent}")
            tails.append(f"{var} % {extent}")
    index_map = f"lambda {', '.join(names)}: ({', '.join(heads + tails)})"
    copy = repack(builder, block, index, index_map)
    builder.run("parallel", loop=builder.get_loops(copy)[0])


def _schedule(
    builder: PlanBuilder, name: str, nest: Nest, shape: Shape, mapping: Mapping
) -> list[str]:
    inner, outer, block = _prepare(builder, name, shape, mapping)
    loops = [loop for loop, _ in outer]
    roles = [role for _, role in outer]
    tiles = tile_nest(builder, loops, roles, MAX_INNERMOST)
    top = builder.fuse(tiles.spatial[0])
    builder.run("parallel", loop=top)
    first_reduce = tiles.reduce[0][0] if tiles.reduce and tiles.reduce[0] else inner
    init, _ = builder.run("decompose_reduction", block=block, loop=first_reduce)
    vectorize_innermost(builder, init)
    builder.run("tensorize", target=inner, intrin=shape.name)
    annotate_unroll(builder, top)
    return [name, init.block.name]

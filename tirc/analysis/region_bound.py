"""The region a block touches over the loops between it and a chosen ancestor.

What a cache stage must copy: the block's region, seen through its bindings, relaxed over the
loops from the block's parent up to (not including) the insertion point, and over the thread
loops further up that share the buffer's memory level. Where the block's predicate bounds a
fused iterator (an imperfect split), the bound is taken from the iterator map, as TVM does;
otherwise each dimension is relaxed as an interval, and what of that interval lies outside the
buffer is cut off (no iteration the predicate lets run reaches it). A dimension left unbounded
is the buffer's whole extent. The schedule reads the loops off its tree
(`tirc.schedule.block_region`); these queries take them as IR.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from tirc.analysis.arith import Analyzer
from tirc.analysis.arith.int_set import relax_range
from tirc.analysis.arith.iter_map import detect_iter_map
from tirc.analysis.arith.linear_bound import at_least
from tirc.analysis.storage_scope import GLOBAL, can_relax_under_thread, scope_rank
from tirc.ir import expr as E
from tirc.ir.buffer import BufferRegion, Range
from tirc.ir.expr import IntImm, PrimExpr, Var, is_true
from tirc.ir.functor import walk
from tirc.ir.stmt import For, ForKind, SBlockRealize
from tirc.ir.substitute import substitute


def loop_domains(inner: Iterable[For], outer: Iterable[For], scope: str) -> dict[Var, Range]:
    """Ranges of the `inner` loops (those a region is relaxed over, innermost first), then of
    the thread loops among `outer` (those further up) that a buffer in `scope` is shared
    across (a shared buffer across threads, a warp buffer across threadIdx.x)."""
    domains = {loop.loop_var: Range(loop.min, loop.extent) for loop in inner}
    if scope_rank(scope) != GLOBAL:  # a global buffer is one per kernel: nothing to share
        for loop in outer:
            binding = loop.thread_binding
            if (
                loop.kind is ForKind.THREAD_BINDING
                and binding is not None
                and can_relax_under_thread(scope, binding.thread_tag)
            ):
                domains[loop.loop_var] = Range(loop.min, loop.extent)
    return domains


def _strict_bound(
    region: tuple[Range, ...], domains: Mapping[Var, Range], predicate: PrimExpr
) -> list[Range] | None:
    """Per dimension `base + [0, fused extent)` from the iterator map of the region's
    starts, which takes the predicate's bounds into account; None when it does not apply."""
    extents = [item.extent for item in region if isinstance(item.extent, IntImm)]
    if len(extents) != len(region):
        return None
    found = detect_iter_map([item.min for item in region], domains, predicate)
    if found.errors:
        return None
    analyzer = Analyzer()
    result = []
    for extent, total in zip(extents, found.sums, strict=True):
        if not total.splits:
            result.append(Range(analyzer.simplify(total.base), extent))
            continue
        assert isinstance(total.extent, int)  # constant: detect_iter_map is not symbolic here
        step = total.splits[-1].scale  # the smallest: a sum read as `fused * step`
        covered = (total.extent - 1) * step + extent.value
        result.append(Range(analyzer.simplify(total.base), IntImm(covered, extent.dtype)))
    return result


def estimate_region(
    region: BufferRegion, domains: Mapping[Var, Range], predicate: PrimExpr
) -> BufferRegion:
    """`region` relaxed over `domains`, bounded by `predicate` where that is understood."""
    ranges: list[Range] | None = None
    if not is_true(predicate):
        ranges = _strict_bound(region.region, domains, predicate)
    if ranges is None:
        simplifier = Analyzer()
        ranges = [
            Range(simplifier.simplify(item.min), simplifier.simplify(item.extent))
            if relaxed
            else item
            for item, relaxed in _relaxed(region, domains, Analyzer.over(domains))
        ]
    return BufferRegion(region.buffer, tuple(ranges))


def _relaxed(
    region: BufferRegion, domains: Mapping[Var, Range], analyzer: Analyzer
) -> list[tuple[Range, bool]]:
    """Each dimension relaxed over `domains`, or the buffer's whole extent where that is
    unbounded; with whether it was relaxed."""
    result = []
    for item, extent in zip(region.region, region.buffer.shape, strict=True):
        relaxed = relax_range(item, domains, analyzer)
        if relaxed is None:
            result.append((Range(IntImm(0, extent.dtype), extent), False))
        else:
            result.append((relaxed, True))
    return result


def relax_realized_region(
    region: BufferRegion,
    realize: SBlockRealize,
    domains: Mapping[Var, Range],
    predicate: PrimExpr,
) -> BufferRegion:
    """`region` (of `realize`'s block, over its iterators) with the bindings substituted,
    relaxed over `domains` under `predicate` (over the iterators too), and cut to the buffer."""
    iter_vars = (iv.var for iv in realize.block.iter_vars)
    binding = dict(zip(iter_vars, realize.iter_values, strict=True))
    substituted = substitute(region, binding)
    return clamp_to_buffer(estimate_region(substituted, domains, substitute(predicate, binding)))


def clamp_to_buffer(region: BufferRegion) -> BufferRegion:
    """`region` cut to the buffer's bounds where a dimension provably passes them.

    Relaxing each loop of a split of a split on its own covers iterations the predicate skips:

        i_0 * 5 + (i_1_0 * 3 + i_1_1), i_0 in [0, 205), i_1_0 in [0, 2), i_1_1 in [0, 3)
        relaxes to [0, 1026); in a buffer of 1024 that is [0, 1024)

    The iterations past the buffer are the ones the block's predicate rules out (any other
    would access out of bounds), so the cut loses nothing the block touches."""
    analyzer = Analyzer()
    ranges = []
    changed = False
    for item, extent in zip(region.region, region.buffer.shape, strict=True):
        low: PrimExpr = item.min
        high: PrimExpr = E.Add(item.min, item.extent)
        zero = IntImm(0, item.min.dtype)
        if analyzer.can_prove(E.LT(low, zero)):
            low, changed = zero, True
        if extent.dtype != high.dtype:  # an int64 shape indexed by int32 iterators
            if not isinstance(extent, IntImm):
                ranges.append(Range(low, analyzer.simplify(E.Sub(high, low))))
                continue
            extent = IntImm(extent.value, high.dtype)
        if analyzer.can_prove(E.GT(high, extent)) or _passes_symbolic_extent(high, extent):
            high, changed = extent, True
        ranges.append(Range(low, analyzer.simplify(E.Sub(high, low))))
    if not changed:
        return region
    return BufferRegion(region.buffer, tuple(ranges))


def _passes_symbolic_extent(high: PrimExpr, extent: PrimExpr) -> bool:
    """`high >= extent` for a symbolic extent, proven over the shape variables alone (which
    are never negative), the extent's divisions read whole: a tile count rounded up covers
    the padded length it tiles (`((q * 16 + 63) // 64) * 4 >= q` for `q = (n + 15) // 16`)."""
    if isinstance(extent, IntImm):
        return False
    shape_vars: list[Var] = []
    walk(extent, lambda node: shape_vars.append(node) if isinstance(node, Var) else None)
    used: list[Var] = []
    walk(high, lambda node: used.append(node) if isinstance(node, Var) else None)
    if not used or any(all(var is not known for known in shape_vars) for var in used):
        return False
    divisions: list[PrimExpr] = []
    walk(extent, lambda node: divisions.append(node) if isinstance(node, E.FloorDiv) else None)
    return at_least(high, extent, divisions)


def relax_regions(
    regions: tuple[BufferRegion, ...], domains: dict[Var, Range]
) -> tuple[BufferRegion, ...]:
    """The regions as the variables in `domains` range over them, each dimension an
    interval (the buffer's whole extent where unbounded); no predicate, no cut."""
    analyzer = Analyzer.over(domains)
    return tuple(
        BufferRegion(region.buffer, tuple(item for item, _ in _relaxed(region, domains, analyzer)))
        for region in regions
    )

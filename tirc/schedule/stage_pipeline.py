"""The stage-pipeline precondition of the primitives that move or merge computation or add a
stage TVM 0.27 places by dependences (compute_at, reverse_compute_at, compute_inline,
reverse_compute_inline, rfactor, reindex, reindex_cache_read/write, read_at, write_at,
pad_einsum).

A scope is a stage pipeline when no block overwrites what an earlier one reads (no
write-after-read dependence) and every block's producers cover what it reads from them: the
region a consumer may read, relaxed over the loops below its lowest common ancestor with the
producers, lies provably inside what those producers surely write below it (TVM 0.27's
region-cover rule: a producer whose written region has a symbolic extent, or whose starts are
not affine in its loops, surely writes nothing).
"""

from __future__ import annotations

from collections.abc import Mapping

from tirc.analysis.arith import Analyzer
from tirc.analysis.arith.iter_map import detect_iter_map
from tirc.ir import expr as E
from tirc.ir.arith import arithmetic, match_types
from tirc.ir.buffer import BufferRegion, Range
from tirc.ir.expr import IntImm, PrimExpr, Var
from tirc.ir.functor import walk
from tirc.ir.substitute import substitute
from tirc.schedule.block_region import loop_domains, relax_block_region
from tirc.schedule.errors import ScheduleError
from tirc.schedule.properties import realize_of
from tirc.schedule.schedule import describe
from tirc.schedule.scope import BlockScope, DepKind
from tirc.schedule.sref import SRef
from tirc.schedule.state import ScheduleState

Bounds = tuple[PrimExpr, PrimExpr]  # first and last index, inclusive
Loops = Mapping[Var, Range]
NOTHING: list[Bounds] = []  # a producer that surely writes nothing


def stage_pipeline_root(state: ScheduleState, block: SRef) -> SRef:
    """The block's scope root, which must be a stage pipeline."""
    root = block.enclosing_block()
    if root is None:
        raise ScheduleError("the primitive does not operate on the root block", block)
    scope = state.scope(root)
    for deps in scope.deps_by_dst.values():
        for dep in deps:
            if dep.kind is DepKind.WAR:
                raise ScheduleError(
                    f"the scope {describe(root)} is not a stage pipeline: {describe(dep.dst)} "
                    f"overwrites what {describe(dep.src)} reads (a write-after-read dependence)",
                    root,
                )
    _check_region_cover(scope, root)
    return root


def _check_region_cover(scope: BlockScope, root: SRef) -> None:
    """Each consumer's reads covered by its producers, one common ancestor at a time: the
    producers whose lowest common ancestor with the consumer is that node, their written
    regions relaxed up to it as a lower bound (what they surely write), must together cover
    the consumer's read relaxed up to it as an upper bound (what it may read)."""
    for consumer in scope.blocks:
        path = [consumer, *consumer.ancestors()]
        path = path[: next(i for i, node in enumerate(path) if node is root) + 1]
        at_level: dict[int, list[SRef]] = {}
        for dep in scope.deps_to(consumer):
            if dep.kind is DepKind.RAW:
                lca = _lowest_common_ancestor(dep.src, path)
                at_level.setdefault(id(lca), []).append(dep.src)
        for lca in path:
            producers = _unique(at_level.get(id(lca), []))
            for read in consumer.block.reads:
                written = [
                    (producer, write)
                    for producer in producers
                    for write in producer.block.writes
                    if write.buffer is read.buffer
                ]
                if written:
                    _check_cover(read, consumer, written, lca, root)


def _unique(srefs: list[SRef]) -> list[SRef]:
    return list({id(sref): sref for sref in srefs}.values())


def _lowest_common_ancestor(producer: SRef, path: list[SRef]) -> SRef:
    on_path = {id(node) for node in path}
    node: SRef | None = producer
    while node is not None and id(node) not in on_path:
        node = node.parent
    assert node is not None, "a producer outside the consumer's scope"
    return node


def _check_cover(
    read: BufferRegion,
    consumer: SRef,
    written: list[tuple[SRef, BufferRegion]],
    lca: SRef,
    root: SRef,
) -> None:
    """Refuses where the cover fails: every producer surely writes nothing (a region of
    symbolic extent), the bounds show a gap, or bounds over loop variables alone do not
    provably cover. Where tirc's iterator maps cannot bound a producer's region, or bounds
    over shape variables compare neither way (tirc's arithmetic may know less than TVM's
    there), the cover is let through."""
    bounds = [_surely_written(write, producer, lca) for producer, write in written]
    if any(bound is None for bound in bounds):
        return
    known = [bound for bound in bounds if bound is not None and bound is not NOTHING]
    consumed = _maybe_read(read, consumer, lca)
    outer = [node.loop for node in consumer.ancestors() if node.is_loop]
    loops = {loop.loop_var for loop in outer}
    analyzer = Analyzer()
    # TVM's analyzer knows the range of every loop around the consumer, those left free
    # above the common ancestor included: a unit loop's variable is 0 there
    for loop in outer:
        analyzer.bind(loop.loop_var, Range(loop.min, loop.extent))
    for dim, want in enumerate(consumed):
        extent = read.buffer.shape[dim]
        want = _clamp(want, extent, analyzer)
        produced = _union_lower_bound([bound[dim] for bound in known], analyzer)
        if produced is not None:
            have = _clamp(produced, extent, analyzer)
            covered = analyzer.can_prove(
                E.LE(*match_types(have[0], want[0]))
            ) and analyzer.can_prove(E.LE(*match_types(want[1], have[1])))
            gap = analyzer.can_prove(E.GT(*match_types(have[0], want[0]))) or analyzer.can_prove(
                E.GT(*match_types(want[1], have[1]))
            )
            if covered or not (gap or _over_loops((*want, *have), loops)):
                continue
            written_text = f"only [{_text(have[0])}, {_text(have[1])}]"
        else:
            written_text = "nothing it can bound (its region has a symbolic extent)"
        producer = written[0][0]
        raise ScheduleError(
            f"the scope {describe(root)} is not a stage pipeline: {describe(consumer)} reads "
            f"[{_text(want[0])}, {_text(want[1])}] of {read.buffer.name} along dimension "
            f"{dim}, but its producer {describe(producer)} surely writes {written_text} there "
            "(the producer's region does not cover the consumer's)",
            consumer,
            producer,
        )


def _over_loops(bounds: tuple[PrimExpr, ...], loops: set[Var]) -> bool:
    """Whether every variable in `bounds` is one of `loops`."""
    free: list[Var] = []
    walk(bounds, lambda node: free.append(node) if isinstance(node, Var) else None)
    return all(var in loops for var in free)


def _text(bound: PrimExpr) -> str:
    return str(bound.value) if isinstance(bound, IntImm) else "a symbolic bound"


def _unbound(region: BufferRegion, block: SRef, lca: SRef) -> tuple[BufferRegion, Loops, PrimExpr]:
    """The region over the loops (bindings substituted), the loops below `lca` it is relaxed
    over, and the block's predicate."""
    realize = realize_of(block)
    iter_vars = (iv.var for iv in block.block.iter_vars)
    binding = dict(zip(iter_vars, realize.iter_values, strict=True))
    domains = loop_domains(block.parent, lca, region.buffer.scope)
    return substitute(region, binding), domains, realize.predicate


def _maybe_read(read: BufferRegion, consumer: SRef, lca: SRef) -> list[Bounds]:
    """Per dimension bounds on what `consumer` may read of `read` below `lca`: from the
    iterator map of the start where it is affine, else the start's interval relaxed."""
    region, domains, predicate = _unbound(read, consumer, lca)
    relaxed = relax_block_region(read, consumer, lca).region
    analyzer = Analyzer()
    result = []
    for item, loose in zip(region.region, relaxed, strict=True):
        span = _span(item, domains, predicate, analyzer)
        if span is None:
            last = arithmetic("-", arithmetic("+", loose.min, loose.extent), 1)
            span = loose.min, analyzer.simplify(last)
        result.append(span)
    return result


def _surely_written(write: BufferRegion, producer: SRef, lca: SRef) -> list[Bounds] | None:
    """Per dimension bounds on what `producer` surely writes of `write` as the loops below
    `lca` run, from the iterator map of the region's starts under the block's predicate;
    NOTHING where an extent is symbolic (TVM 0.27 then bounds nothing), None where tirc's
    iterator maps cannot read a start."""
    region, domains, predicate = _unbound(write, producer, lca)
    if any(not isinstance(item.extent, IntImm) for item in region.region):
        return NOTHING
    analyzer = Analyzer()
    bounds = []
    for item in region.region:
        span = _span(item, domains, predicate, analyzer)
        if span is None:
            return None
        bounds.append(span)
    return bounds


def _span(item: Range, domains: Loops, predicate: PrimExpr, analyzer: Analyzer) -> Bounds | None:
    """First and last index of `[min, min + extent)` as the loops run, where the start is
    affine in them (a negated start read as its negation) and the extent at least the step
    between starts; None otherwise."""
    zero = IntImm(0, item.min.dtype)
    found = _index_span(item.min, domains, predicate)
    if found is None:
        negated = _index_span(arithmetic("-", zero, item.min), domains, predicate)
        if negated is None:
            return None
        found = arithmetic("-", zero, negated[1]), arithmetic("-", zero, negated[0]), 1
    low, high, step = found
    if step > 1 and not analyzer.can_prove(E.GE(item.extent, IntImm(step, item.extent.dtype))):
        return None
    high = arithmetic("-", arithmetic("+", high, item.extent), 1)
    return analyzer.simplify(low), analyzer.simplify(high)


def _index_span(
    index: PrimExpr, domains: Loops, predicate: PrimExpr
) -> tuple[PrimExpr, PrimExpr, int] | None:
    """(first, last, step) of the values `index` takes as the loops in `domains` run, from
    its iterator map; None when it is not affine with a positive step."""
    found = detect_iter_map([index], domains, predicate, symbolic=True)
    if found.errors:
        return None
    total = found.sums[0]
    if not total.splits:
        return total.base, total.base, 1
    scale = total.splits[-1].scale
    if scale <= 0:
        return None
    dtype = total.base.dtype
    count = total.extent if isinstance(total.extent, PrimExpr) else IntImm(total.extent, dtype)
    span = E.Mul(E.Sub(count, IntImm(1, dtype)), IntImm(scale, dtype))
    return total.base, E.Add(total.base, span), scale


def _union_lower_bound(items: list[Bounds], analyzer: Analyzer) -> Bounds | None:
    """Inclusive [low, high] inside the union of the intervals: the first, widened by each
    later one that provably touches or overlaps it."""
    if not items:
        return None
    low, high = items[0]
    for first, last in items[1:]:
        touches = E.LE(*match_types(first, arithmetic("+", high, 1)))
        touched = E.LE(*match_types(low, arithmetic("+", last, 1)))
        if analyzer.can_prove(touches) and analyzer.can_prove(touched):
            low = analyzer.simplify(E.Min(*match_types(low, first)))
            high = analyzer.simplify(E.Max(*match_types(high, last)))
    return low, high


def _clamp(bounds: Bounds, extent: PrimExpr, analyzer: Analyzer) -> Bounds:
    """[low, high] intersected with the buffer's [0, extent - 1], as TVM intersects both
    regions with the buffer: cut where it provably passes them, kept where it provably does
    not, else `max(low, 0)` and `min(high, extent - 1)` (a read at `i_0 * 16 + i_1 * 8 + 7`
    over a buffer of 24 is covered by a producer of all 24)."""
    low, high = bounds
    zero = IntImm(0, low.dtype)
    if analyzer.can_prove(E.LT(low, zero)):
        low = zero
    elif not analyzer.can_prove(E.GE(low, zero)):
        low = analyzer.simplify(E.Max(low, zero))
    last = analyzer.simplify(arithmetic("-", extent, 1))
    if analyzer.can_prove(E.GT(*match_types(high, last))):
        high = last
    elif not analyzer.can_prove(E.LE(*match_types(high, last))):
        high = analyzer.simplify(E.Min(*match_types(high, last)))
    return low, high

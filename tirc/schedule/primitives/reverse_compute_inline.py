"""reverse_compute_inline: a consumer block disappears into its only producer, which then
stores the consumer's result directly.

The consumer must be complete, unpredicated, read one buffer produced in its scope through
indices that are a bijective affine map of its iterators, and its producer complete, with
no other consumer. Where the producer computes more than the consumer needs, the producer
gets a predicate (its own conjuncts that the new one implies are dropped: `i < 60` gives way
to `i < 58`). A producer that reads the element it updates (an update under T.init with no
reduction iterator) takes a consumer that copies the element as it is, and then reads the
consumer's output; another consumer is refused (TVM accepts it and computes something else).
A producer with another consumer is refused too: TVM 0.27 inlines into it and drops the
buffer the other consumer still reads.
The scope must be a stage pipeline (no block overwrites what an earlier one
reads; each producer writes all that its consumers read from it), and no block may bind a
subregion of the buffer with T.match_buffer.

    B[vi, vj] = A[vi, vj] * 2.0            →   C[vj, vi] = A[vi, vj] * 2.0 + 1.0
    C[vi, vj] = B[vj, vi] + 1.0                (block "B", the consumer gone)
"""

from __future__ import annotations

import dataclasses
from typing import Literal, TypeGuard

from tirc.analysis.arith import Analyzer
from tirc.analysis.arith.bound import Bound
from tirc.analysis.arith.int_set import relax
from tirc.analysis.arith.iter_map import Level, detect_iter_map
from tirc.analysis.arith.iter_map_inverse import inverse_iter_map
from tirc.analysis.block_var_domain import fold
from tirc.analysis.symbolic_dims import is_constant, lone_symbolic_dims
from tirc.ir import expr as E
from tirc.ir.buffer import Buffer, Range
from tirc.ir.expr import BufferLoad, IntImm, PrimExpr, Var
from tirc.ir.functor import walk
from tirc.ir.stmt import BufferStore, For, IterType, SBlock, SBlockRealize, Stmt
from tirc.ir.structural import expr_key, find_difference
from tirc.ir.substitute import Substituter, substitute
from tirc.schedule.block_removal import plan_leaf_removal
from tirc.schedule.errors import ScheduleError
from tirc.schedule.inline import ScopeInliner, data_buffers
from tirc.schedule.primitives import primitive
from tirc.schedule.primitives.compute_inline import check_no_init, check_not_output
from tirc.schedule.properties import not_complete, realize_of
from tirc.schedule.rebind import conjoin
from tirc.schedule.schedule import Schedule, describe
from tirc.schedule.signature import Kind, Param, Signature
from tirc.schedule.sref import SRef
from tirc.schedule.stage_pipeline import stage_pipeline_root
from tirc.schedule.state import ScheduleState


@primitive(
    Signature(
        "reverse_compute_inline",
        "ReverseComputeInline",
        inputs=(Param("block", Kind.BLOCK),),
        doc="Inline a consumer block into its only producer.",
    )
)
def reverse_compute_inline(sch: Schedule, block: SRef) -> None:
    state = sch.state_owning(block)
    check_no_init(block)
    scope_root = stage_pipeline_root(state, block)
    scope = state.scope(scope_root)
    buffer = _single_produced_read(block, scope.writers)
    reason = not_complete(scope.writers, block)
    if reason is not None:
        raise ScheduleError(f"{describe(block)} is not a complete block: {reason}", block)
    producer = _single_producer(state, block, scope_root)
    check_not_output(producer, scope_root)
    plan = _plan(block, producer, buffer)
    removal = plan_leaf_removal(block)
    source, target = removal.source.node, removal.target
    inliner = _Inliner(plan, scope_root.block, source, target, state, scope_root)
    new_root = inliner.visit(scope_root.block)
    if inliner.has_opaque_access:
        raise ScheduleError(
            f"the buffer {buffer.name} is accessed opaquely (through its data pointer, or "
            f"a subregion bound by T.match_buffer) in {describe(scope_root)}, so its stores "
            "cannot be replaced",
            scope_root,
        )
    state.replace(scope_root, new_root, inliner.reuse)


def _single_produced_read(block: SRef, writers: dict[int, list[SRef]]) -> Buffer:
    """The one buffer the block reads that some block of its scope writes."""
    reads = block.block.reads
    produced = {id(r.buffer): r.buffer for r in reads if writers.get(id(r.buffer))}
    if len(produced) != 1:
        raise ScheduleError(
            f"{describe(block)} must read exactly one buffer produced in its scope, but it "
            f"reads {len(reads)} region(s) of which {len(produced)} are produced there",
            block,
        )
    return next(iter(produced.values()))


def _single_producer(state: ScheduleState, block: SRef, scope_root: SRef) -> SRef:
    scope = state.scope(scope_root)
    deps = scope.deps_to(block)
    if len(deps) == 1 and deps[0].kind.value == "RAW":
        producer = deps[0].src
        if not_complete(scope.writers, producer) is None and len(scope.deps_from(producer)) == 1:
            return producer
    raise ScheduleError(
        f"{describe(block)} must have a single producer block, which must be a complete "
        "block with no other consumer",
        block,
    )


@dataclasses.dataclass
class _Plan:
    buffer: Buffer
    consumer: SBlock
    store: BufferStore  # the consumer's store
    mapping: dict[Var, PrimExpr]  # consumer iterators over the producer's store indices
    producer: SBlock  # the block that stores the buffer: the producer, or a block inside it
    guard: PrimExpr | None  # over that block's iterators: where it computes too much


def _plan(block: SRef, producer: SRef, buffer: Buffer) -> _Plan:
    def refuse(why: str) -> ScheduleError:
        return ScheduleError(
            f"cannot inline {describe(block)} into {describe(producer)}: {why}", block
        )

    consumer = block.block
    realize = realize_of(block)
    if not (isinstance(realize.predicate, IntImm) and realize.predicate.value):
        raise refuse("the consumer has a predicate (T.where)")
    store = consumer.body
    if not isinstance(store, BufferStore):
        raise refuse("the consumer's body is not a single BufferStore")
    loads = _loads_of(store, buffer)
    if not loads:
        raise refuse(f"the consumer's store does not load {buffer.name}")
    indices = loads[0].indices
    if any(find_difference(load.indices, indices) is not None for load in loads[1:]):
        raise refuse(f"the consumer loads {buffer.name} at different indices")
    found = _stores_into(producer.block, buffer)
    if len(found) != 1:
        raise refuse(f"the producer does not store {buffer.name} exactly once")
    store_block, producer_store = found[0]
    if not _copies_updated_element(store, producer_store, buffer):
        raise refuse(
            f"the producer reads the {buffer.name} element it updates, and the consumer does "
            "not copy that element as it is, so the update would read another value"
        )
    inverse = _invert_indices(consumer, indices, producer_store.indices)
    if inverse is None:
        raise refuse(
            f"the indices of {buffer.name} are not a bijective affine map of the consumer's "
            "iterators"
        )
    mapping: dict[Var, PrimExpr] = {}
    for iv in consumer.iter_vars:
        if iv.var in inverse:
            mapping[iv.var] = inverse[iv.var]
        elif _is_unit(iv.dom):
            mapping[iv.var] = iv.dom.min
        else:
            raise refuse(f"the consumer's iterator {iv.var.name} does not index {buffer.name}")
    guard = _guard(consumer, store_block, mapping)
    if guard is False:
        raise refuse("the producer does not compute everything the consumer reads")
    return _Plan(buffer, consumer, store, mapping, store_block, guard)


def _copies_updated_element(
    store: BufferStore, producer_store: BufferStore, buffer: Buffer
) -> bool:
    """True unless the producer's store reads `buffer` (its own element: other loads are
    refused) and the consumer's `store` is not a plain copy of that element. TVM moves such
    reads to the consumer's output even where the consumer computes on the element, which
    changes the result (`B = B + a` then `C = B + 1` becomes `C = C + a + 1`)."""
    loads = _loads_of(producer_store, buffer)
    if not loads:
        return True
    copies = isinstance(store.value, BufferLoad) and store.value.buffer is buffer
    return copies and all(
        find_difference(load.indices, producer_store.indices) is None for load in loads
    )


def _stores_into(block: SBlock, buffer: Buffer) -> list[tuple[SBlock, BufferStore]]:
    """The stores into `buffer` in the block's body, each with the innermost block around it
    (a blockized producer stores from its inner block)."""
    found: list[tuple[SBlock, BufferStore]] = []

    def look(node: object, owner: SBlock) -> None:
        if isinstance(node, BufferStore):
            if node.buffer is buffer:
                found.append((owner, node))
            return
        if isinstance(node, SBlock):
            owner = node
        for name in ("body", "stmts", "block", "then_case", "else_case"):
            child = getattr(node, name, None)
            if isinstance(child, tuple):
                for item in child:
                    look(item, owner)
            elif child is not None:
                look(child, owner)

    look(block.body, block)
    return found


def _invert_indices(
    consumer: SBlock, indices: tuple[PrimExpr, ...], values: tuple[PrimExpr, ...]
) -> dict[Var, PrimExpr] | None:
    """The consumer's iterators in terms of the producer's store indices `values`, where the
    consumer's `indices` are a bijective affine map of them (dimensions read by a lone
    iterator of symbolic extent are inverted directly); None when they are not."""
    domains = {iv.var: iv.dom for iv in consumer.iter_vars if iv.dom is not None}
    lone = lone_symbolic_dims(list(indices), domains)
    if lone is None:
        return None
    rest = [dim for dim in range(len(indices)) if dim not in lone]
    constant = {var: dom for var, dom in domains.items() if is_constant(dom)}
    detected = detect_iter_map([indices[dim] for dim in rest], constant, level=Level.NO_CHECK)
    if detected.errors:
        return None
    inverse = inverse_iter_map(detected.sums, [values[dim] for dim in rest])
    if inverse is None:
        return None
    for dim, (var, base) in lone.items():
        inverse[var] = fold("-", values[dim], base)
    return inverse


def _is_unit(dom: Range | None) -> TypeGuard[Range]:
    return dom is not None and E.is_const_int(dom.extent, 1) and isinstance(dom.min, IntImm)


def _loads_of(stmt: Stmt, buffer: Buffer) -> list[BufferLoad]:
    found: list[BufferLoad] = []

    def look(node: object) -> None:
        if isinstance(node, BufferLoad) and node.buffer is buffer:
            found.append(node)

    walk(stmt, look)
    return found


def _guard(
    consumer: SBlock, producer: SBlock, mapping: dict[Var, PrimExpr]
) -> PrimExpr | None | Literal[False]:
    """Where the producer's iterations fall inside the consumer's domain, as a condition on
    the producer's iterators: None when always, False when the producer misses some."""
    domains = {iv.var: iv.dom for iv in producer.iter_vars if iv.dom is not None}
    analyzer = Analyzer.over(domains)
    guard: PrimExpr | None = None
    for iv in consumer.iter_vars:
        if (
            iv.dom is None
            or iv.iter_type is not IterType.SPATIAL
            and iv.iter_type is not IterType.REDUCE
        ):
            continue
        value = mapping[iv.var]
        low, high = iv.dom.min, E.Add(iv.dom.min, iv.dom.extent)
        interval = relax(value, domains, analyzer)
        if interval.min is None or interval.max is None:
            return False
        if analyzer.can_prove(E.GT(interval.min, low)) or analyzer.can_prove(
            E.LT(interval.max, E.Sub(high, IntImm(1, high.dtype)))
        ):
            return False
        # each end holds where the analyzer proves it of the value, or of the value's range
        # (which also settles symbolic ends: `v < n` for v in [0, n - 1])
        ends = (
            (E.LE(low, value), E.LE(low, interval.min)),
            (E.LT(value, high), E.LT(interval.max, high)),
        )
        for condition, of_range in ends:
            if not analyzer.can_prove(condition) and not analyzer.can_prove(of_range):
                guard = condition if guard is None else E.And(guard, condition)
    return guard


class _Inliner(ScopeInliner):
    def __init__(
        self,
        plan: _Plan,
        root: SBlock,
        source: For | SBlock,
        target: For | SBlock,
        state: ScheduleState,
        scope_root: SRef,
    ):
        buffers = data_buffers(state.func, scope_root)
        super().__init__(plan.buffer, root, source, target, buffers)
        self.plan = plan
        self.domains: dict[Var, Range] = {}

    def visit_For(self, node: For) -> For:
        self.domains[node.loop_var] = Range(node.min, node.extent)
        result = super().visit_For(node)
        del self.domains[node.loop_var]
        return result

    def visit_SBlockRealize(self, node: SBlockRealize) -> SBlockRealize:
        new: SBlockRealize = self.generic_visit(node)
        guard = self.plan.guard
        if node.block is not self.plan.producer or guard is None:
            return new
        bindings = {
            iv.var: value for iv, value in zip(node.block.iter_vars, node.iter_values, strict=True)
        }
        analyzer = Analyzer.over(self.domains)
        condition = _constants_left(analyzer.simplify(substitute(guard, bindings)))
        kept = _not_implied(new.predicate, condition, analyzer)
        return dataclasses.replace(new, predicate=conjoin(kept, condition))

    def visit_BufferStore(self, node: BufferStore) -> Stmt:
        store: BufferStore = self.generic_visit(node)
        if store.buffer is not self.buffer:
            return store
        new: BufferStore = _ConsumerRewrite(self.plan, store.value).visit(self.plan.store)
        if not _loads_of(store, self.buffer):
            return new
        return _self_reads_moved(self.plan, store, new)


def _self_reads_moved(plan: _Plan, store: BufferStore, new: BufferStore) -> BufferStore:
    """A producer that reads the element it stores (an update under T.init whose block has no
    reduction iterator) reads it where the consumer, a plain copy (_check_self_reads), now
    stores it, as TVM rewrites it."""
    moved = BufferLoad(new.buffer, new.indices)
    return dataclasses.replace(new, value=_LoadsReplaced(plan.buffer, moved).visit(new.value))


class _LoadsReplaced(Substituter):
    def __init__(self, buffer: Buffer, load: BufferLoad):
        super().__init__({})
        self.buffer, self.load = buffer, load

    def visit_BufferLoad(self, node: BufferLoad) -> PrimExpr:
        return self.load if node.buffer is self.buffer else self.generic_visit(node)


def _not_implied(predicate: PrimExpr, guard: PrimExpr, analyzer: Analyzer) -> PrimExpr:
    """The conjuncts of the producer's `predicate` that the new `guard` does not imply, as
    TVM keeps them: `i < 60` goes where the consumer needs only `i < 58`. The guard's
    constant bounds of loop variables (`i < 58`, `1 <= i`) narrow their ranges in `analyzer`."""
    for bound in _conjuncts(guard):
        if isinstance(bound, E.LT) and isinstance(bound.a, Var) and isinstance(bound.b, IntImm):
            narrowed = Bound(None, bound.b.value - 1)
        elif isinstance(bound, E.LE) and isinstance(bound.b, Var) and isinstance(bound.a, IntImm):
            narrowed = Bound(bound.a.value, None)
        else:
            continue
        var = bound.a if isinstance(bound.a, Var) else bound.b
        assert isinstance(var, Var)
        analyzer.bind(var, analyzer.const_bound(var).intersect(narrowed))
    # a conjunct that reads as one of the guard's is implied (the guard is not a fact the
    # analyzer knows: `a * 16 + f % 512 // 256 < 127` is the guard's `a * 16 + f // 256 < 127`
    # under f < 512)
    stated = {expr_key(bound) for bound in _conjuncts(guard)}
    kept: PrimExpr = IntImm(1, predicate.dtype)
    for conjunct in _conjuncts(predicate):
        if analyzer.can_prove(conjunct) or expr_key(analyzer.simplify(conjunct)) in stated:
            continue
        kept = conjoin(kept, conjunct)
    return kept


def _conjuncts(condition: PrimExpr) -> list[PrimExpr]:
    if isinstance(condition, E.And):
        return _conjuncts(condition.a) + _conjuncts(condition.b)
    return [condition]


def _constants_left(condition: PrimExpr) -> PrimExpr:
    """`0 <= i - 1` as `1 <= i`: a lower bound keeps its constant on the left (the form
    TVM's simplifier leaves, so that results compare equal)."""
    if isinstance(condition, E.And):
        return E.And(_constants_left(condition.a), _constants_left(condition.b))
    if isinstance(condition, E.LE) and isinstance(condition.a, IntImm):
        offset = condition.b
        if isinstance(offset, (E.Add, E.Sub)) and isinstance(offset.b, IntImm):
            shift = offset.b.value if isinstance(offset, E.Sub) else -offset.b.value
            return E.LE(IntImm(condition.a.value + shift, condition.a.dtype), offset.a)
    return condition


class _ConsumerRewrite(Substituter):
    """The consumer's store over the producer's indices, its loads of the buffer replaced by
    the producer's value."""

    def __init__(self, plan: _Plan, value: PrimExpr):
        super().__init__(plan.mapping)
        self.plan, self.value = plan, value

    def visit_BufferLoad(self, node: BufferLoad) -> PrimExpr:
        if node.buffer is self.plan.buffer:
            return self.value
        return self.generic_visit(node)

"""fuse_reduction_epilogue: a sum reduction takes over the elementwise block that consumes
it, writing the epilogue's output directly; a bias folds into the reduction's init and a
min/max clipping (ReLU, clamp) wraps every update.

The reduction must be `T[v] = T[v] + x` with init `T[v] = 0`; the epilogue a complete,
unpredicated block in the same scope that stores `min/max(...(T[v] [+ bias]))` (each
min/max's other operand free of T), loading T once, at distinct iterators covering the
reduction's domain. As in TVM, the clipping is applied at each accumulation step (exact
when the partial sums stay within its bounds) and T keeps its allocation.

    T[vi, vj] = 0 (init)                        D[vi, vj] = C[vi, vj]            (init)
    T[vi, vj] = T[vi, vj] + A[vi, vk] ...   →   D[vi, vj] = D[vi, vj] + A[vi, vk] ...
    D[vi, vj] = T[vi, vj] + C[vi, vj]           (block "epilogue" gone)
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from tirc.analysis.arith import Analyzer
from tirc.ir.arith import arithmetic, make_const
from tirc.ir.buffer import Buffer, BufferRegion, Range
from tirc.ir.expr import Add, BufferLoad, IntImm, Max, Min, PrimExpr, Var
from tirc.ir.functor import Mutator, walk
from tirc.ir.node import Node
from tirc.ir.stmt import BufferStore, For, IterType, SBlock
from tirc.ir.structural import expr_key
from tirc.ir.substitute import substitute
from tirc.schedule.block_removal import plan_leaf_removal
from tirc.schedule.errors import ScheduleError
from tirc.schedule.primitives import primitive
from tirc.schedule.properties import not_complete, realize_of
from tirc.schedule.schedule import Schedule, describe
from tirc.schedule.signature import Kind, Param, Signature
from tirc.schedule.sref import SRef

# An activation step: the min/max operator and the operand that does not hold the result.
_Clip = tuple[str, PrimExpr, bool]  # (op, other operand, other operand on the left)


@primitive(
    Signature(
        "fuse_reduction_epilogue",
        "FuseReductionEpilogue",
        inputs=(Param("reduction_block", Kind.BLOCK), Param("epilogue_block", Kind.BLOCK)),
        doc="Fuse an elementwise epilogue (bias, clipping) into the sum reduction it reads.",
    )
)
def fuse_reduction_epilogue(sch: Schedule, reduction_block: SRef, epilogue_block: SRef) -> None:
    state = sch.state_owning(reduction_block)
    scope_root = reduction_block.enclosing_block()
    if scope_root is None or epilogue_block.enclosing_block() is not scope_root:
        raise ScheduleError(
            f"{describe(reduction_block)} and {describe(epilogue_block)} are not in one scope",
            reduction_block,
            epilogue_block,
        )
    reduction = _sum_reduction(reduction_block)
    temp = reduction.buffer
    writers = state.scope(scope_root).writers
    _check_epilogue_block(epilogue_block, writers, temp)
    epilogue = _epilogue(epilogue_block, reduction_block, temp)
    mapping = _iterator_mapping(epilogue_block, reduction_block, epilogue.load, reduction.store)
    new_block = _fused_block(reduction_block.block, reduction, epilogue, mapping)
    removal = plan_leaf_removal(epilogue_block)
    source, target = removal.source.node, removal.target
    new_root = _Rewrite(source, target, reduction_block.block, new_block).visit(scope_root.block)
    state.replace(scope_root, new_root, {reduction_block.block: new_block})


@dataclasses.dataclass(frozen=True)
class _Reduction:
    store: BufferStore  # T[v] = T[v] + x
    update: PrimExpr  # x
    update_on_left: bool  # written x + T[v]

    @property
    def buffer(self) -> Buffer:
        return self.store.buffer


@dataclasses.dataclass(frozen=True)
class _Epilogue:
    store: BufferStore  # D[w] = clip(T[u] + bias)
    load: BufferLoad  # T[u]
    bias: PrimExpr | None
    bias_on_left: bool
    clips: tuple[_Clip, ...]  # outermost first
    reads: tuple[BufferRegion, ...]  # the epilogue block's
    writes: tuple[BufferRegion, ...]


def _sum_reduction(block: SRef) -> _Reduction:
    def refuse(why: str) -> ScheduleError:
        return ScheduleError(
            f"{describe(block)} is not a sum reduction `T[...] = T[...] + x` with init "
            f"`T[...] = 0`: {why}",
            block,
        )

    node = block.block
    if node.init is None or not any(iv.iter_type is IterType.REDUCE for iv in node.iter_vars):
        raise refuse("it has no init or no reduction iterator")
    store, init = node.body, node.init
    if not isinstance(store, BufferStore) or not isinstance(init, BufferStore):
        raise refuse("its body or init is not a single BufferStore")
    if init.buffer is not store.buffer or expr_key(init.indices) != expr_key(store.indices):
        raise refuse("its init stores another element than its body")
    if not _is_zero(init.value):
        raise refuse("its init value is not 0")
    value = store.value
    if isinstance(value, Add):
        for accumulated, update, on_left in ((value.a, value.b, False), (value.b, value.a, True)):
            if _is_element(accumulated, store) and not _loads(update, store.buffer):
                return _Reduction(store, update, on_left)
    raise refuse("its body does not add a value to the element it stores")


def _is_zero(value: PrimExpr) -> bool:
    number = getattr(value, "value", None)
    return isinstance(number, (int, float)) and number == 0


def _is_element(expr: PrimExpr, store: BufferStore) -> bool:
    return (
        isinstance(expr, BufferLoad)
        and expr.buffer is store.buffer
        and expr_key(expr.indices) == expr_key(store.indices)
    )


def _loads(expr: object, buffer: Buffer) -> list[BufferLoad]:
    found: list[BufferLoad] = []
    walk(
        expr,
        lambda n: found.append(n) if isinstance(n, BufferLoad) and n.buffer is buffer else None,
    )
    return found


def _check_epilogue_block(block: SRef, writers: dict[int, list[SRef]], temp: Buffer) -> None:
    node = block.block
    if node.init is not None:
        raise ScheduleError(f"the epilogue {describe(block)} is a reduction block", block)
    reason = not_complete(writers, block)
    if reason is not None:
        raise ScheduleError(f"the epilogue {describe(block)} is not complete: {reason}", block)
    predicate = realize_of(block).predicate
    if not (isinstance(predicate, IntImm) and predicate.value):
        raise ScheduleError(f"the epilogue {describe(block)} has a predicate (T.where)", block)
    if not any(region.buffer is temp for region in node.reads):
        raise ScheduleError(
            f"the epilogue {describe(block)} does not read {temp.name}, which the reduction writes",
            block,
        )


def _epilogue(block: SRef, reduction: SRef, temp: Buffer) -> _Epilogue:
    def refuse(why: str) -> ScheduleError:
        return ScheduleError(
            f"cannot fuse the epilogue {describe(block)} into {describe(reduction)}: {why}",
            block,
            reduction,
        )

    store = block.block.body
    if not isinstance(store, BufferStore):
        raise refuse("its body is not a single BufferStore")
    if store.buffer is temp:
        raise refuse(f"it writes {temp.name} itself")
    loads = _loads(store.value, temp)
    if len(loads) != 1:
        raise refuse(f"it must load {temp.name} exactly once, but loads it {len(loads)} times")
    if any(region.buffer is store.buffer for region in reduction.block.reads):
        raise refuse(f"the reduction reads {store.buffer.name}, which the epilogue writes")
    clips: list[_Clip] = []
    expr = store.value
    while isinstance(expr, (Min, Max)):
        op = "min" if isinstance(expr, Min) else "max"
        if _loads(expr.a, temp):
            clips.append((op, expr.b, False))
            expr = expr.a
        else:
            clips.append((op, expr.a, True))
            expr = expr.b
    regions = (block.block.reads, block.block.writes)
    if expr is loads[0]:
        return _Epilogue(store, loads[0], None, False, tuple(clips), *regions)
    if isinstance(expr, Add) and (expr.a is loads[0] or expr.b is loads[0]):
        on_left = expr.b is loads[0]
        bias = expr.a if on_left else expr.b
        return _Epilogue(store, loads[0], bias, on_left, tuple(clips), *regions)
    raise refuse(
        f"its value must be {temp.name}[...] or {temp.name}[...] + bias, possibly clipped by "
        "T.min / T.max"
    )


def _iterator_mapping(
    epilogue: SRef, reduction: SRef, load: BufferLoad, store: BufferStore
) -> dict[Var, PrimExpr]:
    """The epilogue's iterators over the reduction's: T[u] (epilogue) is T[v] (reduction)."""

    def refuse(why: str) -> ScheduleError:
        return ScheduleError(
            f"cannot fuse the epilogue {describe(epilogue)} into {describe(reduction)}: {why}",
            epilogue,
        )

    domains = {iv.var: iv.dom for iv in epilogue.block.iter_vars}
    reduction_domains = {iv.var: iv.dom for iv in reduction.block.iter_vars}
    mapping: dict[Var, PrimExpr] = {}
    analyzer = Analyzer()
    for index, value in zip(load.indices, store.indices, strict=True):
        if not isinstance(index, Var) or index not in domains or index in mapping:
            raise refuse(f"it must load {load.buffer.name} at distinct iterators of its own")
        mapping[index] = value
        own, other = (
            domains[index],
            reduction_domains.get(value) if isinstance(value, Var) else None,
        )
        if (
            own is None
            or other is None
            or not (
                analyzer.can_prove_equal(own.min, other.min)
                and analyzer.can_prove_equal(own.extent, other.extent)
            )
        ):
            raise refuse(
                f"its iterator {index.name} does not run over the reduction's domain of "
                f"{load.buffer.name}"
            )
    for iv in epilogue.block.iter_vars:
        if iv.var in mapping:
            continue
        if iv.dom is not None and analyzer.can_prove_equal(
            iv.dom.extent,
            IntImm(1, iv.dom.extent.dtype),
        ):
            mapping[iv.var] = iv.dom.min
        else:
            raise refuse(f"its iterator {iv.var.name} does not index {load.buffer.name}")
    return mapping


def _fused_block(
    block: SBlock, reduction: _Reduction, epilogue: _Epilogue, mapping: dict[Var, PrimExpr]
) -> SBlock:
    def remap(expr: PrimExpr) -> PrimExpr:
        return substitute(expr, mapping)

    out = epilogue.store
    indices = tuple(remap(index) for index in out.indices)
    clips = tuple((op, remap(other), left) for op, other, left in epilogue.clips)

    def clip(value: PrimExpr) -> PrimExpr:
        for op, other, left in reversed(clips):
            value = arithmetic(op, other, value) if left else arithmetic(op, value, other)
        return value

    # the sum starts at 0: the init holds clip(0 + bias), folded as TVM's builder folds
    init_value = make_const(0, out.buffer.dtype)
    if epilogue.bias is not None:
        init_value = remap(epilogue.bias)
    element = BufferLoad(out.buffer, indices)
    accumulated = (
        Add(reduction.update, element)
        if reduction.update_on_left
        else Add(element, reduction.update)
    )
    init = BufferStore(out.buffer, clip(init_value), indices)
    body = BufferStore(out.buffer, clip(accumulated), indices)
    temp = reduction.buffer
    epilogue_reads = tuple(
        _remap_region(region, remap) for region in epilogue.reads if region.buffer is not temp
    )
    reads = _unique(epilogue_reads + tuple(r for r in block.reads if r.buffer is not temp))
    out_regions = tuple(
        _remap_region(region, remap) for region in epilogue.writes if region.buffer is out.buffer
    )
    writes = tuple(region for region in block.writes if region.buffer is not temp) + out_regions
    return dataclasses.replace(block, reads=reads, writes=writes, init=init, body=body)


def _remap_region(region: BufferRegion, remap: Callable[[PrimExpr], PrimExpr]) -> BufferRegion:
    return BufferRegion(
        region.buffer, tuple(Range(remap(r.min), remap(r.extent)) for r in region.region)
    )


def _unique(regions: tuple[BufferRegion, ...]) -> tuple[BufferRegion, ...]:
    kept: dict[object, BufferRegion] = {}
    for region in regions:
        kept.setdefault(expr_key(region), region)
    return tuple(kept.values())


class _Rewrite(Mutator):
    """Drops the epilogue (the leaf removal source -> target) and swaps in the fused block."""

    def __init__(self, source: For | SBlock, target: For | SBlock, old: SBlock, new: SBlock):
        self.source, self.target = source, target
        self.old, self.new = old, new

    def visit_For(self, node: For) -> Node:
        return self.generic_visit(self.target if node is self.source else node)

    def visit_SBlock(self, node: SBlock) -> Node:
        if node is self.old:
            return self.new
        return self.generic_visit(self.target if node is self.source else node)

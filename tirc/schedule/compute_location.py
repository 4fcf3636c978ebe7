"""Moving a block under a loop of its scope, with loops regenerated to cover what is needed.

The shared core of compute_at (a producer moves under a loop of its consumers and computes
the region they read there) and reverse_compute_at (a consumer moves under a loop of its
producers and consumes the region they write there). Checks first, in TVM's order, then one
replacement of the scope root.
"""

from __future__ import annotations

import dataclasses

from tirc.analysis.arith import Analyzer
from tirc.analysis.arith.compare import less_than, normal_comparisons
from tirc.analysis.arith.int_set import relax
from tirc.analysis.block_var_domain import (
    Interval,
    Region,
    UnsolvableRegion,
    VarDomain,
    fold,
    from_range,
    solve_block_var_domains,
)
from tirc.analysis.shape_bounds import mark_shape_vars
from tirc.ir import dtype as dt
from tirc.ir import expr as E
from tirc.ir.buffer import Buffer, Range
from tirc.ir.expr import IntImm, PrimExpr, Var
from tirc.ir.functor import Mutator
from tirc.ir.stmt import For, ForKind, SBlock, SBlockRealize, SeqStmt, Stmt
from tirc.ir.substitute import substitute
from tirc.schedule.block_removal import RemovalPlan, plan_leaf_removal
from tirc.schedule.errors import ScheduleError
from tirc.schedule.insertion_point import find_split, loop_children
from tirc.schedule.properties import not_complete, not_reduction, realize_of
from tirc.schedule.schedule import Schedule, describe
from tirc.schedule.scope import BlockScope, DepKind
from tirc.schedule.sref import SRef
from tirc.schedule.stage_pipeline import stage_pipeline_root
from tirc.text import script


def move_block_under_loop(
    sch: Schedule,
    block: SRef,
    loop: SRef,
    preserve_unit_loops: bool,
    index: int,
    is_compute_at: bool,
    check_only: bool = False,
) -> None:
    """compute_at (`is_compute_at`) or reverse_compute_at of `block` under `loop`."""
    state = sch.state_owning(block)
    root = stage_pipeline_root(state, block)
    scope = state.scope(root)
    producers = related_blocks(scope, block, upstream=True)
    consumers = related_blocks(scope, block, upstream=False)
    _check_complete_or_reduction(scope, block)
    analyzer = Analyzer()
    mark_shape_vars(analyzer, state.func)
    _check_same_scope(block, loop, root, analyzer)
    if is_compute_at:
        _check_not_output(block, root)
    removal = plan_leaf_removal(block)
    children = loop_children(loop.loop.body)
    split = find_split(children, producers, consumers)
    required_blocks = consumers if is_compute_at else producers
    seen = split.consumers_seen if is_compute_at else split.producers_seen
    if seen < len(required_blocks):
        relation = "consumer" if is_compute_at else "producer"
        outside = [other for other in required_blocks if loop not in other.ancestors()]
        if outside:
            which = " and ".join(describe(other) for other in outside)
            missing = f"{which} {'is' if len(outside) == 1 else 'are'} not"
        else:  # under the loop, but not where the block could go
            missing = f"{len(required_blocks) - seen} of its {len(required_blocks)} are not"
        raise ScheduleError(
            f"every {relation} of {describe(block)} must be under {describe(loop)}, but {missing}",
            *(outside or required_blocks),
        )
    position = _insert_position(index, split.last_producer, split.first_consumer, loop)
    if check_only:
        return
    provided, required = _regions(block, loop, required_blocks, split.realizes, is_compute_at)
    try:
        domains = solve_block_var_domains(block.block.iter_vars, provided, required, analyzer)
    except UnsolvableRegion as error:
        reason = str(error) if error.index is None else f"{error} {script(error.index)}"
        raise ScheduleError(
            f"cannot regenerate the loops of {describe(block)}: {reason}", block, loop
        ) from None
    nest = _loop_nest(block.block, domains, analyzer, preserve_unit_loops)
    new_loop = dataclasses.replace(
        loop.loop, body=SeqStmt(tuple(children[:position] + [nest] + children[position:]))
    )
    old_root = root.block
    new_root = _ScopeRebuilder(removal, loop.loop, new_loop).visit(old_root)
    state.replace(root, new_root, {old_root: new_root})


def related_blocks(scope: BlockScope, block: SRef, upstream: bool) -> list[SRef]:
    """Producers (`upstream`) or consumers: read-after-write and write-after-write edges."""
    deps = scope.deps_to(block) if upstream else scope.deps_from(block)
    found: list[SRef] = []
    for dep in deps:
        other = dep.src if upstream else dep.dst
        if dep.kind in (DepKind.RAW, DepKind.WAW) and all(other is not s for s in found):
            found.append(other)
    return found


def _check_complete_or_reduction(scope: BlockScope, block: SRef) -> None:
    complete = not_complete(scope.writers, block)
    if complete is None:
        return
    reduction = not_reduction(scope.writers, block, realize_of(block))
    if reduction is None:
        return
    raise ScheduleError(
        f"{describe(block)} is neither a complete block ({complete}) nor a reduction block "
        f"({reduction})",
        block,
    )


def _check_same_scope(block: SRef, loop: SRef, root: SRef, analyzer: Analyzer) -> None:
    node: SRef | None = loop
    while node is not None and node.is_loop:
        analyzer.bind(node.loop.loop_var, Range(node.loop.min, node.loop.extent))
        node = node.parent
    inside = any(ancestor is loop for ancestor in block.ancestors())
    if node is not root or inside:
        raise ScheduleError(
            f"{describe(block)} and {describe(loop)} must be in the same block scope, and the "
            "loop must not be an ancestor of the block",
            block,
            loop,
        )


def _check_not_output(block: SRef, root: SRef) -> None:
    allocated = {id(buffer) for buffer in root.block.alloc_buffers}
    for region in block.block.writes:
        if id(region.buffer) not in allocated:
            raise ScheduleError(
                f"{describe(block)} is an output block: it writes {region.buffer.name}, "
                "which its scope does not allocate",
                block,
            )


def _insert_position(index: int, last_producer: int, first_consumer: int, loop: SRef) -> int:
    if index == -1:
        return first_consumer
    if index == -2:
        return last_producer + 1
    if last_producer + 1 <= index <= first_consumer:
        return index
    raise ScheduleError(
        f"the index {index} is not a valid position under {describe(loop)}: it must be -1, -2 "
        f"or between {last_producer + 1} and {first_consumer}",
        loop,
    )


def _regions(
    block: SRef,
    loop: SRef,
    required_blocks: list[SRef],
    realizes: dict[int, SBlockRealize],
    is_compute_at: bool,
) -> tuple[dict[Buffer, list[Region]], dict[Buffer, list[Region]]]:
    """What one instance of the block provides, and what the required blocks need of it
    under `loop` (their loops up to it relaxed)."""
    provided: dict[Buffer, list[Region]] = {}
    required: dict[Buffer, list[Region]] = {}
    node = block.block
    for region in node.writes if is_compute_at else node.reads:
        provided.setdefault(region.buffer, []).append([from_range(r) for r in region.region])
        required[region.buffer] = []
    for other in required_blocks:
        realize = realizes[id(other.stmt)]
        binding = {
            iv.var: value
            for iv, value in zip(realize.block.iter_vars, realize.iter_values, strict=True)
        }
        for region in realize.block.reads if is_compute_at else realize.block.writes:
            if region.buffer not in required:
                continue
            domains = _relaxed_loops(other, loop, region.buffer.scope if is_compute_at else "")
            required[region.buffer].append(
                [_relax_range(substitute(r, binding), domains) for r in region.region]
            )
    return provided, required


def _relax_range(region: Range, domains: dict[Var, Range]) -> Interval:
    if isinstance(region.extent, IntImm) and region.extent.value == 1:
        low = relax(region.min, domains)
        return Interval(low.min, low.max)
    last = Analyzer().simplify(
        fold("-", fold("+", region.min, region.extent), IntImm(1, region.extent.dtype))
    )
    return Interval(relax(region.min, domains).min, relax(last, domains).max)


# storage rank of a scope (TVM's): threads at or below it share the buffer, so a region
# needed by one thread is needed from the whole group
_STORAGE_RANK = {"global": 0, "shared": 1, "shared.dyn": 1, "warp": 2, "local": 3}


def _relaxed_loops(block: SRef, loop: SRef, storage_scope: str) -> dict[Var, Range]:
    """The loops from the block up to `loop` (exclusive), and, for buffers shared between
    threads, the thread loops above whose threads share it."""
    domains: dict[Var, Range] = {}
    node = block.parent
    while node is not None and node is not loop and node.is_loop:
        domains[node.loop.loop_var] = Range(node.loop.min, node.loop.extent)
        node = node.parent
    rank = _STORAGE_RANK.get(storage_scope, 4)  # wmma fragments and the like: below local
    if rank == 0 or not storage_scope:
        return domains
    while node is not None:
        stmt = node.stmt
        if isinstance(stmt, For) and stmt.kind is ForKind.THREAD_BINDING:
            assert stmt.thread_binding is not None
            if _thread_shares(rank, stmt.thread_binding.thread_tag):
                domains[stmt.loop_var] = Range(stmt.min, stmt.extent)
        node = node.parent
    return domains


def _thread_shares(storage_rank: int, tag: str) -> bool:
    if tag.startswith("vthread") or tag == "cthread":
        thread_rank, dim = 1, -1
    elif tag.startswith("blockIdx."):
        thread_rank, dim = 0, ord(tag[9]) - ord("x")
    elif tag.startswith("threadIdx."):
        thread_rank, dim = 1, ord(tag[10]) - ord("x")
    else:
        return False
    if storage_rank == 2:  # warp memory: only threadIdx.x shares it
        return thread_rank == 1 and dim == 0
    return storage_rank <= thread_rank


def _loop_nest(
    block: SBlock, domains: list[VarDomain], analyzer: Analyzer, preserve_unit_loops: bool
) -> Stmt:
    loop_vars: list[tuple[Var, PrimExpr]] = []
    values: list[PrimExpr] = []
    predicate: PrimExpr | None = None
    for iter_var, info in zip(block.iter_vars, domains, strict=True):
        assert iter_var.dom is not None
        covered = info.cover_range(iter_var.dom)
        is_unit = isinstance(covered.extent, IntImm) and covered.extent.value == 1
        if preserve_unit_loops or not is_unit:
            bits = max(covered.min.dtype.bits, covered.extent.dtype.bits)
            var = Var(f"ax{len(loop_vars)}", dt.make("int", bits))
            loop_vars.append((var, analyzer.simplify(covered.extent)))
            values.append(fold("+", covered.min, var))
            analyzer.bind(var, Range(IntImm(0, var.dtype), covered.extent))
        else:
            values.append(covered.min)
        bound = info.bound
        if bound.empty:
            continue
        value = values[-1]
        if bound.min is not None:
            lower = fold(">=", value, bound.min)
            if not analyzer.can_prove(lower, symbolic=True):
                predicate = lower if predicate is None else E.And(predicate, lower)
        if bound.max is not None:
            # spelled as TVM's simplifier leaves it: x < min(a, b) + 1 is two conditions
            limit = fold("+", bound.max, IntImm(1, bound.max.dtype))
            upper = less_than(value, limit, analyzer)
            if not (isinstance(upper, IntImm) and upper.value):
                predicate = upper if predicate is None else E.And(predicate, upper)
    condition = (
        IntImm(1, dt.BOOL)
        if predicate is None
        else normal_comparisons(analyzer.simplify(predicate))
    )
    nest: Stmt = SBlockRealize(tuple(values), condition, block)
    for var, extent in reversed(loop_vars):
        nest = For(var, IntImm(0, var.dtype), extent, ForKind.SERIAL, nest)
    return nest


class _ScopeRebuilder(Mutator):
    """The scope root with the block removed and the target loop replaced, nothing else."""

    def __init__(self, removal: RemovalPlan, loop: For, new_loop: For):
        self.removal, self.loop, self.new_loop = removal, loop, new_loop
        self.top = True

    def visit_SBlock(self, node: SBlock) -> SBlock:
        if not self.top:
            return node  # another scope
        self.top = False
        current = self.removal.target if node is self.removal.source.stmt else node
        assert isinstance(current, SBlock)  # a removal's target is of its source's kind
        return self.generic_visit(current)

    def visit_For(self, node: For) -> For:
        current = self.removal.target if node is self.removal.source.stmt else node
        assert isinstance(current, For)  # a removal's target is of its source's kind
        if current is self.loop:
            return self.new_loop
        return self.generic_visit(current)

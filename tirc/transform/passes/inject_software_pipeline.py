"""inject-software-pipeline: a loop annotated `software_pipeline_stage` / `software_pipeline_order`
becomes a prologue, a steady-state body and an epilogue, with the buffers that carry values
from one stage to a later one given one version per iteration in flight.

Expects opaque blocks (after lower-match-buffer, before lower-opaque-block); leaves the same.
The statements of the loop body (the children of its block, or of its sequence) are given a
stage and an order: at time step t, the statement of stage s runs iteration t - s, and within a
time step statements run in the given order. Only buffers allocated in the loop's body block,
or in the block whose body is the loop, are versioned (as in TVM); each gets
`max(stage(reader) - stage(writer) + [reader runs after writer in a step])` versions and an
outer index `iteration % versions`, over the pairs whose regions (over all iterations) may
overlap; a block's region names the version its iteration touches. A loop of fewer iterations
than its stages, or of an extent known only at run time, is pipelined too, each statement of
the prologue and epilogue guarded by its iteration being one of the loop's (an asynchronous
pipeline excepted: its waits count the copies in flight, which needs every stage to run).

A pipelined loop inside a pipelined loop's body is rewritten first. The outer loop counts it
as one statement, or, as TVM does, as three, its prologue, body and epilogue, when its stages
list that many: then the outer stages can put the next iteration's prologue (the first k
step's fragments) before this iteration's epilogue (the last k step's products), and the
buffers the inner pipeline versioned are the outer loop's to version too.

`software_pipeline_async_stages` names stages whose statements run asynchronously (cp.async,
after inject-ptx-async-copy). Each such statement gets `T.attr(0, "async_scope", 1)`; the
statements of one async stage that are next to each other in the order form one commit group,
`T.attr(0, "async_commit_queue_scope", stage)` around them. The first statement of the least
stage that reads what a group wrote waits for it (a later stage reads that iteration's copy in
a later step): `T.attr(0, "async_wait_queue_scope", stage)` and
`T.attr(0, "async_wait_inflight_count", n)`, where n counts the groups, of any async stage
(a GPU thread has one queue), committed after that one and before the read: exact in the
prologue and epilogue (an affine expression of the unrolled step, or its least value), the
value at the first steady step (the least) in the body. In the body, a wait goes in front of
the commit groups right before its statement that hold later iterations' copies, counting
only the groups before it (the same groups complete): those copies overwrite a version earlier
steps read, so thread-sync's barrier before them, after the wait, also orders the reads of
what the wait retires, and a step has one barrier, not two (CUTLASS's multistage mainloop:
wait, barrier, copies, compute). An async result must be read at a later stage, or later in
the order of its own stage, than its group's commit.

    for i in T.serial(16, annotations={stage: [0, 1]}):    B = alloc((2, 1))
        with T.sblock():                                    B[0, 0] = A[0]
            B = T.sblock_alloc_buffer((1,))                 for i in range(15):
            B[0] = A[i]                              ->         B[(i + 1) % 2, 0] = A[i + 1]
            C[i] = B[0] + 1                                     C[i] = B[i % 2, 0] + 1
                                                            C[15] = B[1, 0] + 1

With `async_stages: [0]` (commit, wait and async for the attributes; B in shared memory):

    commit(0): async: B[0, 0] = A[0]
    for i in range(15):
        wait(0, in flight 0):                             # before this step's copy
            commit(0): async: B[(i + 1) % 2, 0] = A[i + 1]
            C[i] = B[i % 2, 0] + 1
    wait(0, in flight 0): C[15] = B[1, 0] + 1
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Callable
from dataclasses import dataclass

from tirc.analysis.arith.analyzer import Analyzer
from tirc.analysis.regions import infer_access_regions
from tirc.diagnostics import DiagnosticError, Note
from tirc.ir import dtype as dt
from tirc.ir import expr as E
from tirc.ir import stmt as S
from tirc.ir.buffer import Buffer, Range
from tirc.ir.function import PrimFunc
from tirc.ir.functor import Mutator
from tirc.transform.fresh_copy import fresh_copy
from tirc.transform.pass_base import Dialect, FunctionPass
from tirc.transform.passes._nested_pipeline import Nested, pipeline_statements
from tirc.transform.passes._pipeline_annotations import (
    ASYNC_STAGES,
    ORDER,
    PIPELINE_KEYS,
    STAGE,
    body_block,
    int_list,
    is_pipelined,
)
from tirc.transform.passes._pipeline_versions import (
    Accesses,
    HandleUses,
    Regions,
    Versioner,
    version_counts,
    versioned_buffer,
)

PrimExpr = E.PrimExpr

# the attributes that async stages leave, which inject-ptx-async-copy and thread-sync read
ASYNC_SCOPE = "async_scope"
COMMIT_QUEUE_SCOPE = "async_commit_queue_scope"
WAIT_QUEUE_SCOPE = "async_wait_queue_scope"
WAIT_INFLIGHT_COUNT = "async_wait_inflight_count"


def _guard(stmt: S.Stmt, condition: PrimExpr) -> S.Stmt:
    if isinstance(stmt, S.SBlockRealize):
        predicate = (
            condition if E.is_const_int(stmt.predicate, 1) else E.And(stmt.predicate, condition)
        )
        return dataclasses.replace(stmt, predicate=predicate)
    return S.IfThenElse(condition, stmt, span=stmt.span)


def _attr(key: str, value: int | PrimExpr, body: S.Stmt) -> S.AttrStmt:
    expr = E.IntImm(value, dt.INT32) if isinstance(value, int) else value
    return S.AttrStmt(E.IntImm(0, dt.INT32), key, expr, body, span=body.span)


def _wrap_inside(stmt: S.Stmt, key: str, value: int | PrimExpr) -> S.Stmt:
    """`stmt` with an attribute around what it runs: inside a block, so that the block's
    predicate stays outside, or around the statement."""
    if isinstance(stmt, S.SBlockRealize):
        block = dataclasses.replace(stmt.block, body=_attr(key, value, stmt.block.body))
        return dataclasses.replace(stmt, block=block)
    return _attr(key, value, stmt)


class _Phase(enum.Enum):
    PROLOGUE = "prologue"
    BODY = "body"
    EPILOGUE = "epilogue"


@dataclass(frozen=True)
class _Group:
    """Statements of one async stage next to each other in the order: one commit group."""

    stage: int
    members: tuple[int, ...]
    end: int  # the position of the last member in the order


class _AsyncPlan:
    """The commit groups of a pipeline's async stages and the statements that wait for them:
    the first statement of each stage (in the order) that reads what a group writes."""

    def __init__(
        self,
        loop: S.For,
        stmts: tuple[S.Stmt, ...],
        stages: tuple[int, ...],
        ordered: tuple[int, ...],
        accesses: list[Accesses],
        async_stages: set[int],
    ) -> None:
        self.stages = stages
        self.position = {index: place for place, index in enumerate(ordered)}
        groups: list[_Group] = []
        for place, index in enumerate(ordered):
            if stages[index] not in async_stages:
                continue
            if groups and groups[-1].stage == stages[index] and groups[-1].end == place - 1:
                last = groups[-1]
                groups[-1] = _Group(last.stage, (*last.members, index), place)
            else:
                groups.append(_Group(stages[index], (index,), place))
        self.groups = tuple(groups)
        self.waits: dict[int, tuple[_Group, ...]] = {}
        waited: set[_Group] = set()
        # the reader of the least stage waits (first in the order among them): a reader at a
        # later stage reads the same iteration's copy in a later step, after that wait
        for index in sorted(ordered, key=lambda k: (stages[k], self.position[k])):
            needs = []
            for group in groups:
                written = set().union(*(accesses[m].writes for m in group.members))
                shared = accesses[index].reads & written
                if not shared:
                    continue
                if index in group.members or not self._after_commit(index, group):
                    name = min(var.name for var in shared)
                    raise DiagnosticError.at(
                        stmts[index].span or loop.span,
                        f"this statement of the pipelined loop reads '{name}' before the "
                        f"asynchronous stage {group.stage} that writes it commits its copy: read "
                        "an asynchronous result at a later stage, or later in the order",
                        Note("written asynchronously here", stmts[group.members[-1]].span),
                        Note("the pipelined loop", loop.span),
                    )
                if group not in waited:
                    waited.add(group)
                    needs.append(group)
            if needs:
                self.waits[index] = tuple(needs)
        for group in groups:
            if group not in waited:
                raise DiagnosticError.at(
                    stmts[group.members[0]].span or loop.span,
                    f"nothing in the pipelined loop reads what this statement of asynchronous "
                    f"stage {group.stage} writes: no statement would wait for its copy",
                    Note("the pipelined loop", loop.span),
                )

    def early(self, reader: int) -> int:
        """The position in the order where `reader`'s wait goes in the steady state: in front
        of the commit groups right before it that hold later iterations' copies (not one it
        waits for in this step, nor one that waits itself). Those copies overwrite a version
        that earlier steps read, so a barrier goes before them; after the wait, that one
        barrier also orders the copies the reader reads, where a wait just before the reader
        would need a second barrier (CUTLASS's multistage mainloop: wait, barrier, copies,
        compute)."""
        position = self.position[reader]
        if any(reader in group.members for group in self.groups):
            return position
        ends = {group.end: group for group in self.groups}
        waited = set(self.waits.get(reader, ()))
        start = position
        while start - 1 in ends:
            group = ends[start - 1]
            if group in waited and group.stage == self.stages[reader]:
                break  # its copy for this reader is this step's: the wait must follow it
            if any(member in self.waits for member in group.members):
                break  # a group that waits itself keeps its place after the waits before it
            start -= len(group.members)
        return start

    def _after_commit(self, reader: int, group: _Group) -> bool:
        stage = self.stages[reader]
        return group.stage < stage or (group.stage == stage and group.end < self.position[reader])

    def in_flight(
        self,
        reader: int,
        group: _Group,
        commits: Callable[[_Group, int], bool],
        at: int | None = None,
    ) -> int:
        """How many groups may still be in flight when `reader` reads what `group` copied for
        its iteration: those committed after that copy and before the wait, at position `at`
        of the reader's step (the reader's own by default), where `commits(g, d)` says
        whether group g commits d steps before the reader's step."""
        first = group.stage - self.stages[reader]
        wait = self.position[reader] if at is None else at
        count = 0
        for steps in range(first, 1):
            for other in self.groups:
                after = steps > first or other.end > group.end
                before = steps < 0 or other.end < wait
                if after and before and commits(other, steps):
                    count += 1
        return count


def _affine(values: dict[int, int], var: E.Var, analyzer: Analyzer) -> PrimExpr:
    """`a + b * var` through the (step, value) pairs if one exists, else their least value."""
    steps = sorted(values)
    low = values[steps[0]]
    if len(steps) == 1:
        return E.IntImm(low, var.dtype)
    rise, run = values[steps[1]] - low, steps[1] - steps[0]
    slope = rise // run
    if rise % run or any(values[s] != low + slope * (s - steps[0]) for s in steps):
        return E.IntImm(min(values.values()), var.dtype)
    offset = E.IntImm(low - slope * steps[0], var.dtype)
    return analyzer.simplify(E.Add(offset, E.Mul(var, E.IntImm(slope, var.dtype))))


@dataclass
class _Pipeline:
    """One pipelined loop and what it needs to be rewritten."""

    loop: S.For
    stmts: tuple[S.Stmt, ...]
    stages: tuple[int, ...]
    ordered: tuple[int, ...]  # statement indices in the order they run within a step
    versioned: dict[E.Var, Buffer]  # old data handle -> buffer with a version axis in front
    analyzer: Analyzer
    plan: _AsyncPlan | None

    @property
    def max_stage(self) -> int:
        return max(self.stages)

    def segment(
        self, phase: _Phase, start: PrimExpr, length: PrimExpr, kind: S.ForKind, keep: S.Attrs
    ) -> S.Stmt:
        """Time steps [start, start + length): each statement runs the iteration its stage
        is at, where that iteration exists."""
        loop = self.loop
        dtype = loop.loop_var.dtype
        var = E.Var(loop.loop_var.name, dtype)
        analyzer = Analyzer()
        analyzer.ranges.update(self.analyzer.ranges)
        analyzer.bind(var, Range(E.IntImm(0, dtype), length))
        single = analyzer.can_prove(E.EQ(length, E.IntImm(1, dtype)))
        time: PrimExpr = start if single else E.Add(var, start)
        end = E.Add(loop.min, loop.extent)
        conditions = {
            index: analyzer.simplify(E.And(E.GE(iteration, loop.min), E.LT(iteration, end)))
            for index in self.ordered
            for iteration in [analyzer.simplify(E.Sub(time, E.IntImm(self.stages[index], dtype)))]
        }
        early = self.early_waits(conditions) if phase is _Phase.BODY else {}
        items: list[tuple[int, S.Stmt]] = []  # each with its position in the order
        groups = {m: g for g in self.plan.groups for m in g.members} if self.plan else {}
        for place, index in enumerate(self.ordered):
            group = groups.get(index)
            if group is not None and group.members[0] != index:
                continue  # emitted with the first member of its group
            iteration = analyzer.simplify(E.Sub(time, E.IntImm(self.stages[index], dtype)))
            condition = conditions[index]
            if E.is_const_int(condition, 0):
                continue
            members = group.members if group is not None else (index,)
            stmts = []
            for member in members:
                stmt = self.versioned_stmt(self.stmts[member], iteration, analyzer)
                if group is not None:
                    stmt = _wrap_inside(stmt, ASYNC_SCOPE, 1)
                if member not in early:
                    stmt = self.waiting(member, stmt, phase, var, single, analyzer)
                stmts.append(stmt)
            stmt = S.seq(*stmts)
            if group is not None:
                stmt = _attr(COMMIT_QUEUE_SCOPE, group.stage, stmt)
            if not E.is_const_int(condition, 1):
                stmt = _guard(stmt, condition)
            items.append((place, stmt))
        for reader, at in early.items():
            items = self.wait_early(items, reader, at, var.dtype)
        if not items:
            return S.Evaluate(E.IntImm(0))
        body = S.seq(*(stmt for _, stmt in items))
        if single:
            return body
        return S.For(var, E.IntImm(0, dtype), length, kind, body, annotations=keep, span=loop.span)

    def early_waits(self, conditions: dict[int, PrimExpr]) -> dict[int, int]:
        """The readers whose wait goes in front of the commit groups before them in the
        steady state (`_AsyncPlan.early`), and the position it goes to: where every statement
        from there to the reader runs (`conditions` true), so that the count is exact."""
        plan = self.plan
        if plan is None:
            return {}
        found: dict[int, int] = {}
        for reader in plan.waits:
            start, end = plan.early(reader), plan.position[reader]
            between = self.ordered[start : end + 1]
            if start < end and all(E.is_const_int(conditions[k], 1) for k in between):
                found[reader] = start
        return found

    def wait_early(
        self, items: list[tuple[int, S.Stmt]], reader: int, start: int, dtype: dt.DataType
    ) -> list[tuple[int, S.Stmt]]:
        """The steady state's `items` with `reader`'s wait around the statements from
        position `start` to the reader's: the same groups complete as in front of the
        reader, the count without those committed between."""
        plan = self.plan
        assert plan is not None
        end = plan.position[reader]
        inside = [k for k, (place, _) in enumerate(items) if start <= place <= end]
        groups = plan.waits[reader]
        commits = self.commits(_Phase.BODY, 0)
        counts = {group: plan.in_flight(reader, group, commits, at=start) for group in groups}
        queue = min(groups, key=lambda group: counts[group]).stage
        count = E.IntImm(min(counts.values()), dtype)
        body = S.seq(*(items[k][1] for k in inside))
        wrapped = _attr(WAIT_QUEUE_SCOPE, queue, _attr(WAIT_INFLIGHT_COUNT, count, body))
        return [*items[: inside[0]], (start, wrapped), *items[inside[-1] + 1 :]]

    def waiting(
        self, index: int, stmt: S.Stmt, phase: _Phase, var: E.Var, single: bool, analyzer: Analyzer
    ) -> S.Stmt:
        """`stmt` (statement `index`) waiting, where it must, for the groups it reads."""
        plan = self.plan
        if plan is None or index not in plan.waits:
            return stmt
        steps = [0] if phase is _Phase.BODY or single else list(range(self.max_stage))
        steps = [step for step in steps if self.runs(phase, step, self.stages[index])]
        if not steps:
            return stmt  # the statement never runs in this segment
        groups = plan.waits[index]
        counts = {  # per group and step; the wait must complete every group the step reads
            group: [plan.in_flight(index, group, self.commits(phase, step)) for step in steps]
            for group in groups
        }
        least = dict(zip(steps, map(min, zip(*counts.values(), strict=True)), strict=True))
        queue = min(groups, key=lambda group: min(counts[group])).stage
        stmt = _wrap_inside(stmt, WAIT_INFLIGHT_COUNT, _affine(least, var, analyzer))
        return _wrap_inside(stmt, WAIT_QUEUE_SCOPE, queue)

    def runs(self, phase: _Phase, step: int, stage: int) -> bool:
        """Whether a statement of `stage` runs at `step` of the phase: whether its iteration
        there is one of the loop's (provably; False when that is unknown)."""
        extent = self.loop.extent
        if phase is _Phase.EPILOGUE:  # the iteration, counted from the loop's end
            offset = step - stage
            return offset < 0 and self.proves(E.GE(extent, E.IntImm(-offset, extent.dtype)))
        offset = step - stage + (self.max_stage if phase is _Phase.BODY else 0)
        if offset < 0:
            return False
        return phase is _Phase.BODY or self.proves(E.GT(extent, E.IntImm(offset, extent.dtype)))

    def commits(self, phase: _Phase, step: int) -> Callable[[_Group, int], bool]:
        """Whether a group commits `d` steps before step `step` of the phase (in the body,
        its first step: the fewest groups in flight, as the prologue commits fewer)."""
        return lambda group, d: self.runs(phase, step + d, group.stage)

    def proves(self, condition: PrimExpr) -> bool:
        return self.analyzer.can_prove(condition)

    def versioned_stmt(self, stmt: S.Stmt, iteration: PrimExpr, analyzer: Analyzer) -> S.Stmt:
        versions = {
            data: (buffer, analyzer.simplify(E.FloorMod(iteration, buffer.shape[0])))
            for data, buffer in self.versioned.items()
        }
        rewritten = Versioner(versions).visit(stmt) if versions else stmt
        return fresh_copy(rewritten, {self.loop.loop_var: iteration})


def pipeline(
    loop: S.For,
    outer_allocs: tuple[Buffer, ...],
    analyzer: Analyzer,
    nested: dict[int, Nested] | None = None,
) -> tuple[S.Stmt, dict[E.Var, Buffer], Nested | None]:
    """The loop as prologue, body and epilogue, the versioned buffers among `outer_allocs`
    (by their old data handle), which the caller reallocates, and the three parts for a
    pipelined loop around this one (None where the loop needs no pipeline)."""
    block = body_block(loop)
    stmts, nested_allocs = pipeline_statements(
        loop, block.body if block is not None else loop.body, nested or {}
    )
    stages = int_list(loop, STAGE, len(stmts))
    orders = (
        int_list(loop, ORDER, len(stmts)) if ORDER in loop.annotations else tuple(range(len(stmts)))
    )
    if sorted(orders) != list(range(len(stmts))):
        raise DiagnosticError.at(
            loop.span, f"the loop's '{ORDER}' must be a permutation of 0..{len(stmts) - 1}"
        )
    async_stages = (
        set(int_list(loop, ASYNC_STAGES, None)) if ASYNC_STAGES in loop.annotations else set()
    )
    keep = S.Attrs(tuple((k, v) for k, v in loop.annotations.items if k not in PIPELINE_KEYS))
    max_stage = max(stages, default=0)
    if max_stage == 0:
        return dataclasses.replace(loop, annotations=keep), {}, None
    if loop.kind is not S.ForKind.SERIAL:
        raise DiagnosticError.at(loop.span, "only a serial loop can be software-pipelined")
    dtype = loop.loop_var.dtype
    stage_count = E.IntImm(max_stage, dtype)
    long_enough = analyzer.can_prove(E.GE(loop.extent, stage_count))
    if not long_enough and async_stages:
        raise DiagnosticError.at(
            loop.span,
            f"an asynchronous software pipeline of {max_stage + 1} stages needs a loop of at "
            f"least {max_stage} iterations (its waits count the copies in flight)",
        )
    accesses = []
    for stmt in stmts:
        collector = Accesses()
        collector.visit(stmt)
        accesses.append(collector)
    inner = (block.alloc_buffers if block is not None else ()) + nested_allocs
    regions = Regions(loop, stmts, inner + outer_allocs, analyzer)
    counts = version_counts(inner + outer_allocs, accesses, stages, orders, regions.disjoint)
    versioned = {
        buffer.data: versioned_buffer(buffer, counts[buffer.data])
        for buffer in inner + outer_allocs
        if counts[buffer.data] > 1
    }
    uses = HandleUses(set(versioned))
    uses.visit(stmts)
    if uses.found is not None:
        raise DiagnosticError.at(
            loop.span,
            f"cannot version buffer '{uses.found.name}' for the software pipeline: its data "
            "is used other than through buffer accesses",
        )
    ordered = tuple(sorted(range(len(stmts)), key=lambda k: (orders[k], k)))
    plan = (
        _AsyncPlan(loop, stmts, stages, ordered, accesses, async_stages) if async_stages else None
    )
    _check_dependences(loop, stmts, stages, orders, accesses)  # after the async plan's own
    rewrite = _Pipeline(loop, stmts, stages, ordered, versioned, analyzer, plan)
    extent = analyzer.simplify(E.Sub(loop.extent, stage_count))
    unrolled, none = S.ForKind.UNROLLED, S.EMPTY_ATTRS
    tail, tail_length = _epilogue(loop.extent, stage_count, long_enough, analyzer)
    empty = S.Evaluate(E.IntImm(0))  # the steady state of a loop of at most S iterations
    body: S.Stmt = empty
    if not analyzer.can_prove(E.LE(extent, E.IntImm(0, dtype))):
        body = rewrite.segment(_Phase.BODY, E.Add(loop.min, stage_count), extent, loop.kind, keep)
    parts = (
        rewrite.segment(_Phase.PROLOGUE, loop.min, stage_count, unrolled, none),
        body,
        rewrite.segment(_Phase.EPILOGUE, E.Add(loop.min, tail), tail_length, unrolled, none),
    )
    result = S.seq(*(part for part in parts if part is not empty))
    allocs: tuple[Buffer, ...] = ()
    if block is not None or inner:
        allocs = tuple(versioned.get(buffer.data, buffer) for buffer in inner)
        wrapper = S.SBlock(
            block.name if block is not None else "",
            (),
            (),
            (),
            result,
            alloc_buffers=allocs,
            annotations=block.annotations if block is not None else S.EMPTY_ATTRS,
            span=block.span if block is not None else loop.span,
        )
        reads, writes = infer_access_regions(wrapper)
        wrapper = dataclasses.replace(wrapper, reads=reads, writes=writes)
        result = S.SBlockRealize((), E.IntImm(1, dt.BOOL), wrapper, span=loop.span)
    outer_handles = {buffer.data for buffer in outer_allocs}
    outer = {data: new for data, new in versioned.items() if data in outer_handles}
    return result, outer, Nested(result, parts, allocs)


def _check_dependences(
    loop: S.For,
    stmts: tuple[S.Stmt, ...],
    stages: tuple[int, ...],
    orders: tuple[int, ...],
    accesses: list[Accesses],
) -> None:
    """A statement that reads what an earlier one (in the loop body) writes keeps reading that
    iteration's value: its stage is not earlier, and in the same stage it comes later in the
    order, as TVM 0.27 requires (else the pipeline would read another iteration's value)."""
    for reader in range(len(stmts)):
        for writer in range(reader):
            shared = accesses[reader].reads & accesses[writer].writes
            if not shared:
                continue
            name = min(var.name for var in shared)
            where = (Note(f"'{name}' is written here", stmts[writer].span or loop.span),)
            if stages[reader] < stages[writer]:
                raise DiagnosticError.at(
                    stmts[reader].span or loop.span,
                    f"this statement of stage {stages[reader]} reads '{name}', which a statement "
                    f"before it writes in the later stage {stages[writer]}: a pipeline stage "
                    "cannot read what a later stage writes for the same iteration",
                    *where,
                )
            if stages[reader] == stages[writer] and orders[reader] < orders[writer]:
                raise DiagnosticError.at(
                    stmts[reader].span or loop.span,
                    f"this statement reads '{name}', which a statement before it in the same "
                    f"stage {stages[reader]} writes, but comes first in the pipeline's order "
                    f"({orders[reader]} < {orders[writer]}): two dependent statements of one "
                    "stage cannot be reordered",
                    *where,
                )


def _epilogue(
    extent: PrimExpr, stage_count: E.IntImm, long_enough: bool, analyzer: Analyzer
) -> tuple[PrimExpr, PrimExpr]:
    """The first time step of the epilogue, from the loop's start, and its number of steps.

    The prologue runs steps [0, S) and the body [S, N), so the epilogue starts at max(N, S),
    where no step runs twice, and ends at N + S; each statement in them runs only where its
    iteration is one of the loop's (a loop shorter than S, or of unknown extent, as TVM
    allows). With S = 1 it may start at N: the two overlap only where N is 0, and nothing
    runs then."""
    if long_enough:
        return extent, stage_count
    if isinstance(extent, E.IntImm):
        start, length = max(extent.value, stage_count.value), min(extent.value, stage_count.value)
        return E.IntImm(start, extent.dtype), E.IntImm(length, extent.dtype)
    if stage_count.value == 1:
        return extent, stage_count
    return analyzer.simplify(E.Max(extent, stage_count)), stage_count


class _Injector(Mutator):
    def __init__(self) -> None:
        self.analyzer = Analyzer()
        self.nested: dict[int, Nested] = {}  # the pipelines rewritten so far, by identity

    def visit_For(self, node: S.For) -> S.Stmt:
        self.analyzer.bind(node.loop_var, Range(node.min, node.extent))
        loop: S.For = self.generic_visit(node)
        if not is_pipelined(loop):
            return loop
        result, _, parts = pipeline(loop, (), self.analyzer, self.nested)
        if parts is not None:
            self.nested[id(result)] = parts
        return result

    def visit_SBlock(self, node: S.SBlock) -> S.SBlock:
        if not is_pipelined(node.body) or not node.alloc_buffers:
            return self.generic_visit(node)
        loop = node.body
        assert isinstance(loop, S.For)
        self.analyzer.bind(loop.loop_var, Range(loop.min, loop.extent))
        loop = dataclasses.replace(loop, body=self.visit(loop.body))
        result, outer, parts = pipeline(loop, node.alloc_buffers, self.analyzer, self.nested)
        if parts is not None:
            self.nested[id(result)] = parts
        allocs = tuple(outer.get(buffer.data, buffer) for buffer in node.alloc_buffers)
        return dataclasses.replace(node, body=result, alloc_buffers=allocs)


@dataclass(frozen=True)
class InjectSoftwarePipeline(FunctionPass):
    name = "inject-software-pipeline"
    expects = Dialect.OPAQUE_BLOCKS
    leaves = Dialect.OPAQUE_BLOCKS

    def run_function(self, func: PrimFunc) -> PrimFunc:
        body = _Injector().visit(func.body)
        return func if body is func.body else dataclasses.replace(func, body=body)

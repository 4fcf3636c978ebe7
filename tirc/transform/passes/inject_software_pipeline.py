"""inject-software-pipeline: a loop annotated `software_pipeline_stage` / `software_pipeline_order`
becomes a prologue, a steady-state body and an epilogue, with the buffers that carry values
from one stage to a later one given one version per iteration in flight.

Expects opaque blocks (after lower-match-buffer, before lower-opaque-block); leaves the same.
The statements of the loop body (the children of its block, or of its sequence) are given a
stage and an order: at time step t, the statement of stage s runs iteration t - s, and within a
time step statements run in the given order. Only buffers allocated in the loop's body block,
or in the block whose body is the loop, are versioned (as in TVM); each gets
`max(stage(reader) - stage(writer) + [reader runs after writer in a step])` versions and an
outer index `iteration % versions`. `software_pipeline_async_stages` is accepted and dropped:
the copies stay synchronous (thread-sync adds the barriers they need).

    for i in T.serial(16, annotations={stage: [0, 1]}):    B = alloc((2, 1))
        with T.sblock():                                    B[0, 0] = A[0]
            B = T.sblock_alloc_buffer((1,))                 for i in range(15):
            B[0] = A[i]                              ->         B[(i + 1) % 2, 0] = A[i + 1]
            C[i] = B[0] + 1                                     C[i] = B[i % 2, 0] + 1
                                                            C[15] = B[1, 0] + 1
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from tirc.analysis.arith.analyzer import Analyzer
from tirc.analysis.regions import infer_access_regions
from tirc.diagnostics import DiagnosticError
from tirc.ir import dtype as dt
from tirc.ir import expr as E
from tirc.ir import stmt as S
from tirc.ir.buffer import Buffer, BufferRegion, Range
from tirc.ir.function import PrimFunc
from tirc.ir.functor import Mutator, Visitor
from tirc.transform.fresh_copy import fresh_copy
from tirc.transform.pass_base import Dialect, FunctionPass

PrimExpr = E.PrimExpr

STAGE = "software_pipeline_stage"
ORDER = "software_pipeline_order"
ASYNC_STAGES = "software_pipeline_async_stages"
PIPELINE_KEYS = (STAGE, ORDER, ASYNC_STAGES)


def is_pipelined(stmt: S.Stmt) -> bool:
    return isinstance(stmt, S.For) and STAGE in stmt.annotations


class _Accesses(Visitor):
    """Which buffers (by data handle) a statement reads and writes."""

    def __init__(self) -> None:
        self.reads: set[E.Var] = set()
        self.writes: set[E.Var] = set()

    def visit_BufferLoad(self, node: E.BufferLoad) -> None:
        self.reads.add(node.buffer.data)
        self.generic_visit(node)

    def visit_BufferStore(self, node: S.BufferStore) -> None:
        self.writes.add(node.buffer.data)
        self.generic_visit(node)


class _Versioner(Mutator):
    """Accesses of versioned buffers get the version index in front."""

    def __init__(self, versions: dict[E.Var, tuple[Buffer, PrimExpr]]) -> None:
        self.versions = versions

    def visit_BufferLoad(self, node: E.BufferLoad) -> E.PrimExpr:
        node = self.generic_visit(node)
        found = self.versions.get(node.buffer.data)
        if found is None:
            return node
        buffer, index = found
        return dataclasses.replace(node, buffer=buffer, indices=(index, *node.indices))

    def visit_BufferStore(self, node: S.BufferStore) -> S.Stmt:
        node = self.generic_visit(node)
        found = self.versions.get(node.buffer.data)
        if found is None:
            return node
        buffer, index = found
        return dataclasses.replace(node, buffer=buffer, indices=(index, *node.indices))

    def visit_BufferRegion(self, node: BufferRegion) -> BufferRegion:
        found = self.versions.get(node.buffer.data)
        if found is None:
            return node
        buffer, _ = found
        whole = Range(E.IntImm(0, buffer.index_dtype), buffer.shape[0])
        return BufferRegion(buffer, (whole, *node.region), span=node.span)


class _HandleUses(Visitor):
    """Uses of a data handle other than through buffer accesses (e.g. in `tvm_access_ptr`)."""

    def __init__(self, handles: set[E.Var]) -> None:
        self.handles = handles
        self.found: E.Var | None = None

    def visit_Var(self, node: E.Var) -> None:
        if node in self.handles:
            self.found = node


def _int_list(loop: S.For, key: str, count: int | None) -> tuple[int, ...]:
    value = loop.annotations.get(key)
    items = value if isinstance(value, tuple) else (value,)
    result: list[int] = []
    for item in items:
        if isinstance(item, E.IntImm):
            item = item.value
        if not isinstance(item, int) or isinstance(item, bool) or item < 0:
            raise DiagnosticError.at(
                loop.span, f"the loop's '{key}' must be a list of non-negative integers"
            )
        result.append(item)
    if count is not None and len(result) != count:
        raise DiagnosticError.at(
            loop.span,
            f"the loop's '{key}' has {len(result)} entries but its body has {count} statements",
        )
    return tuple(result)


def _body_block(loop: S.For) -> S.SBlock | None:
    body = loop.body
    if (
        isinstance(body, S.SBlockRealize)
        and not body.block.iter_vars
        and body.block.init is None
        and E.is_const_int(body.predicate, 1)
    ):
        return body.block
    return None


def _children(stmt: S.Stmt) -> tuple[S.Stmt, ...]:
    return stmt.stmts if isinstance(stmt, S.SeqStmt) else (stmt,)


def _versions(
    candidates: tuple[Buffer, ...],
    accesses: list[_Accesses],
    stages: tuple[int, ...],
    orders: tuple[int, ...],
) -> dict[E.Var, int]:
    """How many copies of each candidate the iterations in flight need."""
    counts: dict[E.Var, int] = {}
    for buffer in candidates:
        need = 1
        for w, writer in enumerate(accesses):
            if buffer.data not in writer.writes:
                continue
            for r, reader in enumerate(accesses):
                if buffer.data not in reader.reads or stages[r] <= stages[w]:
                    continue
                # the copy of iteration j + v is written at step j + v + stage(w); it must come
                # after the read of iteration j at step j + stage(r)
                need = max(need, stages[r] - stages[w] + (1 if orders[r] > orders[w] else 0))
        counts[buffer.data] = need
    return counts


def _guard(stmt: S.Stmt, condition: PrimExpr) -> S.Stmt:
    if isinstance(stmt, S.SBlockRealize):
        predicate = (
            condition if E.is_const_int(stmt.predicate, 1) else E.And(stmt.predicate, condition)
        )
        return dataclasses.replace(stmt, predicate=predicate)
    return S.IfThenElse(condition, stmt, span=stmt.span)


@dataclass
class _Pipeline:
    """One pipelined loop and what it needs to be rewritten."""

    loop: S.For
    stmts: tuple[S.Stmt, ...]
    stages: tuple[int, ...]
    orders: tuple[int, ...]
    versioned: dict[E.Var, Buffer]  # old data handle -> buffer with a version axis in front
    analyzer: Analyzer

    def segment(self, start: PrimExpr, length: PrimExpr, kind: S.ForKind, keep: S.Attrs) -> S.Stmt:
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
        items: list[S.Stmt] = []
        for index in sorted(range(len(self.stmts)), key=lambda k: (self.orders[k], k)):
            iteration = analyzer.simplify(E.Sub(time, E.IntImm(self.stages[index], dtype)))
            condition = analyzer.simplify(E.And(E.GE(iteration, loop.min), E.LT(iteration, end)))
            if E.is_const_int(condition, 0):
                continue
            stmt = self.versioned_stmt(self.stmts[index], iteration, analyzer)
            if not E.is_const_int(condition, 1):
                stmt = _guard(stmt, condition)
            items.append(stmt)
        if not items:
            return S.Evaluate(E.IntImm(0))
        body = S.seq(*items)
        if single:
            return body
        return S.For(var, E.IntImm(0, dtype), length, kind, body, annotations=keep, span=loop.span)

    def versioned_stmt(self, stmt: S.Stmt, iteration: PrimExpr, analyzer: Analyzer) -> S.Stmt:
        versions = {
            data: (buffer, analyzer.simplify(E.FloorMod(iteration, buffer.shape[0])))
            for data, buffer in self.versioned.items()
        }
        rewritten = _Versioner(versions).visit(stmt) if versions else stmt
        return fresh_copy(rewritten, {self.loop.loop_var: iteration})


def _versioned_buffer(buffer: Buffer, count: int) -> Buffer:
    from tirc.ir.expr import PointerType

    pointer = buffer.data.pointer or PointerType(buffer.dtype)
    data = E.Var(buffer.data.name, buffer.data.dtype, pointer)
    strides = (E.Mul(buffer.strides[0], buffer.shape[0]), *buffer.strides) if buffer.strides else ()
    count_expr = E.IntImm(count, buffer.index_dtype)
    return dataclasses.replace(
        buffer, data=data, shape=(count_expr, *buffer.shape), strides=strides
    )


def pipeline(
    loop: S.For, outer_allocs: tuple[Buffer, ...], analyzer: Analyzer
) -> tuple[S.Stmt, dict[E.Var, Buffer]]:
    """The loop as prologue, body and epilogue, and the versioned buffers among `outer_allocs`
    (by their old data handle), which the caller reallocates."""
    block = _body_block(loop)
    stmts = _children(block.body if block is not None else loop.body)
    stages = _int_list(loop, STAGE, len(stmts))
    orders = (
        _int_list(loop, ORDER, len(stmts))
        if ORDER in loop.annotations
        else tuple(range(len(stmts)))
    )
    if sorted(orders) != list(range(len(stmts))):
        raise DiagnosticError.at(
            loop.span, f"the loop's '{ORDER}' must be a permutation of 0..{len(stmts) - 1}"
        )
    if ASYNC_STAGES in loop.annotations:
        _int_list(loop, ASYNC_STAGES, None)
    keep = S.Attrs(tuple((k, v) for k, v in loop.annotations.items if k not in PIPELINE_KEYS))
    max_stage = max(stages, default=0)
    if max_stage == 0:
        return dataclasses.replace(loop, annotations=keep), {}
    if loop.kind is not S.ForKind.SERIAL:
        raise DiagnosticError.at(loop.span, "only a serial loop can be software-pipelined")
    dtype = loop.loop_var.dtype
    stage_count = E.IntImm(max_stage, dtype)
    if not analyzer.can_prove(E.GE(loop.extent, stage_count)):
        raise DiagnosticError.at(
            loop.span,
            f"a software pipeline of {max_stage + 1} stages needs a loop of at least "
            f"{max_stage} iterations",
        )
    accesses = []
    for stmt in stmts:
        collector = _Accesses()
        collector.visit(stmt)
        accesses.append(collector)
    inner = block.alloc_buffers if block is not None else ()
    counts = _versions(inner + outer_allocs, accesses, stages, orders)
    versioned = {
        buffer.data: _versioned_buffer(buffer, counts[buffer.data])
        for buffer in inner + outer_allocs
        if counts[buffer.data] > 1
    }
    uses = _HandleUses(set(versioned))
    uses.visit(stmts)
    if uses.found is not None:
        raise DiagnosticError.at(
            loop.span,
            f"cannot version buffer '{uses.found.name}' for the software pipeline: its data "
            "is used other than through buffer accesses",
        )
    plan = _Pipeline(loop, stmts, stages, orders, versioned, analyzer)
    extent = analyzer.simplify(E.Sub(loop.extent, stage_count))
    parts = [
        plan.segment(loop.min, stage_count, S.ForKind.UNROLLED, S.EMPTY_ATTRS),
        plan.segment(E.Add(loop.min, stage_count), extent, loop.kind, keep),
        plan.segment(E.Add(loop.min, loop.extent), stage_count, S.ForKind.UNROLLED, S.EMPTY_ATTRS),
    ]
    result = S.seq(*parts)
    if block is not None:
        allocs = tuple(versioned.get(buffer.data, buffer) for buffer in block.alloc_buffers)
        wrapper = S.SBlock(
            block.name,
            (),
            (),
            (),
            result,
            alloc_buffers=allocs,
            annotations=block.annotations,
            span=block.span,
        )
        reads, writes = infer_access_regions(wrapper)
        wrapper = dataclasses.replace(wrapper, reads=reads, writes=writes)
        result = S.SBlockRealize((), E.IntImm(1, dt.BOOL), wrapper, span=loop.span)
    outer_handles = {buffer.data for buffer in outer_allocs}
    return result, {data: new for data, new in versioned.items() if data in outer_handles}


class _Injector(Mutator):
    def __init__(self) -> None:
        self.analyzer = Analyzer()

    def visit_For(self, node: S.For) -> S.Stmt:
        self.analyzer.bind(node.loop_var, Range(node.min, node.extent))
        loop: S.For = self.generic_visit(node)
        if not is_pipelined(loop):
            return loop
        result, _ = pipeline(loop, (), self.analyzer)
        return result

    def visit_SBlock(self, node: S.SBlock) -> S.SBlock:
        if not is_pipelined(node.body) or not node.alloc_buffers:
            return self.generic_visit(node)
        loop = node.body
        assert isinstance(loop, S.For)
        self.analyzer.bind(loop.loop_var, Range(loop.min, loop.extent))
        loop = dataclasses.replace(loop, body=self.visit(loop.body))
        result, outer = pipeline(loop, node.alloc_buffers, self.analyzer)
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

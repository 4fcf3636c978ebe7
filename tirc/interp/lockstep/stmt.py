"""Statements of a GPU kernel to closures `(frame) -> None` that run all lanes in lockstep.

`frame.mask` holds the lanes still executing (None: all). An `if` whose condition differs
between lanes runs both branches under complementary masks; a loop whose bounds differ runs to
the largest count, each lane masked past its own; `break` and `continue` drop lanes from the
mask (for the loop, or the rest of the iteration). A `Bind` under a mask only changes the
active lanes' values.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from tirc.interp.lockstep.calls import RULES as CALLS
from tirc.interp.lockstep.expr import (
    Eval,
    ExprCompiler,
    Unsupported,
    narrow,
    store_raw,
)
from tirc.interp.memory.lanes import (
    Frame,
    allocate_rows,
    fault_in_lane,
    first_lane,
)
from tirc.interp.memory.storage import SHARED_SCOPES, access_type
from tirc.interp.semantics import values as V
from tirc.interp.threads.context import Context
from tirc.interp.threads.kernel import COORDINATES
from tirc.ir import stmt as S
from tirc.ir.buffer import Buffer
from tirc.ir.expr import Call, IntImm, PrimExpr, Var
from tirc.ir.functor import Dispatch

Run = Callable[["Frame"], None]


def _union(a: np.ndarray | None, b: np.ndarray | None) -> np.ndarray | None:
    if a is None or b is None:
        return None
    return a | b


class StmtCompiler:
    def __init__(self, ctx: Context, known: set[Var], handles: set[Var], serial_threads: bool):
        self.exprs = ExprCompiler(ctx, known, handles, CALLS)
        self.ctx = ctx
        self.serial_threads = serial_threads

    def compile(self, stmt: S.Stmt) -> Run:
        rule = _RULES.get(type(stmt))
        if rule is None:
            raise Unsupported(type(stmt).__name__)
        return rule(self, stmt)

    def expr(self, expr: PrimExpr) -> Eval:
        return self.exprs.compile(expr)

    def define(self, var: Var) -> None:
        if var.dtype.is_handle:
            raise Unsupported("handle variable")
        self.exprs.known.add(var)

    def uniform_int(self, expr: PrimExpr) -> Callable[[Frame], int]:
        code = self.expr(expr)

        def value(frame: Frame) -> int:
            result = code(frame, frame.mask)
            if result.shape[0] != 1:
                raise Unsupported("a size that differs between threads")
            return int(result[0, 0])

        return value

    # thread bindings

    def thread_binding(
        self, tag: str, var: Var, start: PrimExpr | None, extent: PrimExpr, body: S.Stmt
    ) -> Run:
        """var := start + the lane's coordinate; lanes past the binding's extent skip body."""
        if tag not in COORDINATES:
            raise Unsupported(f"thread tag {tag}")
        low = self.expr(start) if start is not None else None
        size = self.expr(extent)
        self.define(var)
        inner = self.compile(body)
        kind = V.value_type(var.dtype)

        def bind(frame: Frame) -> None:
            coordinate = frame.lanes.coordinates[tag][:, None]
            value = coordinate.astype(kind)
            if low is not None:
                value = value + low(frame, frame.mask)
            frame.values[var] = value
            count = size(frame, frame.mask)
            if count.shape[0] == 1 and int(count[0, 0]) >= frame.lanes.extents[tag]:
                inner(frame)
                return
            outer = frame.mask
            frame.mask = narrow(outer, coordinate < count, frame.lanes.count)
            if frame.mask.any():
                inner(frame)
            frame.mask = outer

        return bind

    # memory

    def allocate(self, buffer: Buffer) -> Run:
        count = self.element_count(buffer)
        size = access_type(buffer.dtype).itemsize * buffer.dtype.lanes
        per_block = buffer.scope in SHARED_SCOPES
        data = buffer.data
        self.exprs.handles.add(data)

        def allocate(frame: Frame) -> None:
            rows = frame.lanes.blocks if per_block else frame.lanes.count
            frame.memory[data] = allocate_rows(rows, count(frame) * size, per_block)

        return allocate

    def element_count(self, buffer: Buffer) -> Callable[[Frame], int]:
        shape = [self.uniform_int(extent) for extent in buffer.shape]
        strides = [self.uniform_int(stride) for stride in buffer.strides]

        def count(frame: Frame) -> int:
            extents = [extent(frame) for extent in shape]
            if strides:
                steps = [stride(frame) for stride in strides]
                return 1 + sum((e - 1) * s for e, s in zip(extents, steps, strict=True))
            total = 1
            for extent in extents:
                total *= extent
            return total

        return count


_RULES: Dispatch[StmtCompiler, [], Run] = Dispatch("statement (lockstep)")


@_RULES.register(S.SeqStmt)
def _seq(compiler: StmtCompiler, stmt: S.SeqStmt) -> Run:
    parts = [compiler.compile(item) for item in stmt.stmts]

    def seq(frame: Frame) -> None:
        for part in parts:
            if frame.is_idle():
                return
            part(frame)

    return seq


@_RULES.register(S.Bind)
def _bind(compiler: StmtCompiler, stmt: S.Bind) -> Run:
    value = compiler.expr(stmt.value)
    var = stmt.var
    compiler.define(var)

    def bind(frame: Frame) -> None:
        new = value(frame, frame.mask)
        old = frame.values.get(var)
        if frame.mask is not None and old is not None:
            new = np.where(frame.mask[:, None], new, old)
        frame.values[var] = V.owned(new)

    return bind


@_RULES.register(S.AssertStmt)
def _assert(compiler: StmtCompiler, stmt: S.AssertStmt) -> Run:
    condition = compiler.expr(stmt.condition)
    message = f"{stmt.kind}: {' '.join(stmt.message) or 'assertion failed'}"
    site = compiler.ctx.site(stmt, "assert")

    def check(frame: Frame) -> None:
        holds = condition(frame, frame.mask)
        found = first_lane(~holds, frame.lanes, frame.mask)
        if found is not None:
            raise fault_in_lane(site, message, frame.lanes, found[0])

    return check


@_RULES.register(S.For)
def _for(compiler: StmtCompiler, stmt: S.For) -> Run:
    if stmt.kind is S.ForKind.THREAD_BINDING and not compiler.serial_threads:
        binding = stmt.thread_binding
        tag = binding.thread_tag if binding is not None else ""
        if not tag.startswith("vthread") and tag != "cthread":
            return compiler.thread_binding(tag, stmt.loop_var, stmt.min, stmt.extent, stmt.body)
    return _loop(compiler, stmt.loop_var, stmt.min, stmt.extent, stmt.step, stmt.body)


def _loop(
    compiler: StmtCompiler,
    var: Var,
    start: PrimExpr,
    extent: PrimExpr,
    step: PrimExpr | None,
    body: S.Stmt,
) -> Run:
    low = compiler.expr(start)
    count = compiler.expr(extent)
    stride = compiler.expr(step) if step is not None else None
    compiler.define(var)
    inner = compiler.compile(body)
    kind = V.value_type(var.dtype)

    def loop(frame: Frame) -> None:
        entry = frame.mask
        first, size = low(frame, entry), count(frame, entry)
        by = stride(frame, entry) if stride is not None else np.ones((1, 1), kind)
        frame.broken.append(None)
        try:
            if first.shape[0] == 1 and size.shape[0] == 1 and by.shape[0] == 1:
                begin, step_ = int(first[0, 0]), int(by[0, 0])
                for value in range(begin, begin + int(size[0, 0]), step_):
                    if not _iteration(frame, entry, None):
                        break
                    frame.values[var] = np.full((1, 1), value, kind)
                    inner(frame)
            else:
                _varying_loop(frame, entry, var, first, size, by, kind, inner)
        finally:
            frame.broken.pop()
            frame.mask = entry

    return loop


def _iteration(frame: Frame, entry: np.ndarray | None, within: np.ndarray | None) -> bool:
    """Sets the mask for the next iteration; False when no lane takes it."""
    broken = frame.broken[-1]
    mask = entry if within is None else (within if entry is None else entry & within)
    if broken is not None and broken.any():
        mask = ~broken if mask is None else mask & ~broken
    frame.mask = mask
    return mask is None or bool(mask.any())


def _varying_loop(
    frame: Frame,
    entry: np.ndarray | None,
    var: Var,
    first: np.ndarray,
    size: np.ndarray,
    by: np.ndarray,
    kind: np.dtype,
    inner: Run,
) -> None:
    lanes = frame.lanes.count
    start = np.broadcast_to(first[:, 0].astype(np.int64), (lanes,))
    step = np.broadcast_to(by[:, 0].astype(np.int64), (lanes,))
    extent = np.broadcast_to(size[:, 0].astype(np.int64), (lanes,))
    if (step <= 0).any():
        raise Unsupported("a loop step that is not positive")
    counts = np.maximum(-(-extent // step), 0)
    active = counts if entry is None else np.where(entry, counts, 0)
    for number in range(int(active.max(initial=0))):
        if not _iteration(frame, entry, number < counts):
            break
        frame.values[var] = (start + number * step).astype(kind)[:, None]
        inner(frame)


@_RULES.register(S.While)
def _while(compiler: StmtCompiler, stmt: S.While) -> Run:
    condition = compiler.expr(stmt.condition)
    inner = compiler.compile(stmt.body)

    def loop(frame: Frame) -> None:
        entry = frame.mask
        frame.broken.append(None)
        try:
            while True:
                if not _iteration(frame, entry, None):
                    break
                holds = condition(frame, frame.mask)
                if holds.shape[0] == 1:
                    if not holds[0, 0]:
                        break
                else:
                    leaving = narrow(frame.mask, ~holds, frame.lanes.count)
                    broken = frame.broken[-1]
                    frame.broken[-1] = leaving if broken is None else broken | leaving
                    if not _iteration(frame, entry, None):
                        break
                inner(frame)
        finally:
            frame.broken.pop()
            frame.mask = entry

    return loop


@_RULES.register(S.Break)
def _break(compiler: StmtCompiler, stmt: S.Break) -> Run:
    def leave(frame: Frame) -> None:
        if not frame.broken:
            raise Unsupported("break outside a loop")
        broken = frame.broken[-1]
        leaving = np.ones(frame.lanes.count, bool) if frame.mask is None else frame.mask
        frame.broken[-1] = leaving if broken is None else broken | leaving
        frame.mask = np.zeros(frame.lanes.count, dtype=bool)

    return leave


@_RULES.register(S.Continue)
def _continue(compiler: StmtCompiler, stmt: S.Continue) -> Run:
    def skip(frame: Frame) -> None:
        frame.mask = np.zeros(frame.lanes.count, dtype=bool)

    return skip


@_RULES.register(S.BufferStore)
def _store(compiler: StmtCompiler, stmt: S.BufferStore) -> Run:
    value = compiler.expr(stmt.value)
    locate = compiler.exprs.access(stmt.buffer, stmt.indices, stmt.predicate, stmt, "store to")
    dtype = stmt.buffer.dtype
    kind = access_type(dtype)

    def store(frame: Frame) -> None:
        values = value(frame, frame.mask)
        raw = values if values.dtype == kind else V.encode(values, dtype)
        store_raw(frame, locate(frame, frame.mask), raw, kind)

    return store


@_RULES.register(S.AllocBuffer)
def _alloc_buffer(compiler: StmtCompiler, stmt: S.AllocBuffer) -> Run:
    return compiler.allocate(stmt.buffer)


@_RULES.register(S.DeclBuffer)
def _decl_buffer(compiler: StmtCompiler, stmt: S.DeclBuffer) -> Run:
    buffer = stmt.buffer
    handles = compiler.exprs.handles
    if stmt.data is None or stmt.data is buffer.data:
        if buffer.data in handles:
            return lambda frame: None
        return compiler.allocate(buffer)
    source = stmt.data
    if not isinstance(source, Var) or source not in handles:
        raise Unsupported("a buffer declared over a computed pointer")
    handles.add(buffer.data)
    target = buffer.data

    def alias(frame: Frame) -> None:
        frame.memory[target] = frame.memory[source]

    return alias


@_RULES.register(S.AttrStmt)
def _attr(compiler: StmtCompiler, stmt: S.AttrStmt) -> Run:
    if stmt.key in ("thread_extent", "virtual_thread") and isinstance(stmt.node, S.IterVar):
        tag = stmt.node.thread_tag
        if stmt.key == "virtual_thread" or tag.startswith("vthread") or tag == "cthread":
            start = IntImm(0, stmt.value.dtype)
            return _loop(compiler, stmt.node.var, start, stmt.value, None, stmt.body)
        return compiler.thread_binding(tag, stmt.node.var, None, stmt.value, stmt.body)
    return compiler.compile(stmt.body)


@_RULES.register(S.IfThenElse)
def _if(compiler: StmtCompiler, stmt: S.IfThenElse) -> Run:
    condition = compiler.expr(stmt.condition)
    then_case = compiler.compile(stmt.then_case)
    else_case = compiler.compile(stmt.else_case) if stmt.else_case is not None else None

    def branch(frame: Frame) -> None:
        entry = frame.mask
        holds = condition(frame, entry)
        if holds.shape[0] == 1:
            if holds[0, 0]:
                then_case(frame)
            elif else_case is not None:
                else_case(frame)
            return
        count = frame.lanes.count
        frame.mask = narrow(entry, holds, count)
        if frame.mask.any():
            then_case(frame)
        after_then = frame.mask
        frame.mask = narrow(entry, ~holds, count)
        if else_case is not None and frame.mask.any():
            else_case(frame)
        frame.mask = _union(after_then, frame.mask)
        if frame.mask is not None and entry is None and frame.mask.all():
            frame.mask = None

    return branch


@_RULES.register(S.Evaluate)
def _evaluate(compiler: StmtCompiler, stmt: S.Evaluate) -> Run:
    if not isinstance(stmt.value, Call):
        return lambda frame: None
    value = compiler.expr(stmt.value)

    def evaluate(frame: Frame) -> None:
        value(frame, frame.mask)

    return evaluate

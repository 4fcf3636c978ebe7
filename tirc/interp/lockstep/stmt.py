"""Statements of a lockstep kernel: the thread model's source compiler, with a lane variant
of a rule where the Python text must differ (see expr).

`_mask` holds the lanes still executing (None: all). An `if` whose condition differs between
lanes runs both branches under complementary masks; a loop whose bounds differ runs to the
largest count, each lane masked past its own; `break` and `continue` drop lanes from the
mask (for the loop, or the rest of the iteration); where no lane leaves a loop alone, it is
the thread model's `for` or `while`. A `Bind` under a mask changes only the active lanes'
values.
"""

from __future__ import annotations

import copy

import numpy as np

from tirc.interp.lockstep import calls as _calls  # noqa: F401  (registers the call rules)
from tirc.interp.lockstep import wmma as _wmma  # noqa: F401  (registers the wmma rules)
from tirc.interp.lockstep.expr import LaneExprCompiler, LaneState, Mask, Unsupported, narrow, parts
from tirc.interp.memory.lanes import Frame, allocate_rows, fault_first
from tirc.interp.memory.storage import SHARED_SCOPES, access_type
from tirc.interp.semantics import values as V
from tirc.interp.threads import stmt as thread_rules
from tirc.interp.threads.context import Context, KernelState
from tirc.interp.threads.kernel import COORDINATES, launch_extents
from tirc.interp.threads.stmt import StmtCompiler
from tirc.ir import expr as E
from tirc.ir import stmt as S
from tirc.ir.expr import PrimExpr, Var
from tirc.ir.functor import Dispatch


def _merge(mask: Mask, new: np.ndarray, old: np.ndarray | None) -> np.ndarray:
    """A Bind under a mask: the new value in the active lanes, the old one elsewhere."""
    if mask is not None and old is not None:
        new = np.where(mask[:, None], new, old)
    return V.owned(new)


class LaneStmtCompiler(StmtCompiler):
    exprs: LaneExprCompiler

    def __init__(self, ctx: Context, lanes: LaneState):
        self.ctx = ctx
        self.exprs = LaneExprCompiler(ctx, lanes)
        self.lane = lanes
        self.masked = False  # whether _mask may be other than None here
        self.loops: list[str | None] = []  # per enclosing loop: its broken lanes' name
        # (None: a plain Python loop, left by `break` in every executing lane alike)

    def run_loop_body(self, body: S.Stmt, broken: str, check: bool = True) -> None:
        ctx = self.ctx
        if check:
            ctx.emit("if _mask is not None and not _mask.any():")
            with ctx.indented():
                ctx.emit("break")
        was = self.masked
        self.masked = True
        self.loops.append(broken)
        self.compile(body)
        self.loops.pop()
        self.masked = was

    def compile(self, stmt: S.Stmt) -> None:
        rule = _RULES.get(type(stmt))
        if rule is None:
            raise Unsupported(type(stmt).__name__)
        with self.ctx.at(stmt):
            rule(self, stmt)


_RULES: Dispatch[LaneStmtCompiler, [], None] = Dispatch("statement (lockstep)")


def _has_jump(stmt: S.Stmt) -> bool:
    """Whether stmt holds a break or continue of an enclosing loop (not of a loop inside)."""
    if isinstance(stmt, S.Break | S.Continue):
        return True
    if isinstance(stmt, S.For | S.While):
        return False
    return any(_has_jump(child) for child in parts(stmt))


@_RULES.register(S.SeqStmt)
def _seq(compiler: LaneStmtCompiler, stmt: S.SeqStmt) -> None:
    _sequence(compiler, stmt.stmts)


def _sequence(compiler: LaneStmtCompiler, items: tuple[S.Stmt, ...]) -> None:
    """After a statement that may stop lanes (break, continue), the rest runs only while
    some lane executes."""
    for index, item in enumerate(items):
        compiler.compile(item)
        if _has_jump(item) and index + 1 < len(items):
            compiler.ctx.emit("if _mask is None or _mask.any():")
            with compiler.ctx.indented():
                _sequence(compiler, items[index + 1 :])
            return


def _iteration(
    entry: np.ndarray | None, within: object, broken: np.ndarray | None
) -> np.ndarray | None:
    """The lanes that run the next iteration (None: all)."""
    mask = entry
    if within is not True:
        within = np.asarray(within).reshape(-1)
        mask = within.copy() if mask is None else mask & within
    if broken is not None:
        mask = ~broken if mask is None else mask & ~broken
    return mask


def _leave(broken: np.ndarray | None, mask: np.ndarray | None, count: int) -> np.ndarray:
    leaving = np.ones(count, bool) if mask is None else mask
    return leaving if broken is None else broken | leaving


def _union(a: np.ndarray | None, b: np.ndarray | None) -> np.ndarray | None:
    return None if a is None or b is None else a | b


def _loop_counts(
    first: np.ndarray, size: np.ndarray, by: np.ndarray, entry: np.ndarray | None, lanes: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    start = np.broadcast_to(np.asarray(first).reshape(-1).astype(np.int64), (lanes,))
    step = np.broadcast_to(np.asarray(by).reshape(-1).astype(np.int64), (lanes,))
    extent = np.broadcast_to(np.asarray(size).reshape(-1).astype(np.int64), (lanes,))
    if (step <= 0).any():
        raise Unsupported("a loop step that is not positive")
    counts = np.maximum(-(-extent // step), 0)
    active = counts if entry is None else np.where(entry, counts, 0)
    return start, step, counts, int(active.max(initial=0))


@_RULES.register(S.Bind)
def _bind(compiler: LaneStmtCompiler, stmt: S.Bind) -> None:
    var = stmt.var
    if var.dtype.is_handle:
        raise Unsupported("handle variable")
    if var not in compiler.lane.varying:
        thread_rules.bind(compiler, stmt)
        return
    value = compiler.exprs.compile(stmt.value)
    text = compiler.exprs.array(value, var.dtype)
    ctx = compiler.ctx
    name = ctx.bind(var)
    if compiler.masked:
        merge = compiler.exprs.name(_merge, "merge")
        ctx.emit(f"{name} = {merge}(_mask, {text}, {name})")
    else:
        ctx.emit(f"{name} = {compiler.exprs.name(V.owned, 'owned')}({text})")
    ctx.bounds[var] = (value.low, value.high) if not compiler.masked else (None, None)
    ctx.var_slots.pop(var, None)


@_RULES.register(S.For)
def _for(compiler: LaneStmtCompiler, stmt: S.For) -> None:
    binding = stmt.thread_binding
    tag = binding.thread_tag if binding is not None else ""
    if stmt.kind is S.ForKind.THREAD_BINDING and tag in COORDINATES:
        _thread_binding(compiler, tag, stmt.loop_var, stmt.min, stmt.extent, stmt.body)
        return
    _loop(compiler, stmt.loop_var, stmt.min, stmt.extent, stmt.step, stmt.body)


def _loop(
    compiler: LaneStmtCompiler,
    var: Var,
    start: PrimExpr,
    extent: PrimExpr,
    step: PrimExpr | None,
    body: S.Stmt,
) -> None:
    """A loop: the thread model's where bounds agree and no lane leaves it alone; else run
    to the largest count, each lane masked past its own and once it broke out."""
    if var not in compiler.lane.varying and not _has_jump(body):
        compiler.loops.append(None)
        thread_rules.serial_loop(compiler, var, start, extent, step, body)
        compiler.loops.pop()
        return
    ctx, exprs = compiler.ctx, compiler.exprs
    entry, broken = ctx.fresh("_entry"), ctx.fresh("_broken")
    ctx.emit(f"{entry} = _mask")
    ctx.emit(f"{broken} = None")
    iteration = exprs.name(_iteration, "iteration")
    kind = exprs.name(V.value_type(var.dtype), str(V.value_type(var.dtype)))
    if var in compiler.lane.varying:
        first, by, counts, trips, number = (
            ctx.fresh(hint) for hint in ("_first", "_by", "_counts", "_trips", "_i")
        )
        low = exprs.array(exprs.compile(start), start.dtype)
        size = exprs.array(exprs.compile(extent), extent.dtype)
        stride = exprs.array(exprs.compile(step), step.dtype) if step is not None else "1"
        counts_of = exprs.name(_loop_counts, "loop_counts")
        ctx.emit(
            f"{first}, {by}, {counts}, {trips} = "
            f"{counts_of}({low}, {size}, {stride}, {entry}, _lanes.count)"
        )
        ctx.emit(f"for {number} in range({trips}):")
        name = ctx.bind(var)
        with ctx.indented(loop=True):
            ctx.emit(f"_mask = {iteration}({entry}, {number} < {counts}, {broken})")
            ctx.emit(f"{name} = ({first} + {number} * {by}).astype({kind})[:, None]")
            compiler.run_loop_body(body, broken)
    else:
        low_code = exprs.compile(start)
        size_code = exprs.compile(extent)
        stride_text = exprs.compile(step).text if step is not None else "1"
        name = ctx.bind(var)
        ctx.emit(
            f"for {name} in range({low_code.text}, {low_code.text} + {size_code.text}, "
            f"{stride_text}):"
        )
        with ctx.indented(loop=True):
            ctx.emit(f"_mask = {iteration}({entry}, True, {broken})")
            compiler.run_loop_body(body, broken)
    ctx.emit(f"_mask = {entry}")


@_RULES.register(S.While)
def _while(compiler: LaneStmtCompiler, stmt: S.While) -> None:
    """The thread model's `while` where the condition agrees and no lane leaves alone; else
    lanes whose condition fails leave, as by `break`."""
    ctx, exprs = compiler.ctx, compiler.exprs
    if not compiler.lane.is_varying(stmt.condition) and not _has_jump(stmt.body):
        compiler.loops.append(None)
        thread_rules.repeat(compiler, stmt)
        compiler.loops.pop()
        return
    entry, broken = ctx.fresh("_entry"), ctx.fresh("_broken")
    iteration = exprs.name(_iteration, "iteration")
    ctx.emit(f"{entry}, {broken} = _mask, None")
    ctx.emit("while True:")
    with ctx.indented(loop=True):
        ctx.emit(f"_mask = {iteration}({entry}, True, {broken})")
        ctx.emit("if _mask is not None and not _mask.any():")
        with ctx.indented():
            ctx.emit("break")
        condition = exprs.array(exprs.compile(stmt.condition), stmt.condition.dtype)
        leave, narrow_ = exprs.name(_leave, "leave"), exprs.name(narrow, "narrow")
        ctx.emit(f"{broken} = {leave}({broken}, {narrow_}(_mask, ~{condition}, _lanes.count), 0)")
        ctx.emit(f"_mask = {iteration}({entry}, True, {broken})")
        compiler.run_loop_body(stmt.body, broken)
    ctx.emit(f"_mask = {entry}")


@_RULES.register(S.Break)
def _break(compiler: LaneStmtCompiler, stmt: S.Break) -> None:
    broken = compiler.loops[-1] if compiler.loops else None
    if broken is None:
        compiler.ctx.emit("break")
        return
    leave = compiler.exprs.name(_leave, "leave")
    compiler.ctx.emit(f"{broken} = {leave}({broken}, _mask, _lanes.count)")
    compiler.ctx.emit("_mask = _np.zeros(_lanes.count, bool)")


@_RULES.register(S.Continue)
def _continue(compiler: LaneStmtCompiler, stmt: S.Continue) -> None:
    if compiler.loops and compiler.loops[-1] is None:
        compiler.ctx.emit("continue")
        return
    compiler.ctx.emit("_mask = _np.zeros(_lanes.count, bool)")


def _thread_binding(
    compiler: LaneStmtCompiler,
    tag: str,
    var: Var,
    start: PrimExpr | None,
    extent: PrimExpr,
    body: S.Stmt,
) -> None:
    ctx = compiler.ctx
    kind = V.value_type(var.dtype)
    launched = ctx.kernel.extents[tag] if ctx.kernel is not None else None
    high = None if launched is None or launched.constant is None else launched.constant - 1
    name = ctx.bind(var, 0, high) if start is None else ctx.bind(var)
    text = f"_lanes.coordinates[{tag!r}][:, None].astype({compiler.exprs.name(kind, str(kind))})"
    if start is not None:
        low = compiler.exprs.compile(start)
        text = f"({text} + {low.text})"
    ctx.emit(f"{name} = {text}")
    size = compiler.exprs.compile(extent)
    if size.varying:
        raise Unsupported("a thread extent that differs between lanes")
    if launched is not None and size.text == launched.text:
        compiler.compile(body)
        return
    _branch(compiler, f"(_lanes.coordinates[{tag!r}][:, None] < {size.text})", body, None)


@_RULES.register(S.AttrStmt)
def _attr(compiler: LaneStmtCompiler, stmt: S.AttrStmt) -> None:
    if stmt.key in ("thread_extent", "virtual_thread") and isinstance(stmt.node, S.IterVar):
        tag = stmt.node.thread_tag
        if stmt.key == "virtual_thread" or tag.startswith("vthread") or tag == "cthread":
            start = E.IntImm(0, stmt.value.dtype)
            _loop(compiler, stmt.node.var, start, stmt.value, None, stmt.body)
            return
        if tag not in COORDINATES:
            raise Unsupported(f"thread tag {tag}")
        _thread_binding(compiler, tag, stmt.node.var, None, stmt.value, stmt.body)
        return
    compiler.compile(stmt.body)


@_RULES.register(S.IfThenElse)
def _if(compiler: LaneStmtCompiler, stmt: S.IfThenElse) -> None:
    if not compiler.lane.is_varying(stmt.condition):
        thread_rules.branch(compiler, stmt)
        return
    _branch(compiler, compiler.exprs.compile(stmt.condition).text, stmt.then_case, stmt.else_case)


def _branch(
    compiler: LaneStmtCompiler, condition: str, then_case: S.Stmt, else_case: S.Stmt | None
) -> None:
    """Each case under the lanes of _mask that take it; afterwards the lanes that did not
    break or continue in either."""
    ctx = compiler.ctx
    held, entry, after = ctx.fresh("_c"), ctx.fresh("_entry"), ctx.fresh("_after")
    narrow_ = compiler.exprs.name(narrow, "narrow")
    ctx.emit(f"{held}, {entry} = {condition}, _mask")
    was, compiler.masked = compiler.masked, True
    for case, taken in ((then_case, held), (else_case, f"~{held}")):
        ctx.emit(f"_mask = {narrow_}({entry}, {taken}, _lanes.count)")
        if case is not None:
            ctx.emit("if _mask.any():")
            with ctx.indented():
                compiler.compile(case)
        if case is then_case:
            ctx.emit(f"{after} = _mask")
    compiler.masked = was
    if not _has_jump(then_case) and (else_case is None or not _has_jump(else_case)):
        ctx.emit(f"_mask = {entry}")
        return
    union = compiler.exprs.name(_union, "union")
    ctx.emit(f"_mask = {union}({after}, _mask)")
    ctx.emit(f"if {entry} is None and _mask is not None and _mask.all():")
    with ctx.indented():
        ctx.emit("_mask = None")


@_RULES.register(S.BufferStore)
def _store_rule(compiler: LaneStmtCompiler, stmt: S.BufferStore) -> None:
    compiler.exprs.store(stmt)


@_RULES.register(S.AllocBuffer, S.DeclBuffer)
def _alloc(compiler: LaneStmtCompiler, stmt: S.AllocBuffer | S.DeclBuffer) -> None:
    buffer = stmt.buffer
    memories = compiler.lane.memories
    if isinstance(stmt, S.DeclBuffer) and stmt.data is not None and stmt.data is not buffer.data:
        if not isinstance(stmt.data, Var) or stmt.data not in memories:
            raise Unsupported("a buffer over a computed pointer")
        memories[buffer.data] = memories[stmt.data]
        compiler.ctx.names[buffer.data] = compiler.ctx.names[stmt.data]
        return
    if buffer.data in memories:
        return
    count = compiler.element_count(buffer)
    if count.varying:
        raise Unsupported("a size that differs between lanes")
    size = access_type(buffer.dtype).itemsize * buffer.dtype.lanes
    per_block = buffer.scope in SHARED_SCOPES
    name = compiler.ctx.fresh(f"{buffer.name}_m")
    rows = "_lanes.blocks" if per_block else "_lanes.count"
    allocate = compiler.exprs.name(allocate_rows, "allocate_rows")
    compiler.ctx.emit(f"{name} = {allocate}({rows}, {count.text} * {size}, {per_block})")
    memories[buffer.data] = name
    compiler.lane.scopes[buffer.data] = buffer.scope


@_RULES.register(S.AssertStmt)
def _assert(compiler: LaneStmtCompiler, stmt: S.AssertStmt) -> None:
    if not compiler.lane.is_varying(stmt.condition):
        thread_rules.check(compiler, stmt)
        return
    condition = compiler.exprs.compile(stmt.condition)
    message = f"{stmt.kind}: {' '.join(stmt.message) or 'assertion failed'}"
    site = compiler.ctx.site(stmt, "assert")
    check = compiler.exprs.name(_check_assert, "check_assert")
    compiler.ctx.emit(f"{check}({condition.text}, {site}, {message!r}, _frame, _mask)")


def _check_assert(holds: np.ndarray, site: int, message: str, frame: Frame, mask: Mask) -> None:
    fault_first(~holds, frame, mask, site, message)


@_RULES.register(S.Evaluate)
def _evaluate(compiler: LaneStmtCompiler, stmt: S.Evaluate) -> None:
    value = stmt.value
    if not isinstance(value, E.Call):
        return
    if value.op == "tvm_storage_sync":
        return  # lockstep order is a legal schedule of a race-free kernel
    code = compiler.exprs.compile(value)
    if not code.is_atom:
        compiler.ctx.emit(code.text)


_SAVED = (
    "names",
    "bounds",
    "views",
    "layouts",
    "storages",
    "slots",
    "var_slots",
    "affine",
    "kernel",
)


def compile_kernel(compiler: StmtCompiler, stmt: S.Stmt, free: tuple[Var, ...]) -> str | None:
    """Emits `def _lanes(_frame): ...` running the kernel whose outermost thread binding is
    stmt for a chunk of lanes (free: the variables it reads from outside); its name, or None
    where the kernel needs the thread model (nothing emitted then)."""
    ctx = compiler.ctx
    saved = {field: copy.copy(getattr(ctx, field)) for field in _SAVED}
    lengths = len(ctx.lines), len(ctx.sites)
    lanes = LaneState({var: ctx.scopes.get(var, "global") for var in free if var.dtype.is_handle})
    name = ctx.fresh("_lanes")
    try:
        lanes.scan(stmt)
        ctx.emit(f"def {name}(_frame):")
        with ctx.function_body(), ctx.indented(loop=True):
            ctx.slots.clear()  # nothing computed in the kernel moves out of it
            ctx.kernel = KernelState(COORDINATES, launch_extents(compiler, stmt))
            ctx.emit("_lanes, _mask, _np = _frame.lanes, None, " + ctx.constant(np, "numpy"))
            for var in free:
                if var.dtype.is_handle:
                    lanes.memories[var] = ctx.fresh(f"{var.name}_m")
                    memory = f"_frame.memory[{ctx.constant(var, 'var')}]"
                    ctx.emit(f"{lanes.memories[var]} = {memory}")
            for var in sorted(lanes.bound, key=lambda v: v.name):
                ctx.emit(f"{ctx.bind(var)} = None")  # a lane that never binds it keeps None
            LaneStmtCompiler(ctx, lanes).compile(stmt)
    except Unsupported:
        del ctx.lines[lengths[0] :], ctx.line_nodes[lengths[0] :], ctx.sites[lengths[1] :]
        return None
    finally:
        for field, value in saved.items():
            setattr(ctx, field, value)
    return name

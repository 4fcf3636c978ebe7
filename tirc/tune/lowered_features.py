"""Features of a candidate read from its lowered program: what the loops really came out as.

The scheduled program says what was asked for (a vectorize, an unroll pragma, a cache); the
lowered one says what happened: the vector width of each store, the loops unrolled into
copies, flat indices whose strides along the innermost loop can be read off, the allocations
compaction left. The candidate is lowered by the target's pipeline up to `unroll-loop`,
without `simplify` (a third of the time, and it changes no count read here), and with
unroll-loop marking the loops it unrolls instead of copying their bodies (the same decision,
without the copies to build and walk); each store is weighed by how often it runs, and counts
as many times in the code as the unrolled loops around it copy it. All counts are on a log2
scale.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from functools import cache

from tirc.ir import expr as E
from tirc.ir.buffer import Buffer
from tirc.ir.function import IRModule, PrimFunc
from tirc.ir.functor import uses_var, walk
from tirc.ir.node import Node
from tirc.ir.stmt import (
    AllocBuffer,
    AttrStmt,
    BufferStore,
    For,
    ForKind,
    IfThenElse,
    IterVar,
    SeqStmt,
    Stmt,
    While,
)
from tirc.transform import default_pipeline, run_pipeline
from tirc.transform.pass_base import ModulePass
from tirc.transform.passes.unroll_loop import UnrollLoop

SYMBOLIC_EXTENT = 64  # what a loop of symbolic extent counts as
# simplify changes no count read here; the allocation passes (two thirds of what is left)
# only shrink allocations, which _footprint measures from the accesses instead
SKIPPED_PASSES = frozenset({"simplify", "plan-buffer-allocation", "compact-buffer-allocation"})
NONLINEAR = -1  # a stride that is not a constant multiple of the loop variable

NAMES = (
    "float ops",
    "float add/sub",
    "float mul",
    "float div",
    "math calls",
    "integer ops",
    "compare/select/min/max",
    "casts",
    "vectorized share",
    "mean lanes",
    "bytes loaded, global",
    "bytes loaded, local/shared",
    "bytes stored, global",
    "bytes stored, local/shared",
    "loads invariant in the innermost loop",
    "loads contiguous in the innermost loop",
    "loads strided in the innermost loop",
    "loads of other strides",
    "parallel extent",
    "threads per block",
    "blocks",
    "stores in the code",
    "loop depth",
    "loop iterations",
    "dominant store: innermost extent",
    "dominant store: bytes per innermost iteration",
    "dominant store: lanes",
    "dominant store: runs",
    "dominant store: stores in its loop body",
    "dominant store: loads invariant there",
    "allocated bytes, local",
    "allocated bytes, shared",
    "allocated bytes, global",
    "float ops per global byte",
    "lowering failed",
)
LENGTH = len(NAMES)


@cache
def feature_passes(target: str) -> tuple[ModulePass, ...]:
    """The target's default pipeline up to unroll-loop, without simplify (passes are
    immutable values, so one tuple serves every candidate)."""
    passes: list[ModulePass] = []
    for pass_ in default_pipeline(target).passes:
        if isinstance(pass_, UnrollLoop):
            passes.append(dataclasses.replace(pass_, explicit_unroll=False))
            break
        if pass_.name not in SKIPPED_PASSES:
            passes.append(pass_)
    return tuple(passes)


def lowered_features(module: IRModule, func: str, target: str) -> list[float]:
    """The features of `func` in `module` (a scheduled candidate) once lowered for `target`
    ('cpu' or 'cuda'); a vector of zeros with the last entry 1 where lowering fails (the
    candidate will fail to build too, and the model learns that)."""
    try:
        lowered = run_pipeline(module, feature_passes(target))
        return features_of(lowered[func])
    except Exception:  # a candidate lowering rejects: scored as such, never a tuner crash
        return [0.0] * (LENGTH - 1) + [1.0]


@dataclass
class _Store:
    runs: int  # how many times it executes
    copies: int  # how many times it appears in the code (unrolled loops around it)
    lanes: int
    innermost: For | None
    loads: list[tuple[Buffer, int, int]]  # buffer, bytes, stride along the innermost loop
    stored_bytes: int
    stored_scope: str
    ops: dict[str, int]


@dataclass
class _Totals:
    stores: list[_Store] = field(default_factory=list)
    parallel: int = 1
    threads: dict[str, int] = field(default_factory=dict)
    depth: int = 0
    iterations: int = 0
    allocations: list[Buffer] = field(default_factory=list)
    # each access of a buffer, by its data variable: (flat index, lanes, whether it is a
    # store, the loops around it)
    accesses: dict[E.Var, list[tuple[E.PrimExpr, int, bool, list[For]]]] = field(
        default_factory=dict
    )

    def record(
        self, buffer: Buffer, indices: tuple[E.PrimExpr, ...], store: bool, loops: list[For]
    ) -> None:
        if indices:
            access = (indices[-1], indices[-1].dtype.lanes, store, loops)
            self.accesses.setdefault(buffer.data, []).append(access)


def features_of(func: PrimFunc) -> list[float]:
    """The features of a lowered function (flat buffers, vector stores, unrolled copies)."""
    totals = _Totals()
    _visit(func.body, [], totals)
    stores = totals.stores
    allocated: dict[str, int] = {}
    for buffer in totals.allocations:
        scope = buffer.scope
        kind = (
            "shared" if scope.startswith("shared") else "global" if scope == "global" else "local"
        )
        allocated[kind] = allocated.get(kind, 0) + _footprint(buffer, totals)
    ops: dict[str, float] = {}
    executions = sum(store.runs for store in stores) or 1
    vectorized = sum(store.runs for store in stores if store.lanes > 1)
    lanes = sum(store.runs * store.lanes for store in stores) / executions
    traffic = {"loaded global": 0.0, "loaded local": 0.0, "stored global": 0.0, "stored local": 0.0}
    strides = [0.0, 0.0, 0.0, 0.0]  # invariant, contiguous, strided, other
    for store in stores:
        for kind, count in store.ops.items():
            ops[kind] = ops.get(kind, 0.0) + count * store.runs
        for buffer, nbytes, stride in store.loads:
            where = "global" if buffer.scope == "global" else "local"
            traffic[f"loaded {where}"] += nbytes * store.runs
            strides[_stride_class(stride)] += store.runs
        where = "global" if store.stored_scope == "global" else "local"
        traffic[f"stored {where}"] += store.stored_bytes * store.runs
    loads = sum(strides) or 1.0
    flops = sum(ops.get(kind, 0.0) for kind in ("fadd", "fmul", "fdiv", "fmath"))
    dominant = max(stores, key=lambda s: s.runs * max(s.lanes, 1), default=None)
    global_bytes = traffic["loaded global"] + traffic["stored global"]
    threads = math.prod(v for k, v in totals.threads.items() if k.startswith("threadIdx"))
    blocks = math.prod(v for k, v in totals.threads.items() if k.startswith("blockIdx"))
    return [
        _log(flops),
        _log(ops.get("fadd", 0.0)),
        _log(ops.get("fmul", 0.0)),
        _log(ops.get("fdiv", 0.0)),
        _log(ops.get("fmath", 0.0)),
        _log(ops.get("int", 0.0)),
        _log(ops.get("select", 0.0)),
        _log(ops.get("cast", 0.0)),
        vectorized / executions,
        _log(lanes),
        _log(traffic["loaded global"]),
        _log(traffic["loaded local"]),
        _log(traffic["stored global"]),
        _log(traffic["stored local"]),
        *(count / loads for count in strides),
        _log(totals.parallel),
        _log(threads),
        _log(blocks),
        _log(sum(store.copies for store in stores)),
        float(totals.depth),
        _log(totals.iterations),
        *_dominant(dominant, stores),
        *(_log(allocated.get(kind, 0)) for kind in ("local", "shared", "global")),
        _log(flops / global_bytes) if global_bytes else 0.0,
        0.0,
    ]


def _dominant(store: _Store | None, stores: list[_Store]) -> list[float]:
    """The store that does the most work: its innermost loop, the bytes one iteration of
    that loop moves (accesses that do not move with it stay in registers), its lanes, how
    often it runs, and the stores of its loop body (the register tile as unrolling left it)
    with the share of their loads that the loop does not move."""
    if store is None:
        return [0.0] * 6
    moving = sum(nbytes for _, nbytes, stride in store.loads if stride != 0)
    inner = _extent(store.innermost) if store.innermost is not None else 1
    siblings = [s for s in stores if s.innermost is store.innermost]
    copies = sum(s.copies for s in siblings)
    loads = [stride for s in siblings for _, _, stride in s.loads]
    invariant = sum(1 for stride in loads if stride == 0) / max(len(loads), 1)
    return [
        _log(inner),
        _log(moving + store.stored_bytes),
        _log(store.lanes),
        _log(store.runs),
        _log(copies),
        invariant,
    ]


def _stride_class(stride: int) -> int:
    if stride == 0:
        return 0
    if stride == 1:
        return 1
    return 3 if stride == NONLINEAR else 2


def _visit(stmt: Stmt, loops: list[For], totals: _Totals) -> None:
    """`loops`: the loops around `stmt`, outermost first, a thread launched by a
    thread_extent attribute among them as a loop bound to its thread."""
    if isinstance(stmt, For):
        below = loops + [stmt]
        totals.depth = max(totals.depth, len(below))
        totals.iterations += math.prod(_extent(loop) for loop in below)
        if stmt.kind is ForKind.PARALLEL and not any(
            loop.kind is ForKind.PARALLEL for loop in loops
        ):
            totals.parallel = max(totals.parallel, _extent(stmt))
        if stmt.thread_binding is not None:
            _bind(totals, stmt.thread_binding, _extent(stmt))
        _visit(stmt.body, below, totals)
    elif isinstance(stmt, SeqStmt):
        for item in stmt.stmts:
            _visit(item, loops, totals)
    elif isinstance(stmt, IfThenElse):
        _visit(stmt.then_case, loops, totals)
        if stmt.else_case is not None:
            _visit(stmt.else_case, loops, totals)
    elif isinstance(stmt, AttrStmt):
        if stmt.key == "thread_extent" and isinstance(stmt.node, IterVar):
            value = stmt.value
            extent = value.value if isinstance(value, E.IntImm) else SYMBOLIC_EXTENT
            _bind(totals, stmt.node, extent)
            thread = For(
                stmt.node.var,
                E.IntImm(0, value.dtype),
                E.IntImm(extent, value.dtype),
                ForKind.THREAD_BINDING,
                stmt.body,
                stmt.node,
            )
            loops = loops + [thread]
        _visit(stmt.body, loops, totals)
    elif isinstance(stmt, While):
        _visit(stmt.body, loops, totals)
    elif isinstance(stmt, AllocBuffer):
        totals.allocations.append(stmt.buffer)
    elif isinstance(stmt, BufferStore):
        totals.stores.append(_store(stmt, loops, totals))


def _bind(totals: _Totals, iter_var: IterVar, extent: int) -> None:
    tag = iter_var.thread_tag
    if tag:
        totals.threads[tag] = max(totals.threads.get(tag, 1), extent)


def _footprint(buffer: Buffer, totals: _Totals) -> int:
    """The bytes of `buffer` that one iteration of the innermost loop around all its accesses
    fills, as compact-buffer-allocation would leave them: per store into it, its lanes times
    the extent of each loop below that one whose variable its index uses (a tile is a dense
    box once compacted; for shared memory every thread's part counts), bounded by the whole
    size. A guarded store (a cooperative fetch's last round) counts its guarded-off part too:
    a few percent over, at most."""
    whole = _bytes(buffer)
    accesses = totals.accesses.get(buffer.data, [])
    if not accesses:
        return whole
    common = 0
    first = accesses[0][3]
    while common < len(first) and all(
        len(loops) > common and loops[common] is first[common] for *_, loops in accesses
    ):
        common += 1
    stores = [access for access in accesses if access[2]] or accesses
    elements = 0
    for index, lanes, _, loops in stores:
        count = lanes
        below = loops[common:]
        if buffer.scope.startswith("shared"):
            below += [loop for loop in loops[:common] if _is_thread_index(loop)]
        for loop in below:
            count *= _extent(loop) if uses_var(index, loop.loop_var) else 1
        elements = max(elements, count)
    element_bytes = max(buffer.dtype.bits * buffer.dtype.lanes // 8, 1)
    return min(elements * element_bytes, whole)


def _is_thread_index(loop: For) -> bool:
    binding = loop.thread_binding
    return binding is not None and binding.thread_tag.startswith("threadIdx")


def _store(store: BufferStore, loops: list[For], totals: _Totals) -> _Store:
    serial = [
        loop for loop in loops if loop.thread_binding is None and loop.kind is not ForKind.UNROLLED
    ]
    unrolled = [loop for loop in loops if loop.kind is ForKind.UNROLLED]
    innermost = serial[-1] if serial else None
    var = innermost.loop_var if innermost is not None else None
    loads: list[tuple[Buffer, int, int]] = []
    ops: dict[str, int] = {}

    def visit(node: Node) -> None:
        if isinstance(node, E.BufferLoad):
            totals.record(node.buffer, node.indices, False, loops)
            stride = _stride(node.indices[-1], var) if node.indices and var is not None else 0
            loads.append((node.buffer, _access_bytes(node.dtype), stride))
            return
        kind = _op_kind(node)
        if kind is not None:
            lanes = node.dtype.lanes if isinstance(node, E.PrimExpr) else 1
            ops[kind] = ops.get(kind, 0) + lanes

    walk(store.value, visit)
    totals.record(store.buffer, store.indices, True, loops)
    lanes = store.value.dtype.lanes
    return _Store(
        math.prod(_extent(loop) for loop in loops),
        math.prod(_extent(loop) for loop in unrolled),
        lanes,
        innermost,
        loads,
        _access_bytes(store.value.dtype),
        store.buffer.scope,
        ops,
    )


def _op_kind(node: Node) -> str | None:
    if isinstance(node, E.Cast):
        return "cast"
    if isinstance(node, (E.Select, E.Min, E.Max, *E.COMPARE_OPS)):
        return "select"
    if isinstance(node, E.Call):
        if node.op == "if_then_else":
            return "select"
        return "fmath" if node.dtype.is_float else None
    if isinstance(node, (E.Add, E.Sub, E.Mul, E.Div, E.Mod, E.FloorDiv, E.FloorMod)):
        if not node.dtype.is_float:
            return "int"
        if isinstance(node, (E.Add, E.Sub)):
            return "fadd"
        return "fmul" if isinstance(node, E.Mul) else "fdiv"
    return None


def _stride(index: E.PrimExpr, var: E.Var) -> int:
    """How far the flat index moves when `var` steps by one: a constant, or NONLINEAR."""
    if index is var:
        return 1
    if isinstance(index, (E.IntImm, E.FloatImm)):
        return 0
    if isinstance(index, E.Var):
        return 0
    if isinstance(index, E.Ramp):
        return _stride(index.base, var)
    if isinstance(index, E.Broadcast):
        return _stride(index.value, var)
    if isinstance(index, E.Cast):
        return _stride(index.value, var)
    if isinstance(index, (E.Add, E.Sub)):
        a, b = _stride(index.a, var), _stride(index.b, var)
        if NONLINEAR in (a, b):
            return NONLINEAR
        return a + b if isinstance(index, E.Add) else a - b
    if isinstance(index, E.Mul):
        a, b = _stride(index.a, var), _stride(index.b, var)
        if a == 0 and b == 0:
            return 0
        constant = index.b if a != 0 else index.a
        moving = a if a != 0 else b
        if isinstance(constant, E.IntImm) and moving != NONLINEAR:
            return moving * constant.value
        return NONLINEAR
    return NONLINEAR if uses_var(index, var) else 0


def _extent(loop: For) -> int:
    return loop.extent.value if isinstance(loop.extent, E.IntImm) else SYMBOLIC_EXTENT


def _access_bytes(dtype: object) -> int:
    bits = getattr(dtype, "bits", 8) * getattr(dtype, "lanes", 1)
    return max(bits // 8, 1)


def _bytes(buffer: Buffer) -> int:
    count = math.prod(
        dim.value if isinstance(dim, E.IntImm) else SYMBOLIC_EXTENT for dim in buffer.shape
    )
    return count * max(buffer.dtype.bits * buffer.dtype.lanes // 8, 1)


def _log(value: float) -> float:
    return math.log2(value + 1)

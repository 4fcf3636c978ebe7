"""inject-warp-specialization: a software-pipelined loop annotated
`software_pipeline_warp_specialize` (the producer's thread count) becomes a producer/consumer
split of its block's threads, synchronized by an mbarrier ring in shared memory, instead of
inject-software-pipeline's rotated prologue, body and epilogue.

Expects opaque blocks with thread-binding loops (after unify-thread-binding, right before
inject-software-pipeline); leaves the same, the annotated loops gone. The loop's stage-0
statements (`software_pipeline_stage`) are the producer's: copies into shared memory, reading
global memory only; the statements of the later stages are the consumers'. With P producer
threads, a block of T threads (threadIdx extents, constants) and S the ring's depth (the
versions inject-software-pipeline would give the buffers the copies fill):

- the block grows by P threads: its outermost thread dimension d (threadIdx.z, else y, else x)
  by P / (the threads below d), which must divide; the producers are the threads with
  `t_d >= extent(d)`, linear ids [T, T + P), a warpgroup of their own when P and T are
  multiples of 128;
- the buffers the copies write get S versions (an outer axis, indexed `i % S` for iteration
  i = k - k_min) and are allocated around the split with `full[S]` and `empty[S]`, uint64
  mbarriers in shared memory that thread 0 initializes (P, or 2P below, and T arrivals a
  phase, or T / 32 for wgmma consumers below) before a `__syncthreads`;
- the producer runs the loop: from its S-th iteration on it waits for `empty[i % S]` (parity
  (i / S + 1) % 2: the consumers' release of that version's last use), runs the copies with
  its thread index rebased (`t_d - extent(d)`, so they are the consumers' own copy code; with
  P < T each producer thread runs the copies of threads p, p + P, ...), then arrives on
  `full[i % S]`. Its stores come before its arrival, which releases them (mbarrier
  release/acquire; the interpreter reports a race if an arrival precedes the stores). With
  `software_pipeline_async_stages` [0] the copies are marked `async_scope` (cp.async after
  inject-ptx-async-copy, which needs no commit group here) and each producer thread arrives
  twice an iteration, `full` counting 2P: after issuing (for the stores that stay
  synchronous) and by `cp.async.mbarrier.arrive.noinc` (`T.ptx_mbarrier_arrive_cp_async`)
  when its copies land;
- with `software_pipeline_tma` 1 (sm_90: the backends refuse the mbarriers before it, at the
  loop) each copy becomes one `T.ptx_tma_load` that the first producer thread issues into
  version i % S, after `T.ptx_mbarrier_arrive_expect_tx` tells `full[i % S]` (counting 1
  arrival, initialized before a `fence.proxy.async`) the bytes of all the iteration's boxes,
  which complete the phase when they land. A copy qualifies (tirc/transform/passes/
  _tma_copy.py) when, over the consumer threads and its own loops, it reads a box of a dense
  global buffer parameter (its corner the indices at the first thread and iteration) and
  stores each element of its shared buffer once, laid out as the box row-major or as a 32,
  64 or 128-byte TMA swizzle of it (what inject-permuted-layout makes of rows of 32 and 64
  halves), under conditions, if any, on the global buffer's bounds (TMA's zero fill) or on
  the threads and its own loops alone (which of them store); boxes of at most 256 elements
  a dimension, rows a multiple of 16 bytes, each version 128-byte (1024 swizzled) aligned.
  Where one box does not do, the fewest equal slabs of the buffer that are each such a box
  (B's (N / 64, 64, 64) tiles) make one load each, all in the expected bytes. Threads the
  copy does not name store alike: one load stands for them. Another copy is refused at its
  store, saying why. P is then the producer threads the
  block grows by, one warp or more (a warpgroup for setmaxnreg), of which one issues and the
  others idle;
- the consumers run everything else the block did, the loop with its later-stage statements
  in program order on version i % S, after waiting for `full[i % S]` (parity (i / S) % 2),
  and each consumer thread arrives on `empty[i % S]` at the end of the iteration (its own
  reads are what the arrival orders before the refill);
- where the later stages are wgmmas of one shape (a tensor intrinsic's, with its proxy
  fence, barrier, wgmma fence, commit and wait) that read in shared memory only the ring's
  versions, and the consumers are whole warps, the consumers' iteration is the fast GEMMs'
  (matmul_fp16_hopper.tir's): wait for `full[i % S]` (with producers that store or cp.async
  themselves, then one `fence.proxy.async`: their writes are the generic proxy's, which the
  wait acquires and the fence orders before the wgmmas' async-proxy reads; TMA writes
  through the async proxy and needs none); one wgmma fence; the wgmmas, their loops of
  constant extent unrolled (each wgmma's descriptors constants); one commit;
  `wait_group(1)`; then, from the second iteration on, `__syncwarp` and one arrival on
  `empty[(i - 1) % S]` a consumer warp, by its first lane (`empty` counting T / 32: the
  warp's barrier orders each lane's retirement before that arrival, which releases them
  all); `wait_group(0)` after the loop. Each consumer thread's own wait on `full` acquires
  what the producers wrote, and the consumers write no shared memory in the loop: the
  intrinsic's barrier orders nothing. `wait_group(1)` retires all but the iteration's group,
  so the previous version's reads are done when it is released, while this one's wgmmas run.
  Released one iteration late, a version is refilled an iteration later: with S >= 2 the
  fill for iteration j waits for the release of j - S, which the consumers make in iteration
  j - S + 1 <= j - 1, before they wait for fill j; with S = 1 they would wait for a fill that
  waits for them, and the release stays in its iteration, after `wait_group(0)`;
- with `software_pipeline_max_registers` = [producer, consumer] (multiples of 8 in 24..256;
  P and T multiples of 128; sm_90a) the producer starts with `setmaxnreg.dec` and the
  consumers with `setmaxnreg.inc`.

The split is wrapped in `T.attr(0, "warp_specialize_scope", P)`, the consumers' branch its
`else`: thread-sync puts no `__syncthreads` inside it (the branches diverge; the mbarriers
order the ring); a barrier the consumers need among themselves, theirs or one the consumers'
code already had (a tensor intrinsic's), becomes the named barrier `bar.sync 1, T`, and one
the producer would need is refused. Refused, at the loop or the offending statement: a loop
not pipelined, not serial, inside another loop or condition of the kernel, or outside thread
bindings; asynchronous stages other than stage 0, or with `software_pipeline_tma` (0 or 1); a
stage-0 statement that is not a copy from global into shared memory; a consumer that writes
what the copies fill, or a copy that reads what the consumers write; thread extents that are
not constants, or that P does not divide as above. Architectures before sm_90 are refused by
the backends at the first mbarrier call, located at the loop.

    for ty in T.thread_binding(4, "threadIdx.y"):        for ty in T.thread_binding(8, ...):
      for tx in T.thread_binding(32, "threadIdx.x"):       for tx in ...:
        for k in T.serial(K, annotations={                   S = alloc((2, ...)); full, empty
            stage: [0, 1], warp_specialize: 128}):           if ty == 0 and tx == 0: init(...)
          S[ty, tx] = A[k, ty * 32 + tx]        ->           __syncthreads()
          C[...] += S[...]                                   if ty >= 4:
                                                               for k in range(K):
                                                                 if k >= 2: wait(empty[k % 2])
                                                                 S[k % 2, ty - 4, tx] = A[...]
                                                                 arrive(full[k % 2])
                                                             else:
                                                               for k in range(K):
                                                                 wait(full[k % 2])
                                                                 C[...] += S[k % 2, ...]
                                                                 arrive(empty[k % 2])
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

from tirc.analysis.arith.analyzer import Analyzer
from tirc.analysis.regions import infer_access_regions
from tirc.diagnostics import DiagnosticError, Note, Span
from tirc.ir import dtype as dt
from tirc.ir import expr as E
from tirc.ir import stmt as S
from tirc.ir.buffer import Buffer, Range, make_buffer
from tirc.ir.function import PrimFunc
from tirc.ir.functor import Mutator, Visitor, walk
from tirc.ir.intrinsics import Effect, lookup
from tirc.ir.named_barrier import WARP
from tirc.ir.node import Node
from tirc.transform.fresh_copy import fresh_copy
from tirc.transform.pass_base import Dialect, FunctionPass
from tirc.transform.passes._pipeline_annotations import (
    ASYNC_STAGES,
    ORDER,
    STAGE,
    body_block,
    body_statements,
    int_list,
)
from tirc.transform.passes._pipeline_versions import (
    Accesses,
    Versioner,
    version_counts,
    versioned_buffer,
)
from tirc.transform.passes._tma_copy import TMA, box_copies, tma_loads, uses_tma
from tirc.transform.passes._wgmma_consumer import one_group, warp_arrival, wgmma_issue, wgmma_wait
from tirc.transform.passes.inject_software_pipeline import ASYNC_SCOPE, _wrap_inside

WARP_SPECIALIZE = "software_pipeline_warp_specialize"
MAX_REGISTERS = "software_pipeline_max_registers"
# around the producer/consumer split: its consumers synchronize by a named barrier (thread-sync)
SCOPE = "warp_specialize_scope"
_KEYS = (STAGE, ORDER, ASYNC_STAGES, WARP_SPECIALIZE, MAX_REGISTERS, TMA)


def split_branches(node: S.AttrStmt) -> tuple[list[S.Stmt], S.IfThenElse, S.Stmt] | None:
    """The split's form in a SCOPE attribute: (bindings before it, which common-subexpr-elim
    may have put there; `if <producers>: ... else: <consumers>`; the consumers' branch), or
    None."""
    stmts = list(node.body.stmts) if isinstance(node.body, S.SeqStmt) else [node.body]
    branches = stmts[-1]
    if (
        not isinstance(branches, S.IfThenElse)
        or branches.else_case is None
        or not all(isinstance(stmt, S.Bind) for stmt in stmts[:-1])
    ):
        return None
    return stmts[:-1], branches, branches.else_case


_THREAD_TAGS = ("threadIdx.x", "threadIdx.y", "threadIdx.z")
_SHARED = ("shared", "shared.dyn")
_REGISTER_FILE = 65536  # 32-bit registers an SM has for the threads of a block
_U64 = dt.parse_dtype("uint64")


def _thread_tag(loop: S.Stmt) -> str | None:
    if isinstance(loop, S.For) and loop.thread_binding is not None:
        tag = loop.thread_binding.thread_tag
        return tag if tag in _THREAD_TAGS else None
    return None


def _annotated(node: Node) -> list[S.For]:
    found: list[S.For] = []

    def look(item: Node) -> None:
        if isinstance(item, S.For) and WARP_SPECIALIZE in item.annotations:
            found.append(item)

    walk(node, look)
    return found


def _positive_int(loop: S.For, key: str) -> int:
    value = loop.annotations.get(key)
    if isinstance(value, E.IntImm):
        value = value.value
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise DiagnosticError.at(loop.span, f"the loop's '{key}' must be a positive integer")
    return value


class _CopyCheck(Visitor):
    """A stage-0 statement must be a copy into shared memory of values read from global
    memory: the first access or call that is not is reported."""

    def __init__(self, loop: S.For) -> None:
        self.loop = loop

    def refuse(self, node: Node, what: str) -> None:
        raise DiagnosticError.at(
            getattr(node, "span", None) or self.loop.span,
            f"a warp-specialized loop's stage-0 statements are the producer's copies into "
            f"shared memory: this {what}",
            Note("the loop", self.loop.span),
        )

    def visit_BufferStore(self, node: S.BufferStore) -> None:
        if node.buffer.scope not in _SHARED:
            self.refuse(node, f"writes '{node.buffer.name}' in '{node.buffer.scope}' memory")
        self.generic_visit(node)

    def visit_BufferLoad(self, node: E.BufferLoad) -> None:
        if node.buffer.scope != "global":
            self.refuse(node, f"reads '{node.buffer.name}' in '{node.buffer.scope}' memory")
        self.generic_visit(node)

    def visit_Call(self, node: E.Call) -> None:
        intrinsic = lookup(node.op)
        if intrinsic is None or intrinsic.effect is not Effect.PURE:
            self.refuse(node, f"calls T.{node.op}")
        self.generic_visit(node)


def _defined(node: Node) -> set[E.Var]:
    """The variables `node` binds (loops, `Bind`s)."""
    found: set[E.Var] = set()

    def look(item: Node) -> None:
        if isinstance(item, S.For):
            found.add(item.loop_var)
        elif isinstance(item, S.Bind):
            found.add(item.var)

    walk(node, look)
    return found


def _vars(node: Node) -> list[E.Var]:
    found: list[E.Var] = []

    def look(item: Node) -> None:
        if isinstance(item, E.Var):
            found.append(item)

    walk(node, look)
    return found


def _check_free_vars(body: S.Stmt, loop: S.For, copies: list[S.Stmt]) -> None:
    """The producer runs the copies outside the kernel body: they may not use its variables."""
    inner = set().union(*map(_defined, copies)) | {loop.loop_var}
    outside = _defined(body) - inner
    for copy in copies:
        used = [var for var in _vars(copy) if var in outside]
        if used:
            raise DiagnosticError.at(
                copy.span or loop.span,
                f"this copy of a warp-specialized loop uses '{used[0].name}', bound in the "
                "kernel around the loop, where the producer threads do not run",
                Note("the loop", loop.span),
            )


def _path(stmt: S.Stmt, target: S.For) -> list[S.Stmt] | None:
    """The statements from `stmt` down to `target` (both included), or None."""
    if stmt is target:
        return [stmt]
    children: tuple[S.Stmt, ...]
    if isinstance(stmt, S.SeqStmt):
        children = stmt.stmts
    elif isinstance(stmt, S.SBlockRealize):
        children = (stmt.block,)
    elif isinstance(stmt, S.SBlock):
        children = (stmt.body,)
    elif isinstance(stmt, (S.For, S.While, S.AttrStmt)):
        children = (stmt.body,)
    elif isinstance(stmt, S.IfThenElse):
        children = (stmt.then_case,) + ((stmt.else_case,) if stmt.else_case else ())
    else:
        return None
    for child in children:
        found = _path(child, target)
        if found is not None:
            return [stmt, *found]
    return None


class _Replace(Mutator):
    """The loop replaced, and the hoisted buffers' allocations dropped from the blocks."""

    def __init__(self, loop: S.For, replacement: S.Stmt, hoisted: set[E.Var]) -> None:
        self.loop, self.replacement, self.hoisted = loop, replacement, hoisted

    def visit_For(self, node: S.For) -> S.Stmt:
        return self.replacement if node is self.loop else self.generic_visit(node)

    def visit_SBlock(self, node: S.SBlock) -> S.SBlock:
        node = self.generic_visit(node)
        kept = tuple(b for b in node.alloc_buffers if b.data not in self.hoisted)
        if len(kept) == len(node.alloc_buffers):
            return node
        return dataclasses.replace(node, alloc_buffers=kept)

    def visit_PrimExpr(self, node: E.PrimExpr) -> E.PrimExpr:
        return node


@dataclass
class _Threads:
    """The block's thread loops (innermost last) and the dimension that grows."""

    loops: list[S.For]
    extents: dict[str, int]
    grown: str  # the tag of the dimension the producers are added to
    step: int  # threads of that dimension's index a producer thread adds
    producers: int

    @property
    def total(self) -> int:
        return math.prod(self.extents.values())

    def var(self, tag: str) -> E.Var:
        return next(loop.loop_var for loop in self.loops if _thread_tag(loop) == tag)


def _threads(chain: list[S.For], loop: S.For, producers: int) -> _Threads:
    extents: dict[str, int] = {}
    for thread in chain:
        tag = _thread_tag(thread)
        assert tag is not None
        if not isinstance(thread.extent, E.IntImm) or not E.is_const_int(thread.min, 0):
            raise DiagnosticError.at(
                thread.span or loop.span,
                f"warp specialization needs constant thread extents: {tag} is not",
                Note("the warp-specialized loop", loop.span),
            )
        extents[tag] = thread.extent.value
    grown = next(tag for tag in reversed(_THREAD_TAGS) if tag in extents)
    below = math.prod(
        extents[tag] for tag in _THREAD_TAGS[: _THREAD_TAGS.index(grown)] if tag in extents
    )
    total = math.prod(extents.values())
    shape = " x ".join(f"{tag}={extents[tag]}" for tag in _THREAD_TAGS if tag in extents)
    if producers % 32 or producers % below or total % producers:
        raise DiagnosticError.at(
            loop.span,
            f"cannot add {producers} producer threads to a block of {shape}: the producer count "
            f"must be a multiple of 32 and of {below} (the threads below {grown}) that divides "
            f"the block's {total} threads",
        )
    return _Threads(chain, extents, grown, producers // below, producers)


def _thread_copies(
    copies: list[S.Stmt],
    versions: dict[E.Var, tuple[Buffer, E.PrimExpr]],
    threads: _Threads,
    asynchronous: bool,
    span: Span | None,
) -> S.Stmt:
    """The copies on their versions, as the producer threads run them: with the thread index
    rebased onto the consumers' (each producer thread the copies of threads p, p + P, ...)."""
    versioned = [Versioner(versions).visit(copy) for copy in copies]
    if asynchronous:
        versioned = [_wrap_inside(copy, ASYNC_SCOPE, 1) for copy in versioned]
    work = S.seq(*versioned)
    grown_var = threads.var(threads.grown)
    base = E.Sub(grown_var, E.IntImm(threads.extents[threads.grown], grown_var.dtype))
    rounds = threads.total // threads.producers
    if rounds == 1:
        return fresh_copy(work, {grown_var: base})
    r = E.Var("r", grown_var.dtype)
    step = E.IntImm(threads.step, grown_var.dtype)
    rebased = fresh_copy(work, {grown_var: E.Add(base, E.Mul(r, step))})
    zero, count = E.IntImm(0, r.dtype), E.IntImm(rounds, r.dtype)
    return S.For(r, zero, count, S.ForKind.SERIAL, rebased, span=span)


def _registers(loop: S.For, producers: int, consumers: int) -> tuple[int, int] | None:
    value = loop.annotations.get(MAX_REGISTERS)
    if value is None:
        return None
    counts = int_list(loop, MAX_REGISTERS, 2)
    for count in counts:
        if count % 8 or not 24 <= count <= 256:
            raise DiagnosticError.at(
                loop.span,
                f"the loop's '{MAX_REGISTERS}' are setmaxnreg counts: multiples of 8 from 24 to "
                f"256, not {count}",
            )
    if producers % 128 or consumers % 128:
        raise DiagnosticError.at(
            loop.span,
            f"setmaxnreg acts on whole warpgroups: '{MAX_REGISTERS}' needs producer and consumer "
            f"thread counts that are multiples of 128, not {producers} and {consumers}",
        )
    if counts[0] * producers + counts[1] * consumers > _REGISTER_FILE:
        raise DiagnosticError.at(
            loop.span,
            f"'{MAX_REGISTERS}' asks for {counts[0]} x {producers} + {counts[1]} x {consumers} "
            f"registers, more than the {_REGISTER_FILE} of an SM",
        )
    return counts[0], counts[1]


def _specialize(
    chain: list[S.For], body: S.Stmt, loop: S.For, analyzer: Analyzer, tensors: set[E.Var]
) -> S.Stmt:
    """The kernel body `body` (inside the thread loops `chain`) with `loop` split into a
    producer and consumers; the caller grows the thread loop. `tensors`: the data of the
    function's buffer parameters (what a TMA load may read)."""
    path = _path(body, loop)
    assert path is not None
    for outer in path[:-1]:
        if not isinstance(outer, (S.SeqStmt, S.SBlock, S.SBlockRealize)) or (
            isinstance(outer, S.SBlockRealize)
            and (outer.block.iter_vars or not E.is_const_int(outer.predicate, 1))
        ):
            raise DiagnosticError.at(
                loop.span,
                "a warp-specialized loop must sit directly in its kernel's thread loops (blocks "
                "around it are fine), not in another loop or condition",
                Note("inside this", outer.span),
            )
    if STAGE not in loop.annotations:
        raise DiagnosticError.at(
            loop.span, f"'{WARP_SPECIALIZE}' needs a software-pipelined loop ('{STAGE}')"
        )
    asynchronous = ASYNC_STAGES in loop.annotations
    tma = uses_tma(loop)
    if asynchronous and set(int_list(loop, ASYNC_STAGES, None)) != {0}:
        raise DiagnosticError.at(
            loop.span,
            f"with '{WARP_SPECIALIZE}', '{ASYNC_STAGES}' may name stage 0 only: the producer's "
            "copies are the asynchronous ones",
        )
    if loop.kind is not S.ForKind.SERIAL:
        raise DiagnosticError.at(loop.span, "only a serial loop can be warp-specialized")
    block = body_block(loop)
    stmts = body_statements(block.body if block is not None else loop.body)
    stages = int_list(loop, STAGE, len(stmts))
    orders = int_list(loop, ORDER, len(stmts)) if ORDER in loop.annotations else stages
    if max(stages) == 0 or min(stages) != 0:
        raise DiagnosticError.at(
            loop.span,
            "a warp-specialized loop needs its copies in stage 0 and its compute in later stages",
        )
    producer = [i for i, stage in enumerate(stages) if stage == 0]
    consumer = [i for i, stage in enumerate(stages) if stage > 0]
    for index in producer:
        _CopyCheck(loop).visit(stmts[index])
    accesses = []
    for stmt in stmts:
        collector = Accesses()
        collector.visit(stmt)
        accesses.append(collector)
    filled = set().union(*(accesses[i].writes for i in producer))
    for c in consumer:
        clash = accesses[c].writes & (filled | set().union(*(accesses[i].reads for i in producer)))
        if clash:
            raise DiagnosticError.at(
                stmts[c].span or loop.span,
                f"this consumer statement writes '{min(v.name for v in clash)}', which the "
                "warp-specialized loop's producer copies fill or read",
                Note("the loop", loop.span),
            )
        early = [p for p in producer if p > c and accesses[c].reads & accesses[p].writes]
        if early:
            raise DiagnosticError.at(
                stmts[c].span or loop.span,
                "this consumer statement reads what a later copy of the same iteration writes",
                Note("the copy", stmts[early[0]].span),
            )
    _check_free_vars(body, loop, [stmts[i] for i in producer])

    # the buffers the copies fill, allocated in the loop's blocks or around it
    allocated = {
        b.data: b
        for s in [*path, *([block] if block else [])]
        if isinstance(s, S.SBlock)
        for b in s.alloc_buffers
    }
    missing = [v for v in filled if v not in allocated]
    if missing:
        name = min(v.name for v in missing)
        raise DiagnosticError.at(
            loop.span,
            f"the warp-specialized loop's copies fill '{name}', which is not allocated in the "
            "kernel around the loop: the pass cannot give it the ring's versions",
        )
    hoisted = sorted((allocated[v] for v in filled), key=lambda b: b.name)
    counts = version_counts(tuple(hoisted), accesses, stages, orders)
    depth = max(counts.values())
    ring = {b.data: versioned_buffer(b, depth) for b in hoisted}

    producers = _positive_int(loop, WARP_SPECIALIZE)
    threads = _threads(chain, loop, producers)
    consumers = threads.total
    registers = _registers(loop, producers, consumers)
    extents = {threads.var(tag): extent for tag, extent in threads.extents.items()}
    copies = [stmts[i] for i in producer]
    boxes = box_copies(loop, copies, extents, tensors, analyzer) if tma else []

    dtype = loop.loop_var.dtype
    span = loop.span

    def const(value: int) -> E.IntImm:
        return E.IntImm(value, dtype)

    def iteration_of(var: E.Var) -> tuple[E.PrimExpr, E.PrimExpr, E.PrimExpr]:
        """(version, use count, iteration) of iteration `var` of the loop."""
        inner = Analyzer()
        inner.ranges.update(analyzer.ranges)
        inner.bind(var, Range(loop.min, loop.extent))
        i = inner.simplify(E.Sub(var, loop.min))
        return (
            inner.simplify(E.FloorMod(i, const(depth))),
            inner.simplify(E.FloorDiv(i, const(depth))),
            i,
        )

    full = make_buffer("full", (E.IntImm(depth, dt.INT32),), _U64, "shared")
    empty = make_buffer("empty", (E.IntImm(depth, dt.INT32),), _U64, "shared")
    keep = S.Attrs(tuple((k, v) for k, v in loop.annotations.items if k not in _KEYS))

    # consumers: the loop's later stages on version i % S, between full and empty
    version, use, iteration = iteration_of(loop.loop_var)
    versions = {data: (buffer, version) for data, buffer in ring.items()}
    parity = E.FloorMod(use, const(2))
    work = [Versioner(versions).visit(stmts[i]) for i in consumer]
    issued = wgmma_issue(work, {b.data for b in ring.values()}) if consumers % WARP == 0 else None
    after_loop: list[S.Stmt] = []
    lane_zero = _lane_zero(threads, analyzer)
    if issued is None:
        release = [*work, S.evaluate_call("ptx_mbarrier_arrive", empty.data, version, span=span)]
    elif depth == 1:
        release = [*one_group(issued, span), wgmma_wait(0, span)]
        release += warp_arrival(empty.data, version, lane_zero, span)
    else:  # the previous version released once its group retired: one group stays in flight
        previous = analyzer.simplify(E.FloorMod(E.Sub(iteration, const(1)), const(depth)))
        arrive = S.seq(*warp_arrival(empty.data, previous, lane_zero, span))
        not_first = E.GE(iteration, const(1))
        release = [*one_group(issued, span), wgmma_wait(1, span)]
        release.append(S.IfThenElse(not_first, arrive, span=span))
        after_loop = [wgmma_wait(0, span)]
    # the wgmma consumers arrive once a warp, the others once a thread
    empty_count = consumers if issued is None else consumers // WARP
    acquire = [S.evaluate_call("ptx_mbarrier_wait", full.data, version, parity, span=span)]
    if issued is not None and not tma:  # the producers' stores, for the wgmmas' async proxy
        acquire.append(S.evaluate_call("ptx_fence_proxy_async", span=span))
    consumer_body: S.Stmt = S.seq(*acquire, *release)
    if block is not None:
        inner_block = dataclasses.replace(
            block,
            body=consumer_body,
            alloc_buffers=tuple(b for b in block.alloc_buffers if b.data not in ring),
        )
        reads, writes = infer_access_regions(inner_block)
        inner_block = dataclasses.replace(inner_block, reads=reads, writes=writes)
        consumer_body = S.SBlockRealize((), E.IntImm(1, dt.BOOL), inner_block, span=block.span)
    consumer_loop = dataclasses.replace(loop, body=consumer_body, annotations=keep)
    consumer_branch = _Replace(loop, S.seq(consumer_loop, *after_loop), set(ring)).visit(body)

    grown_var = threads.var(threads.grown)
    if tma:  # the loads of one thread: the first producer
        work = tma_loads(boxes, ring, version, full)
        issuer: E.PrimExpr = E.EQ(
            grown_var, E.IntImm(threads.extents[threads.grown], grown_var.dtype)
        )
        for thread in threads.loops:
            if thread.loop_var is not grown_var:
                zero = E.IntImm(0, thread.loop_var.dtype)
                issuer = E.And(issuer, E.EQ(thread.loop_var, zero))
    else:
        work = [
            _thread_copies([stmts[i] for i in producer], versions, threads, asynchronous, span),
            S.evaluate_call("ptx_mbarrier_arrive", full.data, version, span=span),
        ]
        if asynchronous:
            work.append(
                S.evaluate_call("ptx_mbarrier_arrive_cp_async", full.data, version, span=span)
            )
    wait_empty = S.IfThenElse(
        E.GE(iteration, const(depth)),
        S.evaluate_call(
            "ptx_mbarrier_wait",
            empty.data,
            version,
            E.FloorMod(E.Add(use, const(1)), const(2)),
            span=span,
        ),
        span=span,
    )
    producer_loop = S.For(
        loop.loop_var, loop.min, loop.extent, S.ForKind.SERIAL, S.seq(wait_empty, *work), span=span
    )
    producer_branch: S.Stmt = fresh_copy(producer_loop, {})
    if tma:
        producer_branch = S.IfThenElse(issuer, producer_branch, span=span)
    if registers is not None:
        producer_branch = S.seq(_setmaxnreg("dec", registers[0], span), producer_branch)
        consumer_branch = S.seq(_setmaxnreg("inc", registers[1], span), consumer_branch)

    # with cp.async each producer thread arrives after its stores and when its copies land;
    # with TMA one thread arrives, and the loads' bytes complete the phase
    full_count = 1 if tma else producers * (2 if asynchronous else 1)
    first = E.IntImm(1, dt.BOOL)
    first_thread: E.PrimExpr = first
    for thread in threads.loops:
        test = E.EQ(thread.loop_var, E.IntImm(0, thread.loop_var.dtype))
        first_thread = test if first_thread is first else E.And(first_thread, test)
    s = E.Var("s", dt.INT32)
    init: S.Stmt = S.For(
        s,
        E.IntImm(0, dt.INT32),
        E.IntImm(depth, dt.INT32),
        S.ForKind.SERIAL,
        S.seq(
            S.evaluate_call("ptx_mbarrier_init", full.data, s, full_count, span=span),
            S.evaluate_call("ptx_mbarrier_init", empty.data, s, empty_count, span=span),
        ),
        span=span,
    )
    if tma:  # the barriers initialized before the TMA unit (the async proxy) completes on them
        init = S.seq(init, S.evaluate_call("ptx_fence_proxy_async", span=span))
    init = S.IfThenElse(first_thread, init, span=span)
    sync = S.storage_sync("shared", span)
    is_producer = E.GE(grown_var, E.IntImm(threads.extents[threads.grown], grown_var.dtype))
    split = S.AttrStmt(
        E.IntImm(0, dt.INT32),
        SCOPE,
        E.IntImm(producers, dt.INT32),
        S.IfThenElse(is_producer, producer_branch, consumer_branch, span=span),
        span=span,
    )
    wrapper = S.SBlock(
        "warp_specialized",
        (),
        (),
        (),
        S.seq(init, sync, split),
        alloc_buffers=(*ring.values(), full, empty),
        span=span,
    )
    reads, writes = infer_access_regions(wrapper)
    wrapper = dataclasses.replace(wrapper, reads=reads, writes=writes)
    return S.SBlockRealize((), E.IntImm(1, dt.BOOL), wrapper, span=span)


def _lane_zero(threads: _Threads, analyzer: Analyzer) -> E.PrimExpr:
    """Whether a consumer thread is the first lane of its warp (its linear index, x fastest,
    a multiple of the warp size)."""
    linear: E.PrimExpr | None = None
    stride = 1
    for tag in _THREAD_TAGS:
        if tag in threads.extents:
            var = threads.var(tag)
            term = var if stride == 1 else E.Mul(var, E.IntImm(stride, var.dtype))
            linear = term if linear is None else E.Add(linear, term)
            stride *= threads.extents[tag]
    assert linear is not None  # a split has thread loops
    zero, warp = E.IntImm(0, linear.dtype), E.IntImm(WARP, linear.dtype)
    return analyzer.simplify(E.EQ(E.FloorMod(linear, warp), zero))


def _setmaxnreg(direction: str, count: int, span: Span | None) -> S.Evaluate:
    return S.evaluate_call("ptx_setmaxnreg", E.StringImm(direction), count, span=span)


class _Specializer(Mutator):
    def __init__(self, tensors: set[E.Var]) -> None:
        self.analyzer = Analyzer()
        self.tensors = tensors  # the function's buffer parameters' data

    def visit_For(self, node: S.For) -> S.Stmt:
        self.analyzer.bind(node.loop_var, Range(node.min, node.extent))
        if _thread_tag(node) is None:
            return self.generic_visit(node)
        chain = [node]
        body = node.body
        while _thread_tag(body) is not None:
            assert isinstance(body, S.For)
            chain.append(body)
            self.analyzer.bind(body.loop_var, Range(body.min, body.extent))
            body = body.body
        loops = _annotated(body)
        if not loops:
            return node
        if len(loops) > 1:
            raise DiagnosticError.at(
                loops[1].span,
                "a kernel can have one warp-specialized loop",
                Note("the first", loops[0].span),
            )
        inner_threads: list[Node] = []

        def look(item: Node) -> None:
            if isinstance(item, S.Stmt) and _thread_tag(item) is not None:
                inner_threads.append(item)

        walk(body, look)
        if inner_threads:
            raise DiagnosticError.at(
                getattr(inner_threads[0], "span", None) or loops[0].span,
                "warp specialization needs the kernel's thread bindings around its whole body: "
                "this one is inside it",
                Note("the warp-specialized loop", loops[0].span),
            )
        result = _specialize(chain, body, loops[0], self.analyzer, self.tensors)
        threads = _threads(chain, loops[0], _positive_int(loops[0], WARP_SPECIALIZE))
        for thread in reversed(chain):
            if _thread_tag(thread) == threads.grown:
                extent = E.IntImm(
                    threads.extents[threads.grown] + threads.step, thread.extent.dtype
                )
                result = dataclasses.replace(thread, extent=extent, body=result)
            else:
                result = dataclasses.replace(thread, body=result)
        return result

    def visit_PrimExpr(self, node: E.PrimExpr) -> E.PrimExpr:
        return node


@dataclass(frozen=True)
class InjectWarpSpecialization(FunctionPass):
    name = "inject-warp-specialization"
    expects = Dialect.OPAQUE_BLOCKS
    leaves = Dialect.OPAQUE_BLOCKS

    def run_function(self, func: PrimFunc) -> PrimFunc:
        body = _Specializer({buffer.data for _, buffer in func.buffer_map}).visit(func.body)
        left = _annotated(body)
        if left:
            raise DiagnosticError.at(
                left[0].span,
                "a warp-specialized loop must be inside its kernel's threadIdx bindings",
            )
        return func if body is func.body else dataclasses.replace(func, body=body)

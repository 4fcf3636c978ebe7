"""`T.parallel` loops run on OpenMP: the body is outlined into `void f(void *context)`, whose
context holds every value the body uses from outside, and the enclosing function calls
`GOMP_parallel(f, context, 0, 0)` (libgomp's entry, what gcc emits for `#pragma omp parallel`).
Each thread runs one contiguous chunk of the iterations (a static schedule). A failed
assertion inside stores a status the caller returns. Nested parallel loops run serially.

Adjacent parallel loops of one sequence (nothing between them) share one parallel region, so
that the team is forked and joined once: each thread runs its share of the first loop, waits
at `GOMP_barrier()` for the others, then runs its share of the next loop.

    for c in T.parallel(64): pad[c, ...] = ...        GOMP_parallel(f, ctx)  where f:
    for o in T.parallel(8):  out[o, ...] = pad[...]  ->   for c in my share of 0..64: ...
                                                          GOMP_barrier()
                                                          if status == 0:
                                                              for o in my share of 0..8: ...

A thread whose assertion fails stores the status and goes on to the barrier (every thread
must meet each barrier, or the others would wait forever); after a barrier a failed status
skips the remaining loops, as the serial program would have stopped there.
"""

from __future__ import annotations

from collections.abc import Sequence

from llvmlite import ir

from tirc.codegen.llvm import types as T
from tirc.codegen.llvm.emitter import Emitter, emit_counted_loop, free_all
from tirc.codegen.llvm.streaming import emit_fence, sfence
from tirc.ir import expr as E
from tirc.ir import stmt as S
from tirc.ir.buffer import Buffer
from tirc.ir.expr import Var
from tirc.ir.functor import walk
from tirc.ir.node import Node

FAILED = -1
STATUS_ALIGN = 4


def used_vars(*nodes: Node) -> list[Var]:
    """Every Var the nodes mention, buffers' data and shapes included, in first-use order."""
    found: dict[Var, None] = {}

    def visit(node: Node) -> None:
        if isinstance(node, Var):
            found.setdefault(node, None)
        elif isinstance(node, Buffer):
            found.setdefault(node.data, None)
            for part in (*node.shape, *node.strides, node.elem_offset):
                if part is not None:
                    walk(part, visit)

    for node in nodes:
        walk(node, visit)
    return list(found)


def parallel_runs(stmts: Sequence[S.Stmt]) -> list[S.Stmt | tuple[S.For, ...]]:
    """The statements of a sequence with each run of two or more adjacent parallel loops as
    one tuple. A later loop of a run computes its bounds in every thread after the barrier,
    so only bounds without calls (which could have effects) join a run."""
    result: list[S.Stmt | tuple[S.For, ...]] = []
    run: list[S.For] = []

    def flush() -> None:
        if len(run) > 1:
            result.append(tuple(run))
        else:
            result.extend(run)
        run.clear()

    for stmt in stmts:
        if not (isinstance(stmt, S.For) and stmt.kind is S.ForKind.PARALLEL):
            flush()
            result.append(stmt)
            continue
        if run and not _pure_bounds(stmt):
            flush()
        run.append(stmt)
    flush()
    return result


def _pure_bounds(loop: S.For) -> bool:
    calls: list[Node] = []

    def visit(node: Node) -> None:
        if isinstance(node, E.Call):
            calls.append(node)

    walk(loop.min, visit)
    walk(loop.extent, visit)
    return not calls


def emit_parallel_for(em: Emitter, loop: S.For) -> None:
    emit_parallel_loops(em, (loop,))


def emit_parallel_loops(em: Emitter, loops: Sequence[S.For]) -> None:
    """One parallel region running `loops` one after the other (see the module's text)."""
    builder = em.builder
    first = loops[0]
    begin = em.expr(first.min)
    extent = em.expr(first.extent)
    loop_vars = {loop.loop_var for loop in loops}
    mentioned = used_vars(
        first.body,
        *(loop.step for loop in loops if loop.step is not None),
        *(part for loop in loops[1:] for part in (loop.min, loop.extent, loop.body)),
    )
    captured = [var for var in mentioned if var in em.env and var not in loop_vars]
    values = [em.env[var] for var in captured]
    status = em.entry_alloca(T.I32, align=STATUS_ALIGN)
    builder.store(ir.Constant(T.I32, 0), status)
    fields = [begin.type, extent.type, T.POINTER] + [value.type for value in values]
    context_type = ir.LiteralStructType(fields)
    context = em.entry_alloca(context_type, align=16)
    for position, value in enumerate([begin, extent, status, *values]):
        slot = builder.gep(
            context,
            [ir.Constant(T.I32, 0), ir.Constant(T.I32, position)],
            source_etype=context_type,
        )
        builder.store(value, slot)

    outlined = _outline(em, loops, context_type, captured)
    gomp = em.declare("GOMP_parallel", T.VOID, [T.POINTER, T.POINTER, T.I32, T.I32])
    builder.call(gomp, [outlined, context, ir.Constant(T.I32, 0), ir.Constant(T.I32, 0)])
    failed_block, done = em.new_block("parallel.failed"), em.new_block("parallel.done")
    result = builder.load(status, typ=T.I32)
    builder.cbranch(builder.icmp_signed("!=", result, ir.Constant(T.I32, 0)), failed_block, done)
    builder.position_at_end(failed_block)
    em.fail(em)
    builder.position_at_end(done)


def _outline(
    em: Emitter, loops: Sequence[S.For], context_type: ir.LiteralStructType, captured: list[Var]
) -> ir.Function:
    name = f"{em.symbol}.parallel.{em.outlined}"
    em.outlined += 1
    function = ir.Function(em.module, ir.FunctionType(T.VOID, [T.POINTER]), name)
    function.linkage = "internal"
    function.args[0].add_attribute("noalias")
    function.append_basic_block("entry")
    builder = ir.IRBuilder(function.append_basic_block("start"))
    context = function.args[0]

    def field(position: int, align: int = 0) -> ir.Value:
        slot = builder.gep(
            context,
            [ir.Constant(T.I32, 0), ir.Constant(T.I32, position)],
            source_etype=context_type,
        )
        value = builder.load(slot, typ=context_type.elements[position])
        if align:  # the pointer's alignment, which the parent knew, for LLVM to use here
            value.set_metadata("align", em.module.add_metadata([ir.Constant(T.I64, align)]))
        return value

    begin, extent, status = field(0), field(1), field(2)
    after: list[ir.Block] = []  # where the loop being emitted goes when it ends or fails
    can_fail: list[bool] = []  # whether some emitted loop stores a failed status

    def fail(child: Emitter) -> None:
        can_fail.append(True)
        # atomic, as other threads may store it too or read it; an exchange, because
        # llvmlite's atomic store wants a typed pointer (on the failure path only)
        child.builder.atomic_rmw("xchg", status, ir.Constant(T.I32, FAILED), "monotonic")
        child.builder.branch(after[-1])

    child = Emitter(em.module, function, builder, fail, in_parallel=True, symbol=name)
    child.streaming, child.alignment = em.streaming, dict(em.alignment)
    child.registers = em.registers
    for position, var in enumerate(captured):
        child.env[var] = field(3 + position, em.alignment.get(var, 0))
    threads = builder.call(em.declare("omp_get_num_threads", T.I32, []), [])
    thread = builder.call(em.declare("omp_get_thread_num", T.I32, []), [])
    for position, loop in enumerate(loops):
        after.append(child.new_block(f"parallel.{loop.loop_var.name}.end"))
        if position > 0:
            if can_fail:
                passed = child.new_block(f"parallel.{loop.loop_var.name}")
                failed = builder.load_atomic(status, "monotonic", STATUS_ALIGN, typ=T.I32)
                ok = builder.icmp_signed("==", failed, ir.Constant(T.I32, 0))
                builder.cbranch(ok, passed, after[-1])
                builder.position_at_end(passed)
            begin, extent = child.expr(loop.min), child.expr(loop.extent)
        step = child.expr(loop.step) if loop.step is not None else None
        low, high = _share(builder, begin, extent, step, threads, thread)
        child.frees.append([])
        one = ir.Constant(begin.type, 1)
        emit_counted_loop(child, loop.loop_var, low, high, step or one, loop.body)
        free_all(child, child.frees.pop())
        if not builder.block.is_terminated:
            builder.branch(after[-1])
        builder.position_at_end(after[-1])
        if position + 1 < len(loops):
            if child.streamed:  # the next loop's threads must see the streamed stores
                builder.call(sfence(em.module), [])
            builder.call(em.declare("GOMP_barrier", T.VOID, []), [])
    builder.ret_void()
    if child.streamed:
        emit_fence(em.module, function)
    child.finish()
    return function


def _share(
    builder: ir.IRBuilder,
    begin: ir.Value,
    extent: ir.Value,
    step: ir.Value | None,
    threads: ir.Value,
    thread: ir.Value,
) -> tuple[ir.Value, ir.Value]:
    """[low, high): this thread's contiguous chunk of the iterations begin .. begin+extent,
    taken `step` apart (a loop the pipeline left uncanonicalized): low stays on that grid."""
    counter_type = begin.type
    threads = _resize(builder, threads, counter_type)
    thread = _resize(builder, thread, counter_type)
    one = ir.Constant(counter_type, 1)
    if step is None:
        chunk = builder.sdiv(builder.sub(builder.add(extent, threads), one), threads)
    else:
        count = builder.sdiv(builder.sub(builder.add(extent, step), one), step)
        per_thread = builder.sdiv(builder.sub(builder.add(count, threads), one), threads)
        chunk = builder.mul(per_thread, step)
    low = builder.add(begin, builder.mul(thread, chunk))
    end = builder.add(begin, extent)
    high = builder.add(low, chunk)
    high = builder.select(builder.icmp_signed("<", high, end), high, end)
    return low, high


def _resize(builder: ir.IRBuilder, value: ir.Value, typ: ir.IntType) -> ir.Value:
    if typ.width > 32:
        return builder.sext(value, typ)
    if typ.width < 32:
        return builder.trunc(value, typ)
    return value

"""`T.parallel` loops run on OpenMP: the body is outlined into `void f(void *context)`, whose
context holds every value the body uses from outside, and the enclosing function calls
`GOMP_parallel(f, context, 0, 0)` (libgomp's entry, what gcc emits for `#pragma omp parallel`).
Each thread runs one contiguous chunk of the iterations (a static schedule). A failed
assertion inside stores a status the caller returns. Nested parallel loops run serially.
"""

from __future__ import annotations

from llvmlite import ir

from tirc.codegen.llvm import types as T
from tirc.codegen.llvm.emitter import Emitter
from tirc.codegen.llvm.stmt import emit_counted_loop, free_all
from tirc.codegen.llvm.streaming import emit_fence
from tirc.ir import stmt as S
from tirc.ir.buffer import Buffer
from tirc.ir.expr import Var
from tirc.ir.functor import walk
from tirc.ir.node import Node

FAILED = -1


def used_vars(stmt: S.Stmt) -> list[Var]:
    """Every Var the statement mentions, buffers' data and shapes included, in first-use order."""
    found: dict[Var, None] = {}

    def visit(node: Node) -> None:
        if isinstance(node, Var):
            found.setdefault(node, None)
        elif isinstance(node, Buffer):
            found.setdefault(node.data, None)
            for part in (*node.shape, *node.strides, node.elem_offset):
                if part is not None:
                    walk(part, visit)

    walk(stmt, visit)
    return list(found)


def emit_parallel_for(em: Emitter, loop: S.For) -> None:
    builder = em.builder
    begin = em.expr(loop.min)
    extent = em.expr(loop.extent)
    captured = [var for var in used_vars(loop.body) if var in em.env and var is not loop.loop_var]
    values = [em.env[var] for var in captured]
    status = em.entry_alloca(T.I32, align=4)
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

    outlined = _outline(em, loop, context_type, captured)
    gomp = em.declare("GOMP_parallel", T.VOID, [T.POINTER, T.POINTER, T.I32, T.I32])
    builder.call(gomp, [outlined, context, ir.Constant(T.I32, 0), ir.Constant(T.I32, 0)])
    failed_block, done = em.new_block("parallel.failed"), em.new_block("parallel.done")
    result = builder.load(status, typ=T.I32)
    builder.cbranch(builder.icmp_signed("!=", result, ir.Constant(T.I32, 0)), failed_block, done)
    builder.position_at_end(failed_block)
    em.fail(em)
    builder.position_at_end(done)


def _outline(
    em: Emitter, loop: S.For, context_type: ir.LiteralStructType, captured: list[Var]
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

    def fail(child: Emitter) -> None:
        child.builder.store(ir.Constant(T.I32, FAILED), status)
        child.builder.ret_void()

    child = Emitter(em.module, function, builder, fail, in_parallel=True, symbol=name)
    child.streaming, child.alignment = em.streaming, dict(em.alignment)
    for position, var in enumerate(captured):
        child.env[var] = field(3 + position, em.alignment.get(var, 0))
    counter_type = begin.type
    threads = builder.call(em.declare("omp_get_num_threads", T.I32, []), [])
    thread = builder.call(em.declare("omp_get_thread_num", T.I32, []), [])
    threads = _resize(builder, threads, counter_type)
    thread = _resize(builder, thread, counter_type)
    one = ir.Constant(counter_type, 1)
    chunk = builder.sdiv(builder.sub(builder.add(extent, threads), one), threads)
    low = builder.add(begin, builder.mul(thread, chunk))
    end = builder.add(begin, extent)
    high = builder.add(low, chunk)
    high = builder.select(builder.icmp_signed("<", high, end), high, end)
    child.frees.append([])
    emit_counted_loop(child, loop.loop_var, low, high, one, loop.body)
    free_all(child, child.frees.pop())
    if not builder.block.is_terminated:
        builder.ret_void()
    if child.streamed:
        emit_fence(em.module, function)
    child.finish()
    return function


def _resize(builder: ir.IRBuilder, value: ir.Value, typ: ir.IntType) -> ir.Value:
    if typ.width > 32:
        return builder.sext(value, typ)
    if typ.width < 32:
        return builder.trunc(value, typ)
    return value

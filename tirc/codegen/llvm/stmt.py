"""Statements to control flow, one rule per IR class (`STMT_RULES`).

Loops are counted with a phi in a header block; `T.parallel` loops go to `parallel` to be
outlined, adjacent ones of a sequence into one OpenMP region. An allocation lives on the
stack when it is small and of constant size, otherwise on the heap until the end of its
enclosing sequence.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from llvmlite import ir

from tirc.codegen.llvm import types as T
from tirc.codegen.llvm.emitter import Loop, unsupported
from tirc.codegen.llvm.memory import emit_store
from tirc.ir import expr as E
from tirc.ir import stmt as S

if TYPE_CHECKING:
    from tirc.codegen.llvm.emitter import Emitter, StmtRule

STACK_LIMIT_BYTES = 32 * 1024
"""Larger allocations go to the heap: OpenMP worker threads have small stacks."""


def _seq(em: Emitter, stmt: S.SeqStmt) -> None:
    from tirc.codegen.llvm.parallel import emit_parallel_loops, parallel_runs

    em.frees.append([])
    for child in stmt.stmts if em.in_parallel else parallel_runs(stmt.stmts):
        if isinstance(child, tuple):  # adjacent parallel loops: one OpenMP region
            emit_parallel_loops(em, child)
        else:
            em.stmt(child)
    free_all(em, em.frees.pop())


def free_all(em: Emitter, pointers: list[ir.Value]) -> None:
    if not pointers or em.builder.block.is_terminated:
        return
    free = em.declare("free", T.VOID, [T.POINTER])
    for pointer in reversed(pointers):
        em.builder.call(free, [pointer])


def _bind(em: Emitter, stmt: S.Bind) -> None:
    em.env[stmt.var] = em.expr(stmt.value)


def _assert(em: Emitter, stmt: S.AssertStmt) -> None:
    condition = em.expr(stmt.condition)
    failed, passed = em.new_block("assert.failed"), em.new_block("assert.passed")
    em.builder.cbranch(condition, passed, failed)
    em.builder.position_at_end(failed)
    em.fail(em)
    em.builder.position_at_end(passed)


def _for(em: Emitter, stmt: S.For) -> None:
    if stmt.kind is S.ForKind.PARALLEL and not em.in_parallel:
        from tirc.codegen.llvm.parallel import emit_parallel_for

        emit_parallel_for(em, stmt)
        return
    if stmt.kind is S.ForKind.THREAD_BINDING:
        raise unsupported(stmt, "thread-bound loops (use --target cuda)")
    begin = em.expr(stmt.min)
    end = em.builder.add(begin, em.expr(stmt.extent))
    step = em.expr(stmt.step) if stmt.step is not None else ir.Constant(begin.type, 1)
    emit_counted_loop(em, stmt.loop_var, begin, end, step, stmt.body)


def emit_counted_loop(
    em: Emitter, var: E.Var, begin: ir.Value, end: ir.Value, step: ir.Value, body: S.Stmt
) -> None:
    """for (var = begin; var < end; var += step) body"""
    builder = em.builder
    before = builder.block
    header, inside = em.new_block(f"for.{var.name}"), em.new_block(f"for.{var.name}.body")
    latch, done = em.new_block(f"for.{var.name}.next"), em.new_block(f"for.{var.name}.end")
    builder.branch(header)
    builder.position_at_end(header)
    counter = builder.phi(begin.type, name=var.name)
    counter.add_incoming(begin, before)
    builder.cbranch(builder.icmp_signed("<", counter, end), inside, done)
    builder.position_at_end(inside)
    em.env[var] = counter
    em.loops.append(Loop(exit=done, next=latch))
    em.stmt(body)
    em.loops.pop()
    if not builder.block.is_terminated:
        builder.branch(latch)
    builder.position_at_end(latch)
    following = builder.add(counter, step, flags=("nsw",))
    counter.add_incoming(following, latch)
    builder.branch(header)
    builder.position_at_end(done)


def _while(em: Emitter, stmt: S.While) -> None:
    builder = em.builder
    header, inside, done = (
        em.new_block("while"),
        em.new_block("while.body"),
        em.new_block("while.end"),
    )
    builder.branch(header)
    builder.position_at_end(header)
    builder.cbranch(em.expr(stmt.condition), inside, done)
    builder.position_at_end(inside)
    em.loops.append(Loop(exit=done, next=header))
    em.stmt(stmt.body)
    em.loops.pop()
    if not builder.block.is_terminated:
        builder.branch(header)
    builder.position_at_end(done)


def _jump(to_exit: bool) -> StmtRule:
    def emit(em: Emitter, stmt: S.Stmt) -> None:
        if not em.loops:
            raise unsupported(stmt, "break or continue outside a loop")
        loop = em.loops[-1]
        em.builder.branch(loop.exit if to_exit else loop.next)
        em.continue_in_dead_block()

    return emit


def _if(em: Emitter, stmt: S.IfThenElse) -> None:
    builder = em.builder
    condition = em.expr(stmt.condition)
    then_block, done = em.new_block("if.then"), em.new_block("if.end")
    else_block = em.new_block("if.else") if stmt.else_case is not None else done
    builder.cbranch(condition, then_block, else_block)
    builder.position_at_end(then_block)
    em.stmt(stmt.then_case)
    if not builder.block.is_terminated:
        builder.branch(done)
    if stmt.else_case is not None:
        builder.position_at_end(else_block)
        em.stmt(stmt.else_case)
        if not builder.block.is_terminated:
            builder.branch(done)
    builder.position_at_end(done)


def _store(em: Emitter, stmt: S.BufferStore) -> None:
    emit_store(em, stmt.buffer, stmt.value, stmt.indices, stmt.predicate)


def _alloc(em: Emitter, stmt: S.AllocBuffer) -> None:
    buffer = stmt.buffer
    element = T.memory_type(buffer.dtype)
    count = 1
    constant = True
    for extent in buffer.shape:
        if isinstance(extent, E.IntImm):
            count *= extent.value
        else:
            constant = False
    align = max(buffer.data_alignment, 16)
    size_bytes = count * T.element_bytes(buffer.dtype)
    em.alignment[buffer.data] = align
    if constant and size_bytes <= STACK_LIMIT_BYTES:
        em.env[buffer.data] = em.entry_alloca(element, max(count, 1), align)
        return
    total: ir.Value = ir.Constant(T.I64, T.element_bytes(buffer.dtype))
    for extent in buffer.shape:
        total = em.builder.mul(total, em.index(extent))
    # aligned_alloc wants a multiple of the alignment
    rounded = em.builder.and_(
        em.builder.add(total, ir.Constant(T.I64, align - 1)), ir.Constant(T.I64, -align)
    )
    allocate = em.declare("aligned_alloc", T.POINTER, [T.I64, T.I64])
    pointer = em.builder.call(allocate, [ir.Constant(T.I64, align), rounded])
    em.env[buffer.data] = pointer
    if em.frees:
        em.frees[-1].append(pointer)


def _decl(em: Emitter, stmt: S.DeclBuffer) -> None:
    if stmt.data is not None:
        em.env[stmt.buffer.data] = em.expr(stmt.data)
    else:
        em.lookup(stmt.buffer.data)  # a view of memory that must already be there


def _attr(em: Emitter, stmt: S.AttrStmt) -> None:
    em.stmt(stmt.body)  # pragmas and hints have no effect on the CPU


def _evaluate(em: Emitter, stmt: S.Evaluate) -> None:
    if isinstance(stmt.value, (E.IntImm, E.FloatImm)):
        return
    em.expr(stmt.value)


STMT_RULES: dict[type, StmtRule] = {
    S.SeqStmt: _seq,
    S.Bind: _bind,
    S.AssertStmt: _assert,
    S.For: _for,
    S.While: _while,
    S.Break: _jump(True),
    S.Continue: _jump(False),
    S.IfThenElse: _if,
    S.BufferStore: _store,
    S.AllocBuffer: _alloc,
    S.DeclBuffer: _decl,
    S.AttrStmt: _attr,
    S.Evaluate: _evaluate,
}

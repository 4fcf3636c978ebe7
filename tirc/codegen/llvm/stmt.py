"""Statements to control flow, one rule per IR class registered in `STMT_RULES`.

Loops are counted with a phi in a header block; `T.parallel` loops go to `parallel` to be
outlined, adjacent ones of a sequence into one OpenMP region; a loop nest that updates an
accumulator tile too large for the target's registers runs once per part (`register_tile`).
An allocation lives on the stack when it is small and of constant size, otherwise on the
heap until the end of its enclosing sequence.
"""

from __future__ import annotations

from llvmlite import ir

from tirc.codegen.llvm import types as T
from tirc.codegen.llvm.emitter import (
    STMT_RULES,
    Emitter,
    Loop,
    StmtRule,
    emit_counted_loop,
    free_all,
    unsupported,
)
from tirc.codegen.llvm.memory import emit_store
from tirc.codegen.llvm.parallel import emit_parallel_for, emit_parallel_loops, parallel_runs
from tirc.codegen.llvm.register_tile import split_nest
from tirc.ir import expr as E
from tirc.ir import stmt as S

STACK_LIMIT_BYTES = 32 * 1024
"""Larger allocations go to the heap: OpenMP worker threads have small stacks."""


@STMT_RULES.register(S.SeqStmt)
def _seq(em: Emitter, stmt: S.SeqStmt) -> None:
    em.frees.append([])
    for child in stmt.stmts if em.in_parallel else parallel_runs(stmt.stmts):
        if isinstance(child, tuple):  # adjacent parallel loops: one OpenMP region
            emit_parallel_loops(em, child)
        else:
            em.stmt(child)
    free_all(em, em.frees.pop())


@STMT_RULES.register(S.Bind)
def _bind(em: Emitter, stmt: S.Bind) -> None:
    em.env[stmt.var] = em.expr(stmt.value)


@STMT_RULES.register(S.AssertStmt)
def _assert(em: Emitter, stmt: S.AssertStmt) -> None:
    condition = em.expr(stmt.condition)
    failed, passed = em.new_block("assert.failed"), em.new_block("assert.passed")
    em.builder.cbranch(condition, passed, failed)
    em.builder.position_at_end(failed)
    em.fail(em)
    em.builder.position_at_end(passed)


@STMT_RULES.register(S.For)
def _for(em: Emitter, stmt: S.For) -> None:
    if stmt.kind is S.ForKind.PARALLEL and not em.in_parallel:
        emit_parallel_for(em, stmt)
        return
    if stmt.kind is S.ForKind.THREAD_BINDING:
        raise unsupported(stmt, "thread-bound loops (use --target cuda)")
    parts = split_nest(stmt, em.registers) if em.registers is not None else None
    for part in parts or [stmt]:
        _counted(em, part)


def _counted(em: Emitter, stmt: S.For) -> None:
    begin = em.expr(stmt.min)
    end = em.builder.add(begin, em.expr(stmt.extent))
    step = em.expr(stmt.step) if stmt.step is not None else ir.Constant(begin.type, 1)
    emit_counted_loop(em, stmt.loop_var, begin, end, step, stmt.body)


@STMT_RULES.register(S.While)
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


@STMT_RULES.register(S.IfThenElse)
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


@STMT_RULES.register(S.BufferStore)
def _store(em: Emitter, stmt: S.BufferStore) -> None:
    emit_store(em, stmt.buffer, stmt.value, stmt.indices, stmt.predicate)


@STMT_RULES.register(S.AllocBuffer)
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


@STMT_RULES.register(S.DeclBuffer)
def _decl(em: Emitter, stmt: S.DeclBuffer) -> None:
    if stmt.data is not None:
        em.env[stmt.buffer.data] = em.expr(stmt.data)
    else:
        em.lookup(stmt.buffer.data)  # a view of memory that must already be there


@STMT_RULES.register(S.AttrStmt)
def _attr(em: Emitter, stmt: S.AttrStmt) -> None:
    em.stmt(stmt.body)  # pragmas and hints have no effect on the CPU


@STMT_RULES.register(S.Evaluate)
def _evaluate(em: Emitter, stmt: S.Evaluate) -> None:
    if isinstance(stmt.value, (E.IntImm, E.FloatImm)):
        return
    em.expr(stmt.value)


STMT_RULES.register(S.Break)(_jump(True))
STMT_RULES.register(S.Continue)(_jump(False))

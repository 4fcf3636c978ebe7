"""Statements to Python statements, one rule per IR class.

Loops become `for ... in range(...)` (parallel, vectorized and unrolled loops too: their
iterations are independent in a valid program, so running them in order gives its meaning);
`Bind`, `AllocBuffer` and `DeclBuffer` define names for the statements after them.
"""

from __future__ import annotations

from collections.abc import Callable

from tirc.diagnostics import DiagnosticError
from tirc.interp.memory.storage import SHARED_SCOPES
from tirc.interp.semantics import interval
from tirc.interp.semantics.affine import affine_form
from tirc.interp.threads.access import add_terms, multiply
from tirc.interp.threads.allreduce import enter_reduce_scope
from tirc.interp.threads.block import compile_block_realize
from tirc.interp.threads.context import Code, Context, View
from tirc.interp.threads.expr import ExprCompiler
from tirc.interp.threads.kernel import compile_launch, compile_thread_loop
from tirc.ir import stmt as S
from tirc.ir.buffer import Buffer
from tirc.ir.dtype import DataType
from tirc.ir.expr import Call, IntImm, PrimExpr, Var
from tirc.ir.functor import Dispatch

THREAD_EXTENT = "thread_extent"
VIRTUAL_THREAD = "virtual_thread"


class StmtCompiler:
    def __init__(self, ctx: Context):
        self.ctx = ctx
        self.exprs = ExprCompiler(ctx)

    def compile(self, stmt: S.Stmt) -> None:
        rule = _RULES.get(type(stmt))
        if rule is None:
            raise DiagnosticError.at(
                stmt.span, f"the interpreter cannot run {type(stmt).__name__} statements"
            )
        with self.ctx.at(stmt):
            rule(self, stmt)

    def expr(self, expr: PrimExpr) -> Code:
        return self.exprs.compile(expr)

    # memory

    def bind_handle(self, var: Var, value: str, scope: str, is_storage: bool) -> str:
        """var := value (a Storage, or any handle when not is_storage), with its views."""
        name = self.ctx.bind(var)
        self.ctx.emit(f"{name} = {value}")
        self.ctx.scopes[var] = scope
        if is_storage:
            self.ctx.storages.add(var)
        else:
            self.ctx.storages.discard(var)
        for dtype in sorted(self.ctx.data_types.get(var, ()), key=str):
            self.make_view(var, name, dtype, is_storage)
        return name

    def make_view(self, var: Var, handle: str, dtype: DataType, is_storage: bool) -> None:
        key = (var, str(dtype))
        old = self.ctx.views.get(key)
        memory = (
            old.memory
            if old is not None and old.memory.isidentifier()
            else self.ctx.fresh(f"{var.name}_{dtype}")
        )
        type_name = self.ctx.constant(dtype, str(dtype))
        if is_storage:
            self.ctx.emit(f"{memory} = {handle}.view({type_name})")
            self.ctx.views[key] = View(memory, Code("0", 0, 0))
            return
        base = (
            old.base.text
            if old is not None and old.base.text.isidentifier()
            else self.ctx.fresh(f"{var.name}_base")
        )
        self.ctx.emit(f"{memory}, {base} = _view_of({handle}, {type_name})")
        self.ctx.views[key] = View(memory, Code(base, 0, None))

    def element_count(self, buffer: Buffer) -> Code:
        """Elements a buffer spans: the product of its shape, or its strided extent."""
        shape = [self.expr(extent) for extent in buffer.shape]
        if buffer.strides:
            strides = [self.expr(stride) for stride in buffer.strides]
            last = [
                multiply(Code(f"({e.text} - 1)"), s) for e, s in zip(shape, strides, strict=True)
            ]
            return add_terms([*last, Code("1", 1, 1)])
        count = Code("1", 1, 1)
        for extent in shape:
            count = multiply(count, extent)
        return count

    def allocate(self, buffer: Buffer, node: S.Stmt | None) -> None:
        """Fresh zero-filled memory for buffer (per block for shared memory in a kernel)."""
        count = self.element_count(buffer).text
        type_name = self.ctx.constant(buffer.dtype, str(buffer.dtype))
        scope = buffer.scope
        if self.ctx.kernel is not None and scope in SHARED_SCOPES:
            site = self.ctx.site(node, f"shared allocation of {buffer.name}")
            value = f"_block.shared({site}, {buffer.name!r}, {count}, {type_name}, {scope!r})"
        else:
            value = f"_allocate({buffer.name!r}, {count}, {type_name}, {scope!r})"
        self.bind_handle(buffer.data, value, scope, is_storage=True)
        self.ctx.layouts.pop(buffer, None)


_RULES: Dispatch[StmtCompiler, [], None] = Dispatch("statement (interpreter)")


@_RULES.register(S.SeqStmt)
def _seq(compiler: StmtCompiler, stmt: S.SeqStmt) -> None:
    for item in stmt.stmts:
        compiler.compile(item)


@_RULES.register(S.Bind)
def bind(compiler: StmtCompiler, stmt: S.Bind) -> None:
    value = compiler.expr(stmt.value)
    if stmt.var.dtype.is_handle:
        scope = stmt.var.pointer.scope if stmt.var.pointer is not None else "global"
        compiler.bind_handle(stmt.var, value.text, scope, is_storage=False)
        return
    name = compiler.ctx.bind(stmt.var, value.low, value.high)
    compiler.ctx.emit(f"{name} = {value.text}")
    compiler.ctx.define(stmt.var)
    affine = affine_form(compiler.ctx, stmt.value)
    if affine is not None and "_wrap" not in value.text:
        compiler.ctx.affine[stmt.var] = affine
    else:
        compiler.ctx.affine.pop(stmt.var, None)


@_RULES.register(S.AssertStmt)
def check(compiler: StmtCompiler, stmt: S.AssertStmt) -> None:
    condition = compiler.expr(stmt.condition)
    message = " ".join(stmt.message) or "assertion failed"
    site = compiler.ctx.site(stmt, "assert")
    compiler.ctx.emit(f"if not {condition.text}:")
    with compiler.ctx.indented():
        compiler.ctx.emit(f"_fault({site}, {f'{stmt.kind}: {message}'!r})")


# Python rejects more than 20 nested blocks in one function; deeper loops go in a nested def.
NESTING_LIMIT = 16


def in_own_function(compiler: StmtCompiler, emit_loop: Callable[[], None]) -> None:
    """Emits a loop inside `def _part(): ...` called right away (`yield from` in a kernel
    when the loop reaches a collective)."""
    ctx = compiler.ctx
    name = ctx.fresh("_part")
    ctx.emit(f"def {name}():")
    start = len(ctx.lines)
    with ctx.function_body(), ctx.indented():
        emit_loop()
    body = ctx.lines[start:]
    has_yield = any("(yield " in line or line.strip() == "yield" for line in body)
    ctx.emit(f"yield from {name}()" if has_yield else f"{name}()")


@_RULES.register(S.For)
def _for(compiler: StmtCompiler, stmt: S.For) -> None:
    if compiler.ctx.nesting >= NESTING_LIMIT:
        in_own_function(compiler, lambda: _for_here(compiler, stmt))
        return
    _for_here(compiler, stmt)


def _for_here(compiler: StmtCompiler, stmt: S.For) -> None:
    if stmt.kind is S.ForKind.THREAD_BINDING and not compiler.ctx.serial_threads:
        tag = stmt.thread_binding.thread_tag if stmt.thread_binding is not None else ""
        if not tag.startswith("vthread") and tag != "cthread":
            compile_thread_loop(compiler, stmt)
            return
    serial_loop(compiler, stmt.loop_var, stmt.min, stmt.extent, stmt.step, stmt.body)


def serial_loop(
    compiler: StmtCompiler,
    var: Var,
    start: PrimExpr,
    extent: PrimExpr,
    step: PrimExpr | None,
    body: S.Stmt,
) -> None:
    low = compiler.ctx.hoist(compiler.expr(start))
    count = compiler.ctx.hoist(compiler.expr(extent))
    end = add_terms([low, count])
    value = (low.low, None if low.high is None or count.high is None else low.high + count.high - 1)
    if step is not None and not (isinstance(step, IntImm) and step.value == 1):
        stride = compiler.expr(step)
        name = compiler.ctx.bind(var, *interval.union(value, (low.low, low.low)))
        compiler.ctx.emit(f"for {name} in range({low.text}, {end.text}, {stride.text}):")
    else:
        name = compiler.ctx.bind(var, *value)
        if low.constant == 0:
            compiler.ctx.emit(f"for {name} in range({count.text}):")
        else:
            compiler.ctx.emit(f"for {name} in range({low.text}, {end.text}):")
    with compiler.ctx.indented(loop=True):
        compiler.ctx.define(var)
        compiler.ctx.affine.pop(var, None)
        compiler.compile(body)


@_RULES.register(S.While)
def _while(compiler: StmtCompiler, stmt: S.While) -> None:
    if compiler.ctx.nesting >= NESTING_LIMIT:
        in_own_function(compiler, lambda: repeat(compiler, stmt))
        return
    repeat(compiler, stmt)


def repeat(compiler: StmtCompiler, stmt: S.While) -> None:
    condition = compiler.expr(stmt.condition)
    compiler.ctx.emit(f"while {condition.text}:")
    with compiler.ctx.indented(loop=True):
        compiler.compile(stmt.body)


@_RULES.register(S.Break)
def _break(compiler: StmtCompiler, stmt: S.Break) -> None:
    compiler.ctx.emit("break")


@_RULES.register(S.Continue)
def _continue(compiler: StmtCompiler, stmt: S.Continue) -> None:
    compiler.ctx.emit("continue")


@_RULES.register(S.BufferStore)
def _store(compiler: StmtCompiler, stmt: S.BufferStore) -> None:
    compiler.exprs.access.store(stmt)


@_RULES.register(S.AllocBuffer)
def _alloc_buffer(compiler: StmtCompiler, stmt: S.AllocBuffer) -> None:
    compiler.allocate(stmt.buffer, stmt)


@_RULES.register(S.DeclBuffer)
def _decl_buffer(compiler: StmtCompiler, stmt: S.DeclBuffer) -> None:
    """A view of existing memory; without `data`, of the buffer's own (allocated if new)."""
    assert isinstance(stmt, S.DeclBuffer)
    buffer = stmt.buffer
    compiler.ctx.layouts.pop(buffer, None)
    if stmt.data is None or stmt.data is buffer.data:
        if buffer.data not in compiler.ctx.names:
            compiler.allocate(buffer, stmt)
        elif buffer.data not in compiler.ctx.scopes:
            compiler.ctx.scopes[buffer.data] = buffer.scope
        return
    value = compiler.expr(stmt.data)
    source = stmt.data
    scope = (
        compiler.ctx.scopes.get(source, buffer.scope) if isinstance(source, Var) else buffer.scope
    )
    is_storage = isinstance(source, Var) and source in compiler.ctx.storages
    compiler.bind_handle(buffer.data, value.text, scope, is_storage=is_storage)


@_RULES.register(S.AttrStmt)
def _attr(compiler: StmtCompiler, stmt: S.AttrStmt) -> None:
    if stmt.key == THREAD_EXTENT and isinstance(stmt.node, S.IterVar):
        tag = stmt.node.thread_tag
        if tag.startswith("vthread") or tag == "cthread":
            _virtual_thread(compiler, stmt.node.var, stmt.value, stmt.body)
            return
        compile_launch(compiler, stmt)
        return
    if stmt.key == VIRTUAL_THREAD and isinstance(stmt.node, S.IterVar):
        _virtual_thread(compiler, stmt.node.var, stmt.value, stmt.body)
        return
    if stmt.key == "reduce_scope":
        with enter_reduce_scope(compiler, stmt):
            compiler.compile(stmt.body)
        return
    compiler.compile(stmt.body)


def _virtual_thread(compiler: StmtCompiler, var: Var, extent: PrimExpr, body: S.Stmt) -> None:
    """vthread: virtual threads run one after another within each real thread."""
    start = IntImm(0, extent.dtype)
    serial_loop(compiler, var, start, extent, None, body)


@_RULES.register(S.IfThenElse)
def branch(compiler: StmtCompiler, stmt: S.IfThenElse) -> None:
    condition = compiler.ctx.hoist(compiler.expr(stmt.condition))
    compiler.ctx.emit(f"if {condition.text}:")
    with compiler.ctx.indented():
        compiler.compile(stmt.then_case)
    if stmt.else_case is not None:
        compiler.ctx.emit("else:")
        with compiler.ctx.indented():
            compiler.compile(stmt.else_case)


@_RULES.register(S.Evaluate)
def _evaluate(compiler: StmtCompiler, stmt: S.Evaluate) -> None:
    if not isinstance(stmt.value, Call):
        return  # T.evaluate(0): nothing to do
    value = compiler.expr(stmt.value)
    if value.text not in ("None", "True", "False") and not value.is_atom:
        compiler.ctx.emit(value.text)


@_RULES.register(S.SBlockRealize)
def _block_realize(compiler: StmtCompiler, stmt: S.SBlockRealize) -> None:
    compile_block_realize(compiler, stmt)

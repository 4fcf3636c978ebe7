"""Scoping: every variable and buffer is defined before it is used, used only inside the scope
of its definition, and defined once (a Var object has one binding site, so that a Var names
one value and passes may move code without capturing names).

Scopes: parameters and parameter buffers (with the bare shape, stride and offset variables of
those buffers) cover the function; a loop variable its loop; a block's iteration variables,
`alloc_buffers` and `match_buffer`s its block; `Bind`, `AllocBuffer` and `DeclBuffer` the rest
of their sequence; a `Let` its body; a launched thread its `T.attr` body. Inside a block with
iteration variables, loops from outside are reachable only through those variables.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from tirc.analysis.well_formed.checker import Checker
from tirc.diagnostics import Diagnostic, Note, Span
from tirc.ir.buffer import Buffer, MatchBufferRegion
from tirc.ir.expr import Call, CommReducer, IntImm, Let, PrimExpr, Var
from tirc.ir.function import PrimFunc
from tirc.ir.stmt import (
    AllocBuffer,
    AttrStmt,
    Bind,
    DeclBuffer,
    For,
    IfThenElse,
    IterVar,
    SBlock,
    SBlockRealize,
    SeqStmt,
    Stmt,
    While,
)


@dataclass(frozen=True, slots=True)
class Definition:
    span: Span | None
    is_loop: bool = False
    blocks: int = 0  # how many blocks with iteration variables enclose the definition


Name = Var | Buffer


class ScopeChecker(Checker):
    def __init__(self) -> None:
        super().__init__()
        self.visible: dict[Name, Definition] = {}
        self.first: dict[Name, Definition] = {}  # the first definition of everything seen
        self.frames: list[list[tuple[Name, Definition | None]]] = [[]]
        self.blocks: list[SBlock] = []  # enclosing blocks that have iteration variables
        self.binding: dict[Var, SBlock] = {}  # iteration variables of the block being bound
        self.reported: set[tuple[Name, str]] = set()
        self.undefined: list[tuple[int, Name]] = []  # (diagnostic index, name)

    @contextmanager
    def scope(self) -> Iterator[None]:
        self.frames.append([])
        try:
            yield
        finally:
            for name, previous in reversed(self.frames.pop()):
                if previous is None:
                    del self.visible[name]
                else:
                    self.visible[name] = previous

    def enter(self, name: Name, definition: Definition) -> None:
        self.frames[-1].append((name, self.visible.get(name)))
        self.visible[name] = definition
        self.first.setdefault(name, definition)

    def where(self, name: Name, site: object) -> Span | None:
        return name.span or self.span_of(site)

    def define_var(
        self, var: Var, site: object, *, is_loop: bool = False, again: bool = False
    ) -> None:
        """Bind `var` at `site`; `again` permits a second binding (launched threads, reducers)."""
        earlier = self.first.get(var)
        if earlier is not None and not again:
            self.error(
                f"variable '{var.name}' is defined twice",
                site,
                Note(f"'{var.name}' is first defined here", earlier.span),
            )
        self.enter(var, Definition(self.where(var, site), is_loop, len(self.blocks)))

    def define_buffer(self, buffer: Buffer, site: object) -> None:
        earlier = self.first.get(buffer)
        if earlier is not None:
            self.error(
                f"buffer '{buffer.name}' is defined twice",
                site,
                Note(f"'{buffer.name}' is first defined here", earlier.span),
            )
        self.enter(buffer, Definition(self.where(buffer, site)))

    def define_data(self, buffer: Buffer, site: object) -> None:
        """The buffer's data handle; a handle shared by two buffers is reported by aliasing."""
        if buffer.data not in self.visible:
            self.define_var(buffer.data, site, again=buffer.data in self.first)

    def define_shape_vars(self, buffers: list[Buffer], site: object) -> None:
        """A bare variable as a parameter or match_buffer's shape, stride or offset is defined
        there (matched against the argument); any other expression is a use."""
        for buffer in buffers:
            for expr in buffer_fields(buffer):
                if isinstance(expr, Var) and expr not in self.visible:
                    self.define_var(expr, site)
        for buffer in buffers:
            for expr in buffer_fields(buffer):
                if not isinstance(expr, Var):
                    self.visit(expr)

    def report_once(self, name: Name, kind: str, message: str, *notes: Note) -> None:
        if (name, kind) not in self.reported:
            self.reported.add((name, kind))
            self.error(message, None, *notes)

    def visit_Var(self, var: Var) -> None:
        definition = self.visible.get(var)
        if definition is not None:
            if definition.is_loop and definition.blocks < len(self.blocks):
                block = self.blocks[-1]
                self.report_once(
                    var,
                    f"block {id(block)}",
                    f"loop variable '{var.name}' is used inside block '{block.name}' but defined "
                    "outside it; a block reaches outer loops only through its iteration variables",
                    Note(f"'{var.name}' is defined here", definition.span),
                )
        elif var in self.binding:
            block = self.binding[var]
            self.report_once(
                var,
                "binding",
                f"a binding of block '{block.name}' uses the block's own iteration variable "
                f"'{var.name}'",
            )
        elif var in self.first:
            self.report_once(
                var,
                "scope",
                f"variable '{var.name}' is used outside the scope of its definition",
                Note(f"'{var.name}' is defined here", self.first[var].span),
            )
        elif (var, "undefined") not in self.reported:
            self.undefined.append((len(self.diagnostics), var))
            self.report_once(var, "undefined", f"undefined variable '{var.name}'")

    def visit_Buffer(self, buffer: Buffer) -> None:
        if buffer in self.visible:
            return
        if buffer in self.first:
            self.report_once(
                buffer,
                "scope",
                f"buffer '{buffer.name}' is used outside the scope of its definition",
                Note(f"'{buffer.name}' is defined here", self.first[buffer].span),
            )
        elif (buffer, "undefined") not in self.reported:
            self.undefined.append((len(self.diagnostics), buffer))
            self.report_once(buffer, "undefined", f"undefined buffer '{buffer.name}'")

    def finish(self) -> None:
        """Reword an undefined name that turned out to be defined later: used too early."""
        for index, name in self.undefined:
            later = self.first.get(name)
            if later is None:
                continue
            kind = "variable" if isinstance(name, Var) else "buffer"
            self.diagnostics[index] = Diagnostic.error(
                f"{kind} '{name.name}' is used before its definition",
                self.diagnostics[index].span,
                Note(f"'{name.name}' is defined here", later.span),
            )

    def visit_PrimFunc(self, func: PrimFunc) -> None:
        self.check_parameter_names(func)
        with self.scope():
            for param in func.params:
                self.define_var(param, func)
            buffers = [buffer for _, buffer in func.buffer_map]
            for param, buffer in func.buffer_map:
                self.define_buffer(buffer, func)
                if buffer.data is not param:
                    self.define_data(buffer, func)
            self.define_shape_vars(buffers, func)
            self.visit(func.body)

    def check_parameter_names(self, func: PrimFunc) -> None:
        """Parameters have distinct names: they are the C function's parameters, and a name
        given twice would leave the text's later uses meaning only the last one."""
        buffers = dict(func.buffer_map)
        seen: dict[str, Span | None] = {}
        for param in func.params:
            buffer = buffers.get(param)
            name = buffer.name if buffer is not None else param.name
            span = param.span or (buffer.span if buffer is not None else None)
            if name in seen:
                self.diagnostics.append(
                    Diagnostic.error(
                        f"two parameters are named '{name}'",
                        span or func.span,
                        Note(f"the first '{name}' is here", seen[name]),
                    )
                )
            else:
                seen[name] = span

    def visit_SeqStmt(self, stmt: SeqStmt) -> None:
        with self.scope():
            for item in stmt.stmts:
                self.visit(item)

    def visit_Bind(self, stmt: Bind) -> None:
        self.visit(stmt.value)
        self.define_var(stmt.var, stmt)

    def visit_Let(self, expr: Let) -> None:
        self.visit(expr.value)
        with self.scope():
            self.define_var(expr.var, expr)
            self.visit(expr.body)

    def visit_AllocBuffer(self, stmt: AllocBuffer) -> None:
        self.visit_buffer_fields(stmt.buffer)
        self.visit(stmt.annotations)
        self.define_buffer(stmt.buffer, stmt)
        self.define_data(stmt.buffer, stmt)

    def visit_DeclBuffer(self, stmt: DeclBuffer) -> None:
        if stmt.data is not None:
            self.visit(stmt.data)
        self.visit_buffer_fields(stmt.buffer)
        self.define_buffer(stmt.buffer, stmt)
        self.define_data(stmt.buffer, stmt)

    def visit_For(self, stmt: For) -> None:
        self.visit(stmt.min)
        self.visit(stmt.extent)
        if stmt.step is not None:
            self.visit(stmt.step)
        self.visit(stmt.annotations)
        with self.scope():
            self.define_var(stmt.loop_var, stmt, is_loop=True)
            thread = stmt.thread_binding
            if thread is not None and thread.var is not stmt.loop_var:
                self.define_var(thread.var, stmt, is_loop=True)
            self.visit(stmt.body)

    def visit_While(self, stmt: While) -> None:
        self.visit(stmt.condition)
        self.visit_scoped(stmt.body)

    def visit_IfThenElse(self, stmt: IfThenElse) -> None:
        self.visit(stmt.condition)
        self.visit_scoped(stmt.then_case)
        if stmt.else_case is not None:
            self.visit_scoped(stmt.else_case)

    def visit_AttrStmt(self, stmt: AttrStmt) -> None:
        self.visit(stmt.value)
        if not isinstance(stmt.node, IterVar):
            self.visit(stmt.node)
            self.visit_scoped(stmt.body)
            return
        # A launched thread: the same thread variable may be launched again in another
        # kernel, or again inside this one, so a second binding is not an SSA violation.
        if stmt.node.dom is not None:
            self.visit(stmt.node.dom)
        with self.scope():
            self.define_var(stmt.node.var, stmt, again=True)
            self.visit(stmt.body)

    def visit_CommReducer(self, reducer: CommReducer) -> None:
        # One reducer object is shared by every reduction that uses it.
        with self.scope():
            for var in reducer.lhs + reducer.rhs:
                self.define_var(var, reducer, again=True)
            self.visit(reducer.result)
        self.visit(reducer.identity)

    def visit_Call(self, call: Call) -> None:
        count = call.args[0] if call.args else None
        if call.op != "tvm_thread_allreduce" or not isinstance(count, IntImm):
            self.generic_visit(call)
            return
        # The thread indices an all-reduce spans are named by their (outer) loop variables,
        # even inside a block with iteration variables, as TVM's cross-thread lowering does.
        threads = 2 + 2 * count.value
        self.visit(call.args[:threads])
        blocks, self.blocks = self.blocks, []
        try:
            self.visit(call.args[threads:])
        finally:
            self.blocks = blocks

    def visit_SBlockRealize(self, stmt: SBlockRealize) -> None:
        self.visit(stmt.predicate)
        self.binding = {iter_var.var: stmt.block for iter_var in stmt.block.iter_vars}
        try:
            self.visit(stmt.iter_values)
        finally:
            self.binding = {}
        self.visit(stmt.block)

    def visit_SBlock(self, block: SBlock) -> None:
        opens = bool(block.iter_vars)
        if opens:
            self.blocks.append(block)
        try:
            with self.scope():
                self.define_block_names(block)
                self.visit(block.reads)
                self.visit(block.writes)
                self.visit(block.annotations)
                if block.init is not None:
                    self.visit_scoped(block.init)
                self.visit_scoped(block.body)
        finally:
            if opens:
                self.blocks.pop()

    def define_block_names(self, block: SBlock) -> None:
        for iter_var in block.iter_vars:
            if iter_var.dom is not None:
                self.visit(iter_var.dom)
        for iter_var in block.iter_vars:
            self.define_var(iter_var.var, iter_var)
        for buffer in block.alloc_buffers:
            self.visit_buffer_fields(buffer)
            self.define_buffer(buffer, block)
            self.define_data(buffer, block)
        for match in block.match_buffers:
            self.define_match_buffer(match)

    def define_match_buffer(self, match: MatchBufferRegion) -> None:
        self.visit(match.source)
        self.define_shape_vars([match.buffer], match)
        self.define_buffer(match.buffer, match)
        self.define_data(match.buffer, match)

    def visit_scoped(self, stmt: Stmt) -> None:
        with self.scope():
            self.visit(stmt)

    def visit_buffer_fields(self, buffer: Buffer) -> None:
        for expr in buffer_fields(buffer):
            self.visit(expr)


def buffer_fields(buffer: Buffer) -> list[PrimExpr]:
    """The expressions a buffer's layout depends on: shape, strides and element offset."""
    fields = list(buffer.shape) + list(buffer.strides)
    if buffer.elem_offset is not None:
        fields.append(buffer.elem_offset)
    return fields


def check_scopes(func: PrimFunc) -> list[Diagnostic]:
    checker = ScopeChecker()
    checker.visit(func)
    checker.finish()
    return checker.diagnostics

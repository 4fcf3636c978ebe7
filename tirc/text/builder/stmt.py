"""Building statements: each syntax statement appends IR to the body being built, binds names,
or updates the innermost frame (function, block, loop).

A body is a list of statements and "openers": a construct such as `tx = T.launch_thread(...)`
scopes over the rest of its body, so it is closed around what follows when the body ends.
Errors are collected per statement; a failed assignment binds its names to Poison so that
later uses do not report the same mistake again.
"""

from __future__ import annotations

import keyword
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tirc.diagnostics import DiagnosticError, Note, Source, Span
from tirc.ir import arith
from tirc.ir import dtype as dt
from tirc.ir.buffer import Buffer, BufferRegion, MatchBufferRegion
from tirc.ir.dtype import DataType
from tirc.ir.expr import BufferLoad, Call, IntImm, PointerType, PrimExpr, StringImm, Var
from tirc.ir.functor import Dispatch
from tirc.ir.node import IRError
from tirc.ir.stmt import (
    AllocBuffer,
    AssertStmt,
    Bind,
    Break,
    Continue,
    Evaluate,
    IfThenElse,
    IterVar,
    Stmt,
    While,
    seq,
)
from tirc.text.builder.context import CONSTRUCTION_ERRORS, BuildError, Context, SilentError
from tirc.text.builder.expr import Evaluator
from tirc.text.builder.frames import Frame, FunctionFrame, InitFrame, LoopFrame, SBlockFrame
from tirc.text.builder.scope import Scope
from tirc.text.builder.subscripts import evaluate_indices, is_local_scalar, store
from tirc.text.builder.values import (
    DTypeValue,
    HandleType,
    LetAnnotation,
    LocalArray,
    Macro,
    Poison,
)
from tirc.text.syntax import parse_syntax, tree

INDEX_ZERO = IntImm(0, dt.INT32)


@dataclass(frozen=True, slots=True)
class Opener:
    """A construct that encloses the rest of its body: `wrap(rest)` is the whole."""

    wrap: Callable[[Stmt], Stmt]


@dataclass(frozen=True, slots=True)
class Declared:
    """A variable just declared by `T.int32()`, `T.env_thread(...)`: assigning it names it."""

    value: Any
    description: str = "a new variable"


class ContextValue:
    """A value that `with` can enter (and that may scope over the rest of a body)."""

    description = "a context"

    def build(
        self, builder: Builder, target: tree.Expr | None, body: Callable[[], Stmt]
    ) -> Stmt | None:
        raise NotImplementedError

    def open_rest(self, builder: Builder, targets: tuple[str, ...], span: Span) -> Any:
        """Used as a plain statement or assigned: scope over the rest of the body."""
        raise builder.error(span, f"{self.description} must be used in a with statement")


class Builder(Evaluator):
    def __init__(self, context: Context, scope: Scope):
        super().__init__(context, scope)
        self.bodies: list[list[Stmt | Opener]] = []
        self.frames: list[Frame] = []
        self.function: FunctionFrame | None = None
        self.macro_calls: list[tuple[Macro, Span]] = []
        self.created_buffers: list[Buffer] = []

    def known_buffers(self) -> list[Buffer]:
        """Every buffer declared in the function so far."""
        return self.created_buffers

    def created(self, buffer: Buffer) -> Buffer:
        self.created_buffers.append(buffer)
        return buffer

    # Bodies.

    def build_body(self, stmts: tuple[tree.Stmt, ...], scope: Scope | None = None) -> Stmt:
        """The IR of a suite, in a child scope (or `scope`); `pass`-only bodies are no-ops."""
        saved = self.scope
        self.scope = scope if scope is not None else saved.child()
        self.bodies.append([])
        try:
            for stmt in stmts:
                self.visit_collecting(stmt)
            items = self.bodies[-1]
        finally:
            self.bodies.pop()
            self.scope = saved
        return close_body(items)

    def visit_collecting(self, stmt: tree.Stmt) -> None:
        try:
            try:
                self.visit(stmt)
            except CONSTRUCTION_ERRORS as problem:
                # A node of the statement itself (a loop, a store) broke an invariant.
                raise self.error(stmt, str(problem)) from None
        except BuildError as error:
            for macro, call in reversed(self.macro_calls):
                error = error.with_note(Note(f"in macro '{macro.name}' expanded here", call))
            self.context.report(error)
            self.poison_targets(stmt)
        except SilentError:
            self.poison_targets(stmt)
        except RecursionError:
            self.context.report(self.error(stmt, "this statement is nested too deeply to parse"))
            self.poison_targets(stmt)

    def poison_targets(self, stmt: tree.Stmt) -> None:
        target = getattr(stmt, "target", None)
        for name in target_names(target) if target is not None else ():
            self.scope.bind(name, Poison())

    def emit(self, stmt: Stmt) -> None:
        if not self.bodies:
            raise self.error(stmt.span, "a statement is not allowed here")
        self.bodies[-1].append(stmt)

    def open(self, wrap: Callable[[Stmt], Stmt]) -> None:
        self.bodies[-1].append(Opener(wrap))

    def visit(self, stmt: tree.Stmt) -> None:
        STATEMENTS(self, stmt)

    # Frames.

    def innermost(self, kind: type) -> Any:
        for frame in reversed(self.frames):
            if isinstance(frame, kind):
                return frame
        return None

    def block_frame(self, span: Span, what: str) -> SBlockFrame:
        """The block a statement like `T.reads` belongs to: it must be directly inside it."""
        frame = self.frames[-1] if self.frames else None
        if isinstance(frame, SBlockFrame):
            return frame
        raise self.error(span, f"{what} must be directly inside a T.sblock")

    def add_block_buffer(self, buffer: Buffer, span: Span) -> None:
        frame = self.frames[-1] if self.frames else None
        if isinstance(frame, SBlockFrame):
            frame.alloc_buffers.append(buffer)
            return
        if isinstance(frame, FunctionFrame) and frame.is_s_tir:
            frame.root_buffers.append(buffer)
            return
        raise self.error(
            span,
            "T.sblock_alloc_buffer must be directly inside a T.sblock, or at the top of an "
            "s-tir function (@T.prim_func(s_tir=True))",
        )

    def add_match_buffer(self, match: MatchBufferRegion, span: Span) -> None:
        self.block_frame(span, "T.match_buffer of a region").match_buffers.append(match)

    def bind_parameter_buffer(self, param: Var, buffer: Buffer, span: Span) -> None:
        frame = self.frames[-1] if self.frames else None
        if not isinstance(frame, FunctionFrame) or param not in frame.params:
            raise self.error(
                span, "T.match_buffer of a handle must name a parameter of the function"
            )
        if any(var is param for var, _ in frame.buffer_map):
            raise self.error(span, f"parameter {param.name} is already bound to a buffer")
        frame.buffer_map.append((param, buffer))

    def shape_variable(self, text: str, span: Span) -> PrimExpr:
        """A shape written as a string in the signature (`T.Buffer(("n",))`) names a variable,
        created on first use and shared by the rest of the signature and the body."""
        function = self.function
        if not text.isidentifier():
            return self.shape_expression(text, span)
        if span.source is self.context.source:  # the string itself, where `span` holds more
            span = _quoted_literal(span.source.text, span, text) or span
        if keyword.iskeyword(text):
            # it would print as `if = T.int32()`, which no parser reads
            raise self.error(span, f"a shape variable cannot be named '{text}', a keyword")
        if function is not None and text in function.signature_vars:
            return function.signature_vars[text]
        try:
            existing = self.scope.lookup(text)
        except KeyError:
            existing = None
        if isinstance(existing, Var):
            return existing
        dtype = function.signature_dtypes.get(text, dt.INT32) if function else dt.INT32
        var = Var(text, dtype, span=span)
        if function is not None:
            function.signature_vars[text] = var
        self.scope.bind(text, var)
        return var

    def shape_expression(self, text: str, span: Span) -> PrimExpr:
        """A shape string holding an expression (`"n * 2"`): its names become variables."""

        source = Source(f"<shape {text!r}>", text)
        try:
            module = parse_syntax(source)
        except DiagnosticError:
            raise self.error(span, f"cannot read the shape expression {text!r}") from None
        if len(module.body) != 1 or not isinstance(module.body[0], tree.ExprStmt):
            raise self.error(span, f"cannot read the shape expression {text!r}")
        expression = module.body[0].value
        literal = _quoted_literal(self.context.source.text, span, text)
        for name in names_in(expression):
            if not self.scope.contains(name):
                self.shape_variable(name, literal or span)
        # The string's nodes have positions in the string: where the file holds it as a plain
        # quoted literal inside `span`, they are located in the file, else in the string.
        saved = self.context
        if literal is not None:
            self.context = Context(saved.source, offset=literal.start + 1)
        else:
            self.context = Context(source)
        try:
            return self.evaluate_expr(expression)
        except BuildError as error:
            where = error.diagnostic.span if literal is not None else span
            raise saved.error(where, f"in shape {text!r}: {error.diagnostic.message}") from None
        finally:
            self.context = saved

    def declare_variable(self, name: str, dtype: DataType, is_size_var: bool, span: Span) -> Any:
        """`n = T.int32()`: a new variable, or the signature's `n` if a shape string made one."""
        function = self.function
        if function is not None and name in function.signature_vars:
            var = function.signature_vars[name]
            if var.dtype != dtype:
                raise self.error(
                    span, f"{name} was declared as {var.dtype} in the signature, not {dtype}"
                )
            return Declared(var)
        return Declared(Var(name, dtype, is_size_var=is_size_var, span=span))

    # Assignment.

    def bind_value(self, name: str, value: Any, span: Span) -> None:
        """Give a name to a value, as TVMScript's assignment does: buffers, new variables,
        iteration variables and Python data are named; an expression becomes a local
        scalar (a 1-element local buffer) and a pointer an immutable binding."""
        if isinstance(value, ContextValue):
            value = value.open_rest(self, (name,), span)
        if isinstance(value, Declared):
            self.scope.bind(name, value.value)
            return
        if isinstance(value, (bool, int, float)) or (
            isinstance(value, PrimExpr) and not isinstance(value, StringImm)
        ):
            expr = self.as_expr(value, span)
            if expr.dtype.is_handle:
                pointer = expr.pointer if isinstance(expr, Var) else None
                var = Var(name, expr.dtype, pointer, span=span)
                self.emit(Bind(var, expr, span=span))
                self.scope.bind(name, var)
                return
            self.scope.bind(name, self.local_scalar(name, expr.dtype, expr, span))
            return
        if isinstance(value, StringImm):
            var = Var(name, dt.HANDLE, span=span)
            self.emit(Bind(var, value, span=span))
            self.scope.bind(name, var)
            return
        if value is None:
            raise self.error(span, f"cannot assign None to '{name}'")
        self.scope.bind(name, value)

    def local_scalar(
        self, name: str, dtype: DataType, value: PrimExpr | None, span: Span
    ) -> BufferLoad:
        """`x: T.float32 = v`: a 1-element local buffer; `x` reads it, `x = ...` writes it."""
        data = Var(name, dt.HANDLE, PointerType(dtype, "local"))
        buffer = self.created(Buffer(name, data, dtype, (IntImm(1, dt.INT32),), span=span))
        self.emit(AllocBuffer(buffer, span=span))
        if value is not None:
            self.emit(store(self, buffer, [INDEX_ZERO], value, span))
        return BufferLoad(buffer, (INDEX_ZERO,), span=span)

    def scalar_buffer(self, name: str) -> Buffer | None:
        """The buffer behind `name` when assigning to it stores (a local scalar, or a buffer
        of shape (1,))."""
        try:
            value = self.scope.lookup(name)
        except KeyError:
            return None
        if isinstance(value, BufferLoad) and value.buffer.shape and len(value.buffer.shape) == 1:
            buffer = value.buffer
        elif isinstance(value, Buffer):
            buffer = value
        else:
            return None
        if (
            len(buffer.shape) == 1
            and isinstance(buffer.shape[0], IntImm)
            and buffer.shape[0].value == 1
        ):
            return buffer
        return None

    def visit_assign(self, node: tree.Assign) -> None:
        target = node.target
        if isinstance(target, tree.Subscript):
            value = self.evaluate(node.value)
            self.store_subscript(target, value, node)
            return
        if isinstance(target, tree.Name):
            buffer = self.scalar_buffer(target.id)
            if buffer is not None:
                value = self.evaluate(node.value)
                self.emit(store(self, buffer, [INDEX_ZERO], value, self.span(node)))
                return
            value = self.evaluate(node.value, (target.id,))
            self.bind_value(target.id, self.check_value(value), self.span(target))
            return
        if isinstance(target, (tree.Tuple, tree.List)):
            self.assign_tuple(target, node.value)
            return
        raise self.error(target, "cannot assign to this expression")

    def assign_tuple(self, target: tree.Tuple | tree.List, value_node: tree.Expr) -> None:
        names = []
        for item in target.items:
            if not isinstance(item, tree.Name):
                raise self.error(item, "only names can be unpacked into")
            names.append(item.id)
        if isinstance(value_node, (tree.Tuple, tree.List)) and len(value_node.items) == len(names):
            values = [self.evaluate(v, (n,)) for v, n in zip(value_node.items, names, strict=True)]
        else:
            value = self.check_value(self.evaluate(value_node, tuple(names)))
            if not isinstance(value, (list, tuple)):
                raise self.error(
                    value_node, f"cannot unpack {arith.describe(value)} into {len(names)} names"
                )
            values = list(value)
        if len(values) != len(names):
            raise self.error(
                value_node, f"{len(names)} names to assign but {len(values)} values to unpack"
            )
        for name, item, value in zip(names, target.items, values, strict=True):
            self.bind_value(name, self.check_value(value), self.span(item))

    def store_subscript(self, target: tree.Subscript, value: Any, node: tree.Syntax) -> None:
        buffer = self.check_value(self.evaluate(target.value))
        if is_local_scalar(self, buffer, target.value):
            buffer = buffer.buffer  # `x[i] = ...` stores into the local scalar's buffer
        if not isinstance(buffer, Buffer):
            raise self.error(target.value, f"cannot store into {arith.describe(buffer)}")
        indices = evaluate_indices(self, target)
        self.emit(store(self, buffer, indices, value, self.span(node)))

    def visit_ann_assign(self, node: tree.AnnAssign) -> None:
        if not isinstance(node.target, tree.Name):
            raise self.error(node.target, "only a name can be declared with a type")
        name = node.target.id
        annotation = self.check_value(self.evaluate(node.annotation))
        value = self.evaluate(node.value) if node.value is not None else None
        span = self.span(node)
        if isinstance(annotation, LetAnnotation):
            self.bind_let(name, annotation, value, node)
        elif isinstance(annotation, DTypeValue):
            initial = None if node.value is None else self.as_expr(value, node.value)
            self.scope.bind(name, self.local_scalar(name, annotation.dtype, initial, span))
        elif isinstance(annotation, LocalArray):
            if value is not None:
                raise self.error(node.value, "a local array declaration takes no value")
            data = Var(name, dt.HANDLE, PointerType(annotation.dtype, "local"))
            buffer = self.created(Buffer(name, data, annotation.dtype, annotation.shape, span=span))
            self.emit(AllocBuffer(buffer, span=span))
            self.scope.bind(name, buffer)
        elif isinstance(annotation, HandleType):
            raise self.error(
                node.annotation, "a handle cannot be a local scalar; use T.let[T.handle]"
            )
        else:
            raise self.error(node.annotation, f"expected a type, got {arith.describe(annotation)}")

    def bind_let(
        self, name: str, annotation: LetAnnotation, value: Any, node: tree.AnnAssign
    ) -> None:
        """`x: T.let[T.int32] = v`: an immutable binding, a Bind statement."""
        if value is None:
            raise self.error(node, "T.let needs a value")
        value = self.check_value(value)
        dtype = annotation.dtype
        if isinstance(value, str):
            value = StringImm(value)
        elif dtype is not None and isinstance(value, (bool, int, float)):
            value = arith.make_const(value, dtype)
        expr = self.as_expr(value, node.value or node)
        if dtype is None:
            dtype = expr.dtype
        elif expr.dtype != dtype:
            found = expr.dtype
            raise self.error(node.value, f"'{name}' is {dtype} but its value is {found}")
        pointer = annotation.pointer
        if pointer is None and isinstance(expr, Var):
            pointer = expr.pointer
        var = Var(name, dtype, pointer, span=self.span(node.target))
        self.emit(Bind(var, expr, span=self.span(node)))
        self.scope.bind(name, var)

    def visit_aug_assign(self, node: tree.AugAssign) -> None:
        target = node.target
        current = self.evaluate(target)
        value = self.binary(node, node.op, current, self.evaluate(node.value))
        if isinstance(target, tree.Subscript):
            self.store_subscript(target, value, node)
            return
        if isinstance(target, tree.Name):
            buffer = self.scalar_buffer(target.id)
            if buffer is not None:
                self.emit(store(self, buffer, [INDEX_ZERO], value, self.span(node)))
                return
            self.bind_value(target.id, value, self.span(target))
            return
        raise self.error(target, "cannot assign to this expression")

    # Other statements.

    def visit_expr_stmt(self, node: tree.ExprStmt) -> None:
        value = self.check_value(self.evaluate(node.value))
        if isinstance(value, ContextValue):
            value.open_rest(self, (), self.span(node))
            return
        if value is None or isinstance(value, (str, Buffer, Var, Declared, BufferRegion, IterVar)):
            return  # docstrings, and calls done for their effect (T.func_attr, T.match_buffer)
        if isinstance(value, (bool, int, float, PrimExpr)):
            self.emit(Evaluate(self.as_expr(value, node), span=self.span(node)))
            return
        raise self.error(node, f"this statement does nothing with {arith.describe(value)}")

    def visit_if(self, node: tree.If) -> None:
        test = self.check_value(self.evaluate(node.test))
        if not isinstance(test, (PrimExpr, bool, int, float, str, list, tuple, type(None))):
            # A buffer, block handle or region has no truth value (Python would take any
            # object as true, and silently keep the branch).
            what = f"the buffer '{test.name}'" if isinstance(test, Buffer) else arith.describe(test)
            raise self.error(node.test, f"expected a bool condition, got {what}")
        if not isinstance(test, PrimExpr):
            # A Python condition decides at parse time, and opens no scope.
            chosen = node.body if test else node.orelse
            for stmt in chosen:
                self.visit_collecting(stmt)
            return
        try:
            if test.dtype.is_integer and test.dtype.is_scalar and not isinstance(test, IntImm):
                # `if n:` on an integer, which TVM reads: true when non-zero, as in Python
                condition = arith.arithmetic("!=", test, 0, test.span)
            else:
                condition = arith.to_bool(test)
        except arith.ArithError as problem:
            raise self.error(node.test, str(problem)) from None
        then_case = self.build_body(node.body)
        else_case = self.build_body(node.orelse) if node.orelse else None
        self.emit(IfThenElse(condition, then_case, else_case, span=self.span(node)))

    def visit_while(self, node: tree.While) -> None:
        condition = self.evaluate_expr(node.test)
        try:
            condition = arith.to_bool(condition)
        except arith.ArithError as problem:
            raise self.error(node.test, str(problem)) from None
        body = self.build_body(node.body)
        self.emit(While(condition, body, span=self.span(node)))

    def visit_with(self, node: tree.With) -> None:
        stmt = self.build_with(node, 0)
        if stmt is not None:
            self.emit(stmt)

    def build_with(self, node: tree.With, index: int) -> Stmt | None:
        item = node.items[index]
        context = self.check_value(self.evaluate(item.context))
        if not isinstance(context, ContextValue):
            raise self.error(
                item.context, f"{arith.describe(context)} cannot be used in a with statement"
            )
        if index + 1 < len(node.items):
            return context.build(self, item.target, lambda: self.with_rest(node, index + 1))
        return context.build(self, item.target, lambda: self.build_body(node.body, self.scope))

    def with_rest(self, node: tree.With, index: int) -> Stmt:
        self.bodies.append([])
        try:
            stmt = self.build_with(node, index)
            if stmt is not None:
                self.emit(stmt)
            items = self.bodies[-1]
        finally:
            self.bodies.pop()
        return close_body(items)

    def visit_assert(self, node: tree.Assert) -> None:
        condition = self.evaluate_expr(node.test)
        try:
            condition = arith.to_bool(condition)
        except arith.ArithError as problem:
            raise self.error(node.test, str(problem)) from None
        kind: str = "RuntimeError"
        parts: tuple[str, ...] = ()
        if node.message is not None:
            kind, parts = assert_message(self, self.evaluate(node.message), node.message)
        self.emit(AssertStmt(condition, kind, parts, span=self.span(node)))

    def visit_return(self, node: tree.Return) -> None:
        if node.value is None:
            raise self.error(node, "return needs a value")
        value = self.evaluate_expr(node.value)
        call = ir_call(value.dtype, "ret", (value,), self.span(node))
        self.emit(Evaluate(call, span=self.span(node)))

    def visit_pass(self, node: tree.Pass) -> None:
        return

    def visit_break(self, node: tree.Break) -> None:
        self.emit(Break(span=self.span(node)))

    def visit_continue(self, node: tree.Continue) -> None:
        self.emit(Continue(span=self.span(node)))

    def visit_import(self, node: tree.Import) -> None:
        return

    def visit_class_def(self, node: tree.ClassDef) -> None:
        raise self.error(node, "a class cannot be defined inside a function")


def assert_message(builder: Builder, value: Any, node: tree.Expr) -> tuple[str, tuple[str, ...]]:
    """`"message"` or `("ValueError", ["part", ...])`."""
    value = builder.check_value(value)
    if isinstance(value, StringImm):
        value = value.value
    if isinstance(value, str):
        return "RuntimeError", (value,)
    if isinstance(value, tuple) and len(value) == 2:
        kind, parts = value
        if isinstance(kind, str) and isinstance(parts, (list, tuple)):
            return kind, tuple(p.value if isinstance(p, StringImm) else str(p) for p in parts)
    raise builder.error(node, 'an assert message is "text" or ("ErrorKind", ["text", ...])')


def ir_call(dtype: DataType, op: str, args: tuple[object, ...], span: Span) -> PrimExpr:

    return Call(dtype, op, args, span=span)


def close_body(items: list[Stmt | Opener]) -> Stmt:
    """The statements of a body, each opener enclosing everything after it."""
    backwards: list[Stmt] = []  # the statements after the current point, last first
    for item in reversed(items):
        if isinstance(item, Opener):
            backwards = [item.wrap(sequence(backwards[::-1]))]
        else:
            backwards.append(item)
    return sequence(backwards[::-1])


def is_no_op(stmt: Stmt) -> bool:
    return isinstance(stmt, Evaluate) and isinstance(stmt.value, IntImm) and stmt.value.value == 0


def sequence(stmts: list[Stmt]) -> Stmt:
    """The statements as one; like TVM, `T.evaluate(0)` among others is dropped, and an
    empty body is `T.evaluate(0)`."""
    stmts = [stmt for stmt in stmts if not is_no_op(stmt)] or stmts[:1]
    if not stmts:
        return Evaluate(IntImm(0, dt.INT32))
    try:
        return seq(*stmts)
    except IRError:  # pragma: no cover - seq of a non-empty list is valid
        return Evaluate(IntImm(0, dt.INT32))


def target_names(target: tree.Expr) -> list[str]:
    if isinstance(target, tree.Name):
        return [target.id]
    if isinstance(target, (tree.Tuple, tree.List)):
        return [name for item in target.items for name in target_names(item)]
    return []


def names_in(node: tree.Syntax) -> list[str]:
    """The names an expression mentions, in order (for shape strings)."""
    found: list[str] = []

    def walk(item: object) -> None:
        if isinstance(item, tree.Name):
            found.append(item.id)
        elif isinstance(item, tree.Attribute):
            walk(item.value)
        elif isinstance(item, tree.Syntax):
            for name in item.__slots__:
                walk(getattr(item, name))
        elif isinstance(item, tuple):
            for element in item:
                walk(element)

    walk(node)
    return found


# The rule of each statement class; loops.py registers `for` and macro.py a nested `def`.
STATEMENTS: Dispatch[Builder, [], None] = Dispatch("statement")
STATEMENTS.register(tree.ExprStmt)(Builder.visit_expr_stmt)
STATEMENTS.register(tree.Assign)(Builder.visit_assign)
STATEMENTS.register(tree.AnnAssign)(Builder.visit_ann_assign)
STATEMENTS.register(tree.AugAssign)(Builder.visit_aug_assign)
STATEMENTS.register(tree.If)(Builder.visit_if)
STATEMENTS.register(tree.While)(Builder.visit_while)
STATEMENTS.register(tree.With)(Builder.visit_with)
STATEMENTS.register(tree.Assert)(Builder.visit_assert)
STATEMENTS.register(tree.Return)(Builder.visit_return)
STATEMENTS.register(tree.Pass)(Builder.visit_pass)
STATEMENTS.register(tree.Break)(Builder.visit_break)
STATEMENTS.register(tree.Continue)(Builder.visit_continue)
STATEMENTS.register(tree.Import)(Builder.visit_import)
STATEMENTS.register(tree.ClassDef)(Builder.visit_class_def)

__all__ = ["Builder", "ContextValue", "Declared", "InitFrame", "LoopFrame", "Note", "close_body"]


def _quoted_literal(file_text: str, span: Span, text: str) -> Span | None:
    """The first `"text"` or `'text'` written inside `span` (a shape tuple's span holds its
    strings), as it is in the file; None where it is not written as such (escapes, a name)."""
    region = file_text[span.start : span.end]
    found = [at for at in (region.find(f'"{text}"'), region.find(f"'{text}'")) if at >= 0]
    if not found:
        return None
    start = span.start + min(found)
    return Span(span.source, start, start + len(text) + 2)

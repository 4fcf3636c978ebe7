"""Threads and attributes of low-level tir: `T.launch_thread`, `T.env_thread`, `T.attr`, and
the statements that act on the function (`T.func_attr`) or evaluate for effect (`T.evaluate`).

`T.launch_thread` and `T.attr` enclose a body: the one of a `with`, or, written as a plain
statement or assignment (`tx = T.launch_thread(...)`), the rest of the enclosing body.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from tirc.diagnostics import Span
from tirc.ir import arith
from tirc.ir import dtype as dt
from tirc.ir.buffer import Buffer, Range
from tirc.ir.expr import CommReducer, IntImm, PrimExpr, StringImm, Var
from tirc.ir.stmt import (
    AttrStmt,
    Break,
    Continue,
    Evaluate,
    IterType,
    IterVar,
    Stmt,
    TargetAttr,
    domain_of,
)
from tirc.text.builder.args import Param, Signature, attr_value, expect_dtype, expect_str
from tirc.text.builder.frames import FunctionFrame, LoopFrame
from tirc.text.builder.stmt import ContextValue, Declared
from tirc.text.builder.values import Builtin, Invocation
from tirc.text.syntax import tree

if TYPE_CHECKING:
    from tirc.text.builder.stmt import Builder

THREAD_EXTENT = "thread_extent"
VIRTUAL_THREAD = "virtual_thread"  # the key of a thread whose tag starts with "vthread"


def launch_key(iv: IterVar) -> str:
    return VIRTUAL_THREAD if iv.thread_tag.startswith("vthread") else THREAD_EXTENT


class LaunchContext(ContextValue):
    """`T.launch_thread("threadIdx.x", 32)`: an AttrStmt binding a thread variable."""

    description = "T.launch_thread(...)"

    def __init__(self, thread: str | IterVar, extent: PrimExpr, span: Span):
        self.thread = thread
        self.extent = extent
        self.span = span

    def iter_var(self, name: str | None) -> IterVar:
        dom = Range(IntImm(0, self.extent.dtype), self.extent, span=self.span)
        if isinstance(self.thread, IterVar):
            return IterVar(
                self.thread.var, dom, IterType.THREAD, self.thread.thread_tag, span=self.span
            )
        var = Var(name or self.thread, self.extent.dtype, span=self.span)
        return IterVar(var, dom, IterType.THREAD, self.thread, span=self.span)

    def build(self, builder: Builder, target: tree.Expr | None, body: Callable[[], Stmt]) -> Stmt:
        name = None
        if target is not None:
            if not isinstance(target, tree.Name):
                raise builder.error(target, "a launched thread binds one name")
            name = target.id
        iv = self.iter_var(name)
        if name is not None:
            builder.scope.bind(name, iv.var)
        builder.frames.append(LoopFrame(iv.var, domain_of(iv)))
        try:
            inner = body()
        finally:
            builder.frames.pop()
        return AttrStmt(iv, launch_key(iv), self.extent, inner, span=self.span)

    def open_rest(self, builder: Builder, targets: tuple[str, ...], span: Span) -> Any:
        iv = self.iter_var(targets[0] if targets else None)
        extent = self.extent
        key = launch_key(iv)
        builder.open(lambda rest: AttrStmt(iv, key, extent, rest, span=self.span))
        return Declared(iv.var)


def launch_thread(builder: Builder, inv: Invocation) -> LaunchContext:
    bound = Signature("thread", "extent").bind(builder, inv)
    thread = builder.check_value(bound.value("thread"))
    if not isinstance(thread, (str, IterVar)):
        raise builder.error(
            bound["thread"].span, "T.launch_thread needs a thread tag or T.env_thread(...)"
        )
    extent = builder.as_expr(bound.value("extent"), bound["extent"].span)
    return LaunchContext(thread, extent, inv.span)


def env_thread(builder: Builder, inv: Invocation) -> Declared:
    bound = Signature(Param("thread_tag"), Param("dtype", "int32")).bind(builder, inv)
    tag = expect_str(builder, bound["thread_tag"])
    dtype = expect_dtype(builder, bound["dtype"])
    name = inv.targets[0] if len(inv.targets) == 1 else tag
    return Declared(
        IterVar(Var(name, dtype, span=inv.span), None, IterType.THREAD, tag, span=inv.span)
    )


class AttrContext(ContextValue):
    """`T.attr(node, key, value)` or `T.attr({key: value, ...})`: nested AttrStmts."""

    description = "T.attr(...)"

    def __init__(self, entries: Sequence[tuple[object, str, PrimExpr]], span: Span):
        self.entries = entries
        self.span = span

    def wrap(self, body: Stmt) -> Stmt:
        for node, key, value in reversed(self.entries):
            body = AttrStmt(node, key, value, body, span=self.span)
        return body

    def build(self, builder: Builder, target: tree.Expr | None, body: Callable[[], Stmt]) -> Stmt:
        if target is not None:
            raise builder.error(target, "T.attr has no value to bind with 'as'")
        return self.wrap(body())

    def open_rest(self, builder: Builder, targets: tuple[str, ...], span: Span) -> Any:
        builder.open(self.wrap)
        return None


def attr_node(builder: Builder, value: Any, span: Span) -> object:
    value = builder.check_value(value)
    if isinstance(value, (Buffer, IterVar, PrimExpr, CommReducer, TargetAttr)):
        return value
    if isinstance(value, str):
        return StringImm(value)
    return builder.as_expr(value, span)


def attr_expr(builder: Builder, value: Any, span: Span) -> PrimExpr:
    value = builder.check_value(value)
    if isinstance(value, str):
        return StringImm(value)
    return builder.as_expr(value, span)


def attr(builder: Builder, inv: Invocation) -> AttrContext:
    bound = Signature(Param("node"), Param("key", None), Param("value", None)).bind(builder, inv)
    first = builder.check_value(bound.value("node"))
    if isinstance(first, dict):
        entries = [
            (IntImm(0, dt.INT32), str(key), attr_expr(builder, value, bound["node"].span))
            for key, value in first.items()
        ]
        return AttrContext(entries, inv.span)
    if bound.value("key") is None or bound.value("value") is None:
        raise builder.error(inv.span, "T.attr needs a node, a key and a value, or a dict")
    node = attr_node(builder, first, bound["node"].span)
    key = expect_str(builder, bound["key"])
    value = attr_expr(builder, bound.value("value"), bound["value"].span)
    return AttrContext([(node, key, value)], inv.span)


def evaluate(builder: Builder, inv: Invocation) -> None:
    bound = Signature("value").bind(builder, inv)
    builder.emit(
        Evaluate(builder.as_expr(bound.value("value"), bound["value"].span), span=inv.span)
    )


def _jump(kind: type) -> Callable[[Builder, Invocation], None]:
    """`T.break_loop()`, `T.continue_loop()`: how TVM writes break and continue."""

    def build(builder: Builder, inv: Invocation) -> None:
        Signature().bind(builder, inv)
        builder.emit(kind(span=inv.span))

    return build


def func_attr(builder: Builder, inv: Invocation) -> None:
    bound = Signature("attrs").bind(builder, inv)
    frame = builder.frames[-1] if builder.frames else None
    if not isinstance(frame, FunctionFrame):
        raise builder.error(inv.span, "T.func_attr must be at the top of a function body")
    value = builder.check_value(bound.value("attrs"))
    if not isinstance(value, dict):
        raise builder.error(bound["attrs"].span, f"expected a dict, got {arith.describe(value)}")
    for key, item in value.items():
        if not isinstance(key, str):
            raise builder.error(bound["attrs"].span, "function attribute keys must be strings")
        frame.attrs[key] = attr_value(builder, item, bound["attrs"].span)


BUILTINS = {
    "launch_thread": Builtin("T.launch_thread", launch_thread),
    "env_thread": Builtin("T.env_thread", env_thread),
    "attr": Builtin("T.attr", attr),
    "evaluate": Builtin("T.evaluate", evaluate),
    "func_attr": Builtin("T.func_attr", func_attr),
    "break_loop": Builtin("T.break_loop", _jump(Break)),
    "continue_loop": Builtin("T.continue_loop", _jump(Continue)),
}

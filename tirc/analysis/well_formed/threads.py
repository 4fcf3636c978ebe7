"""GPU threads: known thread tags, and one extent per tag within a kernel.

A kernel is a subtree under an outermost thread binding (a `T.thread_binding` loop or a
`T.launch_thread`). It launches with one grid and one block shape, so every binding of a tag
inside it, nested or side by side, must agree on the extent.
"""

from __future__ import annotations

from dataclasses import dataclass

from tirc.analysis.well_formed.checker import Checker
from tirc.diagnostics import Diagnostic, Note, Span
from tirc.ir.buffer import Buffer
from tirc.ir.expr import IntImm, PrimExpr, Var
from tirc.ir.function import PrimFunc
from tirc.ir.functor import child_fields
from tirc.ir.node import Node
from tirc.ir.stmt import AttrStmt, For, IterVar

KNOWN_TAGS = frozenset(
    [f"{kind}.{axis}" for kind in ("blockIdx", "threadIdx", "vthread") for axis in "xyz"]
    + ["vthread", "cthread"]
)
# The T.attr keys that launch a thread: `T.launch_thread` and virtual threads.
THREAD_KEYS = ("thread_extent", "virtual_thread")


@dataclass(frozen=True, slots=True)
class Launch:
    extent: PrimExpr
    span: Span | None


class ThreadChecker(Checker):
    def __init__(self) -> None:
        super().__init__()
        self.kernel: dict[str, Launch] | None = None  # None: outside any kernel

    def visit_For(self, stmt: For) -> None:
        if stmt.thread_binding is None:
            self.generic_visit(stmt)
            return
        self.bind(stmt, stmt.thread_binding.thread_tag, stmt.extent)

    def visit_AttrStmt(self, stmt: AttrStmt) -> None:
        if stmt.key not in THREAD_KEYS or not isinstance(stmt.node, IterVar):
            self.generic_visit(stmt)
            return
        self.bind(stmt, stmt.node.thread_tag or stmt.node.var.name, stmt.value)

    def bind(self, stmt: For | AttrStmt, tag: str, extent: PrimExpr) -> None:
        if tag not in KNOWN_TAGS:
            self.error(
                f"unknown thread tag '{tag}'; expected blockIdx.x/y/z, threadIdx.x/y/z or vthread",
                stmt,
            )
        opens = self.kernel is None
        if opens:
            self.kernel = {}
        assert self.kernel is not None
        self.check_extent(stmt, tag, extent)
        try:
            self.generic_visit(stmt)
        finally:
            if opens:
                self.kernel = None

    def check_extent(self, stmt: Node, tag: str, extent: PrimExpr) -> None:
        assert self.kernel is not None
        first = self.kernel.get(tag)
        if first is None:
            self.kernel[tag] = Launch(extent, self.span_of(stmt))
        elif not is_same(first.extent, extent) and not is_same_constant(first.extent, extent):
            self.error(
                f"'{tag}' is bound with extent {show(extent)} here but {show(first.extent)} "
                "elsewhere in the same kernel; a kernel has one extent per thread tag",
                stmt,
                Note(f"'{tag}' is first bound here", first.span),
            )


def is_same(a: object, b: object) -> bool:
    """Syntactic equality with variables and buffers compared by identity: two extents are the
    same when they are the same expression of the same free variables."""
    if a is b:
        return True
    if type(a) is not type(b) or isinstance(a, (Var, Buffer)):
        return False
    if isinstance(a, Node):
        fields = child_fields(type(a))
        return all(is_same(getattr(a, name), getattr(b, name)) for name in fields)
    if isinstance(a, tuple):
        assert isinstance(b, tuple)
        return len(a) == len(b) and all(map(is_same, a, b))
    return a == b


def is_same_constant(a: PrimExpr, b: PrimExpr) -> bool:
    """The same integer in two index types (4 and T.int64(4)): one launch extent."""
    return isinstance(a, IntImm) and isinstance(b, IntImm) and a.value == b.value


def show(expr: PrimExpr) -> str:
    """An extent for a message: its value when constant, a variable's name, else its source
    text (analysis does not print IR), or `?` for one built without a source."""
    if isinstance(expr, IntImm):
        return str(expr.value)
    if isinstance(expr, Var):
        return expr.name
    span = expr.span
    return span.source.text[span.start : span.end] if span is not None else "?"


def check_threads(func: PrimFunc) -> list[Diagnostic]:
    checker = ThreadChecker()
    checker.visit(func)
    return checker.diagnostics

"""The state printing shares: output lines at an indentation, the names in scope, and the
expression printer bound to them. A free variable is declared (`x = T.int32()`) just before
the statement that first uses it, as TVM does; fragments for messages skip that."""

from __future__ import annotations

from tirc.ir.buffer import Buffer
from tirc.ir.expr import Var
from tirc.ir.stmt import For, Stmt
from tirc.text.printing.expr import ExprPrinter
from tirc.text.printing.literals import quote
from tirc.text.printing.names import NameTable

INDENT = "    "


def var_constructor(var: Var) -> str:
    """The call that makes a fresh variable of `var`'s type: `T.int32()`, `T.handle(...)`."""
    if var.dtype.is_handle and var.pointer is not None:
        if var.pointer.element.is_void:  # a void pointer kept for its scope
            return f"T.handle(storage_scope={quote(var.pointer.scope)})"
        return f"T.handle({quote(str(var.pointer.element))}, {quote(var.pointer.scope)})"
    return f"T.{var.dtype}()"


def type_annotation(var: Var) -> str:
    """The annotation of a parameter or binding: `T.int32`, `T.handle("float32", "global")`."""
    if var.dtype.is_handle and var.pointer is not None:
        return var_constructor(var)
    return f"T.{var.dtype}"


class Emitter:
    """Lines and names. Nested bodies are printed by the subclass, `stmt.StmtPrinter`;
    `blocks` and `loops` print through this class, so that they need not import it."""

    def __init__(self, *, declare_free_vars: bool = True) -> None:
        self.lines: list[str] = []
        self.indent = ""
        self.names = NameTable()
        self.scalar_buffers: set[Buffer] = set()
        self.data_owners: dict[Var, Buffer] = {}  # data handle -> the buffer that defined it
        self.declare_free_vars = declare_free_vars
        self.exprs = ExprPrinter(self.names, self._free_var, self.scalar_buffers)
        self.loops: dict[Var, For] = {}  # enclosing loops by variable, for T.axis.remap

    def body(self, node: Stmt) -> None:
        """Print a nested body (a sequence's statements in turn, or one statement alone)."""
        raise NotImplementedError("StmtPrinter prints bodies")

    def line(self, text: str) -> None:
        self.lines.append(self.indent + text)

    def open(self, header: str) -> None:
        """Write `header` and enter the nested block of text and scope of names under it."""
        self.names.push()
        self.begin(header)

    def begin(self, header: str) -> None:
        """Write `header` and indent, for a scope of names the caller has already pushed
        (so that the header can name what the scope defines)."""
        self.lines.append(self.indent + header)
        self.indent += INDENT

    def close(self) -> None:
        """Leave the block entered by `open` or `begin`, freeing the names it defined."""
        self.indent = self.indent[: -len(INDENT)]
        self.names.pop()

    def _free_var(self, var: Var) -> str:
        name = self.names.define(var, var.name)
        if self.declare_free_vars:
            self.line(f"{name} = {var_constructor(var)}")
        return name

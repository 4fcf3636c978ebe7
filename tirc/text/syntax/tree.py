"""The syntax tree: what the grammar recognized, before any meaning is given to it.

One class per construct of the Python subset TVMScript uses. Every node records the
character range [start, end) it covers in its source; the builder turns them into Spans.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(slots=True, eq=False)
class Syntax:
    start: int
    end: int


@dataclass(slots=True, eq=False)
class Expr(Syntax):
    pass


@dataclass(slots=True, eq=False)
class Name(Expr):
    id: str


@dataclass(slots=True, eq=False)
class Constant(Expr):
    """A literal: int, float, str, bool or None."""

    value: object


@dataclass(slots=True, eq=False)
class Attribute(Expr):
    value: Expr
    attr: str


@dataclass(slots=True, eq=False)
class Keyword(Syntax):
    name: str
    value: Expr


@dataclass(slots=True, eq=False)
class Starred(Expr):
    value: Expr


@dataclass(slots=True, eq=False)
class Call(Expr):
    func: Expr
    args: tuple[Expr, ...]
    keywords: tuple[Keyword, ...]


@dataclass(slots=True, eq=False)
class Slice(Expr):
    lower: Expr | None
    upper: Expr | None
    step: Expr | None


@dataclass(slots=True, eq=False)
class Subscript(Expr):
    """`value[i, j:k]`; `is_tuple` when the index list is a tuple (several or a trailing comma)."""

    value: Expr
    indices: tuple[Expr, ...]
    is_tuple: bool


@dataclass(slots=True, eq=False)
class BinOp(Expr):
    op: str  # the operator as written: + - * / // % ** << >> & | ^
    left: Expr
    right: Expr


@dataclass(slots=True, eq=False)
class UnaryOp(Expr):
    op: str  # - + ~ not
    operand: Expr


@dataclass(slots=True, eq=False)
class BoolOp(Expr):
    op: str  # and, or
    left: Expr
    right: Expr


@dataclass(slots=True, eq=False)
class Compare(Expr):
    """`a < b <= c`: operands and the operators between them."""

    operands: tuple[Expr, ...]
    ops: tuple[str, ...]


@dataclass(slots=True, eq=False)
class IfExp(Expr):
    test: Expr
    body: Expr
    orelse: Expr


@dataclass(slots=True, eq=False)
class Tuple(Expr):
    items: tuple[Expr, ...]


@dataclass(slots=True, eq=False)
class List(Expr):
    items: tuple[Expr, ...]


@dataclass(slots=True, eq=False)
class Dict(Expr):
    keys: tuple[Expr, ...]
    values: tuple[Expr, ...]


@dataclass(slots=True, eq=False)
class Lambda(Expr):
    params: tuple[str, ...]
    body: Expr


@dataclass(slots=True, eq=False)
class Stmt(Syntax):
    pass


@dataclass(slots=True, eq=False)
class ExprStmt(Stmt):
    value: Expr


@dataclass(slots=True, eq=False)
class Assign(Stmt):
    target: Expr
    value: Expr


@dataclass(slots=True, eq=False)
class AnnAssign(Stmt):
    target: Expr
    annotation: Expr
    value: Expr | None


@dataclass(slots=True, eq=False)
class AugAssign(Stmt):
    target: Expr
    op: str  # the binary operator, without the `=`
    value: Expr


@dataclass(slots=True, eq=False)
class Pass(Stmt):
    pass


@dataclass(slots=True, eq=False)
class Break(Stmt):
    pass


@dataclass(slots=True, eq=False)
class Continue(Stmt):
    pass


@dataclass(slots=True, eq=False)
class Return(Stmt):
    value: Expr | None


@dataclass(slots=True, eq=False)
class Assert(Stmt):
    test: Expr
    message: Expr | None


@dataclass(slots=True, eq=False)
class Import(Stmt):
    """`import a.b as c` or `from a.b import c as d`: (dotted name, alias) pairs."""

    module: str | None  # the `from` part
    names: tuple[tuple[str, str | None], ...]


@dataclass(slots=True, eq=False)
class If(Stmt):
    test: Expr
    body: tuple[Stmt, ...]
    orelse: tuple[Stmt, ...]


@dataclass(slots=True, eq=False)
class While(Stmt):
    test: Expr
    body: tuple[Stmt, ...]


@dataclass(slots=True, eq=False)
class For(Stmt):
    target: Expr
    iter: Expr
    body: tuple[Stmt, ...]


@dataclass(slots=True, eq=False)
class WithItem(Syntax):
    context: Expr
    target: Expr | None


@dataclass(slots=True, eq=False)
class With(Stmt):
    items: tuple[WithItem, ...]
    body: tuple[Stmt, ...]


@dataclass(slots=True, eq=False)
class Parameter(Syntax):
    name: str
    annotation: Expr | None
    default: Expr | None


@dataclass(slots=True, eq=False)
class FunctionDef(Stmt):
    name: str
    name_start: int
    params: tuple[Parameter, ...]
    returns: Expr | None
    body: tuple[Stmt, ...]
    decorators: tuple[Expr, ...] = ()


@dataclass(slots=True, eq=False)
class ClassDef(Stmt):
    name: str
    name_start: int
    bases: tuple[Expr, ...]
    body: tuple[Stmt, ...]
    decorators: tuple[Expr, ...] = ()


@dataclass(slots=True, eq=False)
class Module(Syntax):
    body: tuple[Stmt, ...]

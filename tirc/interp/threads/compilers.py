"""The thread model's three compilers as their rule modules see them.

Expressions, calls and statements compile one another recursively (a call's argument is an
expression, a host's kernel launch is a call that compiles statements), so a rule module
types the compiler it is given by one of these protocols instead of importing the class
that imports it: imports inside threads/ then point one way.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from tirc.interp.semantics.interval import Range
from tirc.interp.threads.context import Code, Context, Layout, Slot, View
from tirc.ir.buffer import Buffer
from tirc.ir.dtype import DataType
from tirc.ir.expr import Call, PrimExpr, Var
from tirc.ir.stmt import BufferStore, Stmt


class Accesses(Protocol):
    def layout(self, buffer: Buffer) -> Layout: ...

    def element_offset(
        self, buffer: Buffer, indices: tuple[PrimExpr, ...], node: PrimExpr | BufferStore, verb: str
    ) -> tuple[Code, View]: ...


class Exprs(Protocol):
    @property
    def ctx(self) -> Context: ...

    @property
    def access(self) -> Accesses: ...

    def compile(self, expr: PrimExpr) -> Code: ...

    def combine(self, operands: list[Code]) -> Slot | None: ...

    def fit_int(self, text: str, value: Range, dtype: DataType) -> Code: ...

    def round_float(self, text: str, dtype: DataType) -> Code: ...

    def literal(self, value: int | float, dtype: DataType) -> Code: ...

    def atom(self, code: Code) -> tuple[str, str]: ...


class Calls(Protocol):
    @property
    def ctx(self) -> Context: ...

    @property
    def exprs(self) -> Exprs: ...

    def args(self, call: Call) -> list[Code]: ...

    def argument(self, arg: object) -> Code: ...

    def runtime_call(self, call: Call, function: Callable[..., object], hint: str) -> Code: ...


class Stmts(Protocol):
    @property
    def ctx(self) -> Context: ...

    @property
    def exprs(self) -> Exprs: ...

    def compile(self, stmt: Stmt) -> None: ...

    def expr(self, expr: PrimExpr) -> Code: ...

    def bind_handle(self, var: Var, value: str, scope: str, is_storage: bool) -> str: ...

    def allocate(self, buffer: Buffer, node: Stmt | None) -> None: ...


CallRule = Callable[[Calls, Call], Code]

"""The state of emitting one LLVM function: the builder, what each Var is bound to, the loop
targets of break/continue, the heap allocations to free, and how an assertion fails.

Expressions and statements are emitted by the rule tables of `expr` and `stmt`, keyed by IR
class; this module only holds the state they share and dispatches into them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any

from llvmlite import ir

from tirc.codegen.llvm import types as T
from tirc.diagnostics import DiagnosticError
from tirc.ir.buffer import Buffer
from tirc.ir.expr import PrimExpr, Var
from tirc.ir.stmt import Stmt

ExprRule = Callable[["Emitter", Any], ir.Value]
StmtRule = Callable[["Emitter", Any], None]


@dataclass
class Loop:
    """Where `break` and `continue` jump inside the innermost loop."""

    exit: ir.Block
    next: ir.Block


@dataclass
class Emitter:
    """Emits into `function`, whose first block is kept for stack slots. `fail` is called on
    a failed assertion with the builder at the failing branch, and ends the block."""

    module: ir.Module
    function: ir.Function
    builder: ir.IRBuilder
    fail: Callable[[Emitter], None]
    env: dict[Var, ir.Value] = field(default_factory=dict)
    loops: list[Loop] = field(default_factory=list)
    frees: list[list[ir.Value]] = field(default_factory=list)
    in_parallel: bool = False
    symbol: str = ""
    outlined: int = 0
    alignment: dict[Var, int] = field(default_factory=dict)  # known alignment of pointers
    streaming: frozenset[Var] = frozenset()  # buffers whose stores stream (see streaming.py)
    streamed: bool = False  # whether a streaming store was emitted: the function needs a fence

    def expr(self, expr: object) -> ir.Value:
        """The value of an expression; anything else (a call's buffer or dtype argument where
        an expression belongs) is refused, located."""
        from tirc.codegen.llvm.expr import EXPR_RULES, ROUNDED
        from tirc.codegen.llvm.narrow_float import is_narrow_float, round_value

        rule = EXPR_RULES.get(type(expr))
        if rule is None or not isinstance(expr, PrimExpr):
            raise unsupported(expr, f"{type(expr).__name__} expressions")
        with located(expr):
            value = rule(self, expr)
            if isinstance(expr, ROUNDED) and is_narrow_float(expr.dtype.element):
                value = round_value(self.builder, value, expr.dtype.element)
        return value

    def stmt(self, stmt: Stmt) -> None:
        from tirc.codegen.llvm.stmt import STMT_RULES

        rule = STMT_RULES.get(type(stmt))
        if rule is None:
            raise unsupported(stmt, f"{type(stmt).__name__} statements")
        with located(stmt):
            rule(self, stmt)

    def lookup(self, var: Var) -> ir.Value:
        try:
            return self.env[var]
        except KeyError:
            raise DiagnosticError.at(
                var.span, f"variable {var.name} is used where it is not defined"
            ) from None

    def buffer_pointer(self, buffer: Buffer) -> ir.Value:
        """The address of the buffer's first element (its data plus its element offset)."""
        base = self.lookup(buffer.data)
        if buffer.elem_offset is None or _is_zero(buffer.elem_offset):
            return base
        offset = self.index(buffer.elem_offset)
        return self.builder.gep(base, [offset], source_etype=T.memory_type(buffer.dtype))

    def index(self, expr: PrimExpr) -> ir.Value:
        """A scalar index as i64, sign-extended."""
        value = self.expr(expr)
        return self.widen_index(value)

    def widen_index(self, value: ir.Value) -> ir.Value:
        if value.type.width < 64:
            return self.builder.sext(value, T.I64)
        return value

    def entry_alloca(self, typ: ir.Type, count: int = 1, align: int = 64) -> ir.Value:
        """A stack slot in the entry block, so that a loop does not grow the stack."""
        at = ir.IRBuilder(self.function.entry_basic_block)
        size = ir.Constant(T.I64, count) if count != 1 else None
        slot = at.alloca(typ, size=size)
        slot.align = align
        slot.type = T.POINTER  # llvmlite types an alloca with a typed pointer; LLVM 22 has none
        return slot

    def finish(self) -> None:
        """Ends the entry block, which holds only the stack slots, with a jump to the code."""
        entry = self.function.entry_basic_block
        ir.IRBuilder(entry).branch(self.function.basic_blocks[1])

    def new_block(self, name: str) -> ir.Block:
        return self.function.append_basic_block(name)

    def continue_in_dead_block(self) -> None:
        """After a terminator, the rest of a sequence goes in a block nothing reaches."""
        self.builder.position_at_end(self.new_block("unreachable"))

    def declare(self, name: str, result: ir.Type, args: list[ir.Type]) -> ir.Function:
        """The function `name` of the module, declared on first use."""
        existing = self.module.globals.get(name)
        if isinstance(existing, ir.Function):
            return existing
        return ir.Function(self.module, ir.FunctionType(result, args), name)


def _is_zero(expr: PrimExpr) -> bool:
    return getattr(expr, "value", None) == 0


@contextmanager
def located(node: object) -> Iterator[None]:
    """Gives an error raised without a location (a dtype the backend cannot represent, say)
    the location of `node`, the innermost expression or statement being emitted that has one."""
    try:
        yield
    except DiagnosticError as error:
        span = getattr(node, "span", None)
        if span is None or any(d.span is not None for d in error.diagnostics):
            raise
        raise DiagnosticError(
            [replace(d, span=span) if d.span is None else d for d in error.diagnostics]
        ) from None


def unsupported(node: object, what: str) -> DiagnosticError:
    return DiagnosticError.at(
        getattr(node, "span", None), f"the CPU backend does not support {what} yet"
    )

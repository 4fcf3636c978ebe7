"""The state of emitting one LLVM function: the builder, what each Var is bound to, the loop
targets of break/continue, the heap allocations to free, and how an assertion fails.

Expressions and statements are emitted by the rules in `EXPR_RULES` and `STMT_RULES`, keyed
by IR class: this module owns the tables and the building blocks the rules share (broadcast,
overloaded intrinsics, counted loops, frees), and `expr`, `stmt`, `calls` and `memory`
register into them; `function` loads those modules, so nothing here imports a rule.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from llvmlite import ir

from tirc.codegen.llvm import types as T
from tirc.codegen.llvm.narrow_float import is_narrow_float, round_value
from tirc.codegen.llvm.register_tile import RegisterFile
from tirc.diagnostics import DiagnosticError
from tirc.ir import expr as E
from tirc.ir.buffer import Buffer
from tirc.ir.dtype import DataType
from tirc.ir.expr import PrimExpr, Var
from tirc.ir.functor import Dispatch
from tirc.ir.stmt import Stmt

ExprRule = Callable[["Emitter", Any], ir.Value]
StmtRule = Callable[["Emitter", Any], None]

FLOAT_FLAGS = ("contract",)  # the fast-math flags of every float operation

# classes whose bfloat16 or float8 result is computed in float32 and must be rounded (see
# `narrow_float`);
# the others make theirs from bfloat16 values unchanged, or round it themselves (casts)
ROUNDED = (E.Add, E.Sub, E.Mul, E.Div, E.Mod, E.FloorDiv, E.FloorMod, E.Ramp, E.Call)


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
    registers: RegisterFile | None = None  # the target's vector registers (register_tile.py)
    # the module's functions a subroutine call (`Module.f(...)`) names: their symbols
    symbols: Mapping[str, str] = field(default_factory=dict)
    result: DataType | None = None  # the type of the value the function returns (T.ret)
    # the type each of the module's functions returns (None: a status), by name
    results: Mapping[str, DataType | None] = field(default_factory=dict)

    def expr(self, expr: object) -> ir.Value:
        """The value of an expression; anything else (a call's buffer or dtype argument where
        an expression belongs) is refused, located."""
        rule = EXPR_RULES.get(type(expr)) if isinstance(expr, PrimExpr) else None
        if rule is None:
            raise unsupported(expr, f"{type(expr).__name__} expressions")
        with located(expr):
            value = rule(self, expr)
            if isinstance(expr, ROUNDED) and is_narrow_float(expr.dtype.element):
                value = round_value(self.builder, value, expr.dtype.element)
        return value

    def stmt(self, stmt: Stmt) -> None:
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


EXPR_RULES: Dispatch[Emitter, [], ir.Value] = Dispatch("CPU expression")
STMT_RULES: Dispatch[Emitter, [], None] = Dispatch("CPU statement")


class Building(Protocol):
    """What emits instructions at a position: the CPU's Emitter, or an adapter of another
    LLVM backend's lowering (codegen/nvptx) for code both share."""

    @property
    def builder(self) -> ir.IRBuilder: ...


def broadcast(em: Building, value: ir.Value, lanes: int) -> ir.Value:
    """`value` in every lane of a vector."""
    vector_type = ir.VectorType(value.type, lanes)
    if isinstance(value, ir.Constant):
        return ir.Constant(vector_type, [value] * lanes)
    single = em.builder.insert_element(ir.Constant(vector_type, None), value, ir.Constant(T.I32, 0))
    mask = ir.Constant(ir.VectorType(T.I32, lanes), [0] * lanes)
    return em.builder.shuffle_vector(single, ir.Constant(vector_type, None), mask)


def _suffix(typ: ir.Type) -> str:
    """LLVM's overload suffix of a type: f32, v8f32, i64."""
    if isinstance(typ, ir.VectorType):
        return f"v{typ.count}{_suffix(typ.element)}"
    if isinstance(typ, ir.IntType):
        return f"i{typ.width}"
    return {"half": "f16", "float": "f32", "double": "f64"}[str(typ)]


def llvm_intrinsic(
    em: Emitter, name: str, args: list[ir.Value], dtype: DataType, extra: tuple[ir.Value, ...] = ()
) -> ir.Value:
    """`name.<suffix>(args..., extra...)` overloaded on the first argument's type."""
    typ = args[0].type
    arg_types = [a.type for a in args] + [e.type for e in extra]
    function = em.declare(f"{name}.{_suffix(typ)}", T.value_type(dtype), arg_types)
    return em.builder.call(function, [*args, *extra])


def free_all(em: Emitter, pointers: list[ir.Value]) -> None:
    if not pointers or em.builder.block.is_terminated:
        return
    free = em.declare("free", T.VOID, [T.POINTER])
    for pointer in reversed(pointers):
        em.builder.call(free, [pointer])


def emit_counted_loop(
    em: Emitter, var: Var, begin: ir.Value, end: ir.Value, step: ir.Value, body: Stmt
) -> None:
    """for (var = begin; var < end; var += step) body"""
    builder = em.builder
    before = builder.block
    header, inside = em.new_block(f"for.{var.name}"), em.new_block(f"for.{var.name}.body")
    latch, done = em.new_block(f"for.{var.name}.next"), em.new_block(f"for.{var.name}.end")
    builder.branch(header)
    builder.position_at_end(header)
    counter = builder.phi(begin.type, name=var.name)
    counter.add_incoming(begin, before)
    builder.cbranch(builder.icmp_signed("<", counter, end), inside, done)
    builder.position_at_end(inside)
    em.env[var] = counter
    em.loops.append(Loop(exit=done, next=latch))
    em.stmt(body)
    em.loops.pop()
    if not builder.block.is_terminated:
        builder.branch(latch)
    builder.position_at_end(latch)
    following = builder.add(counter, step, flags=("nsw",))
    counter.add_incoming(following, latch)
    builder.branch(header)
    builder.position_at_end(done)


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

"""Matching a block against a tensor intrinsic's description, structurally.

The block (the "scope": a blockized block) and the description's root block must declare the
same regions in the same order; each region of the program fixes, per buffer, the base
indices that the description's zero corresponds to. Below them the loops, blocks, stores and
expressions must agree one to one, variables up to renaming and indices up to that base
(`A[vk_o * 4 + vk_i]` matches `A[vi]` when A's base is `vk_o * 4`). Integer widths of
indices do not matter (an int64 program matches an int32 description); element dtypes do.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tirc.analysis.arith import Analyzer
from tirc.ir import expr as E
from tirc.ir.buffer import Buffer, BufferRegion, Range
from tirc.ir.dtype import DataType
from tirc.ir.expr import IntImm, PrimExpr, Var
from tirc.ir.function import PrimFunc
from tirc.ir.functor import Dispatch, Mutator, child_fields
from tirc.ir.stmt import (
    Bind,
    BufferStore,
    Evaluate,
    For,
    IfThenElse,
    IterType,
    SBlock,
    SBlockRealize,
    SeqStmt,
    Stmt,
)
from tirc.text import script


class IntrinsicMismatch(Exception):
    """Where the program and the description part: a message naming the loop, access or
    dtype that differs."""


@dataclass
class Match:
    """What a successful match binds: description buffers to program buffers, and each
    program buffer's base indices (the program's index of the description's origin)."""

    buffers: dict[Buffer, Buffer] = field(default_factory=dict)  # description -> program
    bases: dict[Buffer, list[PrimExpr]] = field(default_factory=dict)  # program buffer -> base


def match_intrinsic(realize: SBlockRealize, desc: PrimFunc) -> Match:
    """Match the block run by `realize` against `desc`; raises IntrinsicMismatch."""
    body = desc.body
    if not isinstance(body, SBlockRealize):
        raise IntrinsicMismatch("the description has no root block")
    matcher = _Matcher()
    matcher.scope(realize.block, body.block)
    return matcher.match


def _text(node: object) -> str:
    try:
        return script(node)
    except Exception:  # a fragment the printer cannot show alone: name its kind instead
        return type(node).__name__


def _const(expr: PrimExpr) -> int | None:
    return expr.value if isinstance(expr, IntImm) else None


class _Retype(Mutator):
    """An index of the program in the description's terms: matched variables renamed, and
    integers of the description's index type (widths differ between int32 and int64)."""

    def __init__(self, renames: dict[Var, Var], dtype: DataType):
        self.renames = renames
        self.dtype = dtype
        self.fresh: dict[Var, Var] = {}

    def visit_Var(self, node: Var) -> PrimExpr:
        renamed = self.renames.get(node)
        if renamed is not None:
            return renamed
        if node.dtype == self.dtype or not node.dtype.is_integer:
            return node
        fresh = self.fresh.get(node)
        if fresh is None:
            fresh = self.fresh[node] = Var(node.name, self.dtype)
        return fresh

    def visit_IntImm(self, node: IntImm) -> PrimExpr:
        if node.dtype.is_integer and node.dtype != self.dtype:
            return IntImm(node.value, self.dtype)
        return node

    def visit_Cast(self, node: E.Cast) -> PrimExpr:
        if node.dtype.is_integer and node.value.dtype.is_integer:
            return self.visit(node.value)
        return self.generic_visit(node)


class _Matcher:
    def __init__(self) -> None:
        self.match = Match()
        self.renames: dict[Var, Var] = {}  # program variable -> description variable
        self.analyzer = Analyzer()

    # -- statements --------------------------------------------------------------------------

    def scope(self, lhs: SBlock, rhs: SBlock) -> None:
        for iter_var in lhs.iter_vars:
            if iter_var.iter_type not in (IterType.SPATIAL, IterType.REDUCE):
                raise IntrinsicMismatch(
                    f'iterator {iter_var.var.name} of block "{lhs.name}" is neither '
                    "data-parallel nor a reduction"
                )
            if iter_var.dom is not None:
                self.analyzer.bind(iter_var.var, iter_var.dom)
        self.regions(lhs.writes, rhs.writes, "writes", lhs.name)
        self.regions(lhs.reads, rhs.reads, "reads", lhs.name)
        self.stmt(lhs.body, rhs.body)

    def stmt(self, lhs: Stmt, rhs: Stmt) -> None:
        if type(lhs) is not type(rhs):
            raise IntrinsicMismatch(
                f"the program has {_describe(lhs)} where the intrinsic has {_describe(rhs)}"
            )
        rule = _STMT_RULES.get(type(lhs))
        if rule is None:
            raise IntrinsicMismatch(f"{type(lhs).__name__} is not supported in a description")
        rule(self, lhs, rhs)

    def loop(self, lhs: For, rhs: For) -> None:
        for what in ("min", "extent"):
            a, b = _const(getattr(lhs, what)), _const(getattr(rhs, what))
            if a is None or a != b:
                raise IntrinsicMismatch(
                    f"loop {lhs.loop_var.name} has {what} {_text(getattr(lhs, what))}, but the "
                    f"intrinsic's loop {rhs.loop_var.name} has {what} {_text(getattr(rhs, what))}"
                )
        if lhs.kind is not rhs.kind:
            raise IntrinsicMismatch(
                f"loop {lhs.loop_var.name} is {lhs.kind.value}, but the intrinsic's loop "
                f"{rhs.loop_var.name} is {rhs.kind.value}"
            )
        self.renames[lhs.loop_var] = rhs.loop_var
        self.analyzer.bind(lhs.loop_var, _range(lhs))  # for indices kept in program terms
        self.analyzer.bind(rhs.loop_var, _range(rhs))
        self.stmt(lhs.body, rhs.body)

    def realize(self, lhs: SBlockRealize, rhs: SBlockRealize) -> None:
        offset = len(lhs.iter_values) - len(rhs.iter_values)
        if offset < 0:
            raise IntrinsicMismatch(
                f'block "{lhs.block.name}" has {len(lhs.iter_values)} iterators, the '
                f'intrinsic\'s block "{rhs.block.name}" has {len(rhs.iter_values)}'
            )
        for position, (a, b) in enumerate(
            zip(lhs.iter_values[offset:], rhs.iter_values, strict=False)
        ):
            if not self.equal_index(a, b):
                raise IntrinsicMismatch(
                    f'binding {position} of block "{lhs.block.name}" is {_text(a)}, the '
                    f"intrinsic's is {_text(b)}"
                )
        if not self.equal_predicate(lhs.predicate, rhs.predicate):
            raise IntrinsicMismatch(
                f'the predicate of block "{lhs.block.name}" ({_text(lhs.predicate)}) differs '
                f"from the intrinsic's ({_text(rhs.predicate)})"
            )
        self.block(lhs.block, rhs.block)

    def block(self, lhs: SBlock, rhs: SBlock) -> None:
        if len(lhs.iter_vars) != len(rhs.iter_vars):
            raise IntrinsicMismatch(
                f'block "{lhs.name}" has {len(lhs.iter_vars)} iterators, the intrinsic\'s '
                f'block "{rhs.name}" has {len(rhs.iter_vars)}'
            )
        for a, b in zip(lhs.iter_vars, rhs.iter_vars, strict=False):
            a_extent = _const(a.dom.extent) if a.dom is not None else None
            b_extent = _const(b.dom.extent) if b.dom is not None else None
            if a_extent != b_extent or a.iter_type is not b.iter_type:
                raise IntrinsicMismatch(
                    f'iterator {a.var.name} of block "{lhs.name}" ({a.iter_type.name.lower()}'
                    f", extent {a_extent}) does not match the intrinsic's {b.var.name} "
                    f"({b.iter_type.name.lower()}, extent {b_extent})"
                )
            self.renames[a.var] = b.var
            if a.dom is not None:
                self.analyzer.bind(a.var, a.dom)
            if b.dom is not None:
                self.analyzer.bind(b.var, b.dom)
        if len(lhs.alloc_buffers) != len(rhs.alloc_buffers):
            raise IntrinsicMismatch(f'block "{lhs.name}" allocates other buffers')
        self.regions(lhs.writes, rhs.writes, "writes", lhs.name)
        self.regions(lhs.reads, rhs.reads, "reads", lhs.name)
        self.stmt(lhs.body, rhs.body)

    def sequence(self, lhs: SeqStmt, rhs: SeqStmt) -> None:
        if len(lhs.stmts) != len(rhs.stmts):
            raise IntrinsicMismatch(
                f"a sequence of {len(lhs.stmts)} statements where the intrinsic has "
                f"{len(rhs.stmts)}"
            )
        for a, b in zip(lhs.stmts, rhs.stmts, strict=False):
            self.stmt(a, b)

    def store(self, lhs: BufferStore, rhs: BufferStore) -> None:
        self.access(lhs.buffer, lhs.indices, rhs.buffer, rhs.indices, "store to")
        self.expr(lhs.value, rhs.value)

    def evaluate(self, lhs: Evaluate, rhs: Evaluate) -> None:
        self.expr(lhs.value, rhs.value)

    def bind(self, lhs: Bind, rhs: Bind) -> None:
        self.expr(lhs.value, rhs.value)
        self.renames[lhs.var] = rhs.var

    def branch(self, lhs: IfThenElse, rhs: IfThenElse) -> None:
        self.expr(lhs.condition, rhs.condition)
        self.stmt(lhs.then_case, rhs.then_case)
        if (lhs.else_case is None) != (rhs.else_case is None):
            raise IntrinsicMismatch("an if with an else where the intrinsic has none, or back")
        if lhs.else_case is not None and rhs.else_case is not None:
            self.stmt(lhs.else_case, rhs.else_case)

    # -- buffers and regions -----------------------------------------------------------------

    def buffer(self, lhs: Buffer, rhs: Buffer) -> None:
        bound = self.match.buffers.get(rhs)
        if bound is not None:
            if bound is not lhs:
                raise IntrinsicMismatch(
                    f"the intrinsic's buffer {rhs.name} stands for {bound.name} already, "
                    f"not also for {lhs.name}"
                )
            return
        if lhs.dtype != rhs.dtype:
            raise IntrinsicMismatch(
                f"buffer {lhs.name} holds {lhs.dtype}, the intrinsic's {rhs.name} holds {rhs.dtype}"
            )
        if lhs.scope != rhs.scope:
            raise IntrinsicMismatch(
                f"buffer {lhs.name} is in scope {lhs.scope!r}, the intrinsic's {rhs.name} "
                f"in {rhs.scope!r}"
            )
        self.match.buffers[rhs] = lhs

    def regions(
        self,
        lhs: tuple[BufferRegion, ...],
        rhs: tuple[BufferRegion, ...],
        kind: str,
        block: str,
    ) -> None:
        if len(lhs) != len(rhs):
            raise IntrinsicMismatch(
                f'block "{block}" {kind} {len(lhs)} regions, the intrinsic\'s {len(rhs)} '
                f"({', '.join(_text(r) for r in lhs)} against "
                f"{', '.join(_text(r) for r in rhs)})"
            )
        for a, b in zip(lhs, rhs, strict=False):
            self.region(a, b, kind, block)

    def region(self, lhs: BufferRegion, rhs: BufferRegion, kind: str, block: str) -> None:
        self.buffer(lhs.buffer, rhs.buffer)
        offset = len(lhs.region) - len(rhs.region)
        where = f'block "{block}" {kind} {_text(lhs)}, the intrinsic {_text(rhs)}'
        if offset < 0:
            raise IntrinsicMismatch(f"{where}: the program's region has fewer dimensions")
        base = self.match.bases.get(lhs.buffer)
        for item in lhs.region[:offset]:
            if _const(item.extent) != 1:
                raise IntrinsicMismatch(f"{where}: a leading dimension is not a single index")
        if base is None:  # the scope block: its regions fix the bases
            base = [item.min for item in lhs.region]
            self.match.bases[lhs.buffer] = base
        else:
            for dim in range(offset):
                if not self.analyzer.can_prove_equal(lhs.region[dim].min, base[dim]):
                    raise IntrinsicMismatch(f"{where}: dimension {dim} is at another index")
        for dim, (a, b) in enumerate(zip(lhs.region[offset:], rhs.region, strict=False)):
            if not self.equal_index(a.extent, b.extent):
                raise IntrinsicMismatch(
                    f"{where}: dimension {dim + offset} has extent {_text(a.extent)}, the "
                    f"intrinsic's {_text(b.extent)}"
                )
            relative = E.Sub(a.min, base[dim + offset])
            if not self.equal_index(relative, b.min):
                raise IntrinsicMismatch(
                    f"{where}: dimension {dim + offset} starts at {_text(a.min)}"
                )

    def access(
        self,
        lhs_buffer: Buffer,
        lhs_indices: tuple[PrimExpr, ...],
        rhs_buffer: Buffer,
        rhs_indices: tuple[PrimExpr, ...],
        what: str,
    ) -> None:
        self.buffer(lhs_buffer, rhs_buffer)
        base = self.match.bases.get(lhs_buffer)
        offset = len(lhs_indices) - len(rhs_indices)
        where = (
            f"the {what} {lhs_buffer.name}[{', '.join(_text(i) for i in lhs_indices)}] "
            f"against the intrinsic's {rhs_buffer.name}"
            f"[{', '.join(_text(i) for i in rhs_indices)}]"
        )
        if base is None or offset < 0 or len(base) != len(lhs_indices):
            raise IntrinsicMismatch(f"{where}: the accessed region is not declared alike")
        for dim in range(offset):
            if not self.analyzer.can_prove_equal(lhs_indices[dim], base[dim]):
                raise IntrinsicMismatch(f"{where}: index {dim} is not the region's")
        for dim, (a, b) in enumerate(zip(lhs_indices[offset:], rhs_indices, strict=False)):
            if isinstance(a, E.Ramp) or isinstance(b, E.Ramp):
                self.expr(a, b)
                continue
            if not self.equal_index(E.Sub(a, base[dim + offset]), b):
                raise IntrinsicMismatch(f"{where}: index {dim + offset} differs")

    # -- expressions -------------------------------------------------------------------------

    def retyped(self, expr: PrimExpr, dtype: DataType) -> PrimExpr:
        return _Retype(self.renames, dtype).visit(expr)

    def equal_index(self, lhs: PrimExpr, rhs: PrimExpr) -> bool:
        dtype = rhs.dtype
        if not dtype.is_integer:
            return False
        return self.analyzer.can_prove_equal(self.retyped(lhs, dtype), rhs)

    def equal_predicate(self, lhs: PrimExpr, rhs: PrimExpr) -> bool:
        if _const(lhs) is not None and _const(rhs) is not None:
            return bool(_const(lhs)) == bool(_const(rhs))
        try:
            self.expr(lhs, rhs)
        except IntrinsicMismatch:
            return False
        return True

    def expr(self, lhs: Any, rhs: Any) -> None:
        if type(lhs) is not type(rhs):
            raise IntrinsicMismatch(
                f"the program computes {_text(lhs)} where the intrinsic computes {_text(rhs)}"
            )
        if isinstance(lhs, Var):
            if self.renames.get(lhs, lhs) is not rhs:
                raise IntrinsicMismatch(f"variable {lhs.name} is not the intrinsic's {rhs.name}")
            return
        if isinstance(lhs, E.BufferLoad):
            self.access(lhs.buffer, lhs.indices, rhs.buffer, rhs.indices, "load of")
            return
        if isinstance(lhs, E.PrimExpr):
            if lhs.dtype != rhs.dtype:
                raise IntrinsicMismatch(
                    f"{_text(lhs)} is {lhs.dtype}, the intrinsic's {_text(rhs)} is {rhs.dtype}"
                )
        for name in child_fields(type(lhs)):
            a, b = getattr(lhs, name), getattr(rhs, name)
            if isinstance(a, tuple) and isinstance(b, tuple):
                if len(a) != len(b):
                    raise IntrinsicMismatch(f"{_text(lhs)} does not match {_text(rhs)}")
                for x, y in zip(a, b, strict=False):
                    self.expr(x, y)
            elif isinstance(a, E.PrimExpr) or isinstance(a, Var):
                self.expr(a, b)
            elif isinstance(a, Buffer):
                self.buffer(a, b)
            elif a != b:
                raise IntrinsicMismatch(f"{_text(lhs)} does not match {_text(rhs)}")


def _range(loop: For) -> Any:
    return Range(loop.min, loop.extent)


def _describe(stmt: Stmt) -> str:
    if isinstance(stmt, For):
        return f"loop {stmt.loop_var.name}"
    if isinstance(stmt, SBlockRealize):
        return f'block "{stmt.block.name}"'
    return f"a {type(stmt).__name__}"


# How a statement of the program matches the same statement of the description (the
# second argument, of the same class).
_STMT_RULES: Dispatch[_Matcher, [Any], None] = Dispatch("intrinsic description")
_STMT_RULES.register(For)(_Matcher.loop)
_STMT_RULES.register(SBlockRealize)(_Matcher.realize)
_STMT_RULES.register(SBlock)(_Matcher.block)
_STMT_RULES.register(SeqStmt)(_Matcher.sequence)
_STMT_RULES.register(BufferStore)(_Matcher.store)
_STMT_RULES.register(Evaluate)(_Matcher.evaluate)
_STMT_RULES.register(Bind)(_Matcher.bind)
_STMT_RULES.register(IfThenElse)(_Matcher.branch)

"""inject-ptx-async-copy: the copies that inject-software-pipeline marked asynchronous become
`T.ptx_cp_async`, and its commit and wait points `T.ptx_commit_group()` and
`T.ptx_wait_group(n)`.

Expects flat tir in kernels (after thread-sync, which reads the attributes); leaves the same
without the async attributes. Under `T.attr(0, "async_scope", 1)`, a store becomes a cp.async
when it copies, element for element, a global buffer into a shared one (`shared`,
`shared.dyn`) and both sides are contiguous: one element or a `T.Ramp(base, 1, lanes)` each,
4, 8 or 16 bytes in all, each side's start provably a multiple of the copy's size (both
buffers are aligned to it). A value `T.if_then_else(c, A[i], 0)` (or `T.Select`) with a
scalar `c` becomes a predicated copy, which writes zeros where `c` is false. Every other store
(a cast, a computation, 2 bytes, 32 bytes, a strided or local side, an unproven alignment)
stays a synchronous store: it is complete when issued, so the commit and wait points still
order it correctly. `async_commit_queue_scope` becomes a commit after its body;
`async_wait_queue_scope` / `async_wait_inflight_count` a wait before its body, for the count's
least value over the enclosing loops (0 when unbounded: wait for all) where it is not a
constant.

    with T.attr(0, "async_commit_queue_scope", 0):       T.ptx_cp_async("float16", S.data, tx * 8,
        with T.attr(0, "async_scope", 1):                                A.data, k * 8 + tx * 8, 16)
            S[T.Ramp(tx * 8, 1, 8)] = A[T.Ramp(..)]  ->  T.ptx_commit_group()
    with T.attr(0, "async_wait_queue_scope", 0):         T.ptx_wait_group(1)
        with T.attr(0, "async_wait_inflight_count", 1):  T.tvm_storage_sync("shared")
            T.tvm_storage_sync("shared")                 B[tx] = S[tx]
            B[tx] = S[tx]
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

from tirc.analysis.arith.analyzer import Analyzer
from tirc.ir import dtype as dt
from tirc.ir import expr as E
from tirc.ir import stmt as S
from tirc.ir.buffer import Buffer, Range
from tirc.ir.function import PrimFunc
from tirc.ir.functor import Mutator
from tirc.transform.pass_base import Dialect, FunctionPass
from tirc.transform.passes.inject_software_pipeline import (
    ASYNC_SCOPE,
    COMMIT_QUEUE_SCOPE,
    WAIT_INFLIGHT_COUNT,
    WAIT_QUEUE_SCOPE,
)

COPY_BYTES = (4, 8, 16)
SHARED_SCOPES = ("shared", "shared.dyn")
PrimExpr = E.PrimExpr


def _call(op: str, dtype: dt.DataType, *args: PrimExpr) -> S.Evaluate:
    return S.Evaluate(E.Call(dtype, op, args))


def _is_zero(expr: PrimExpr) -> bool:
    if isinstance(expr, E.Broadcast):
        expr = expr.value
    return isinstance(expr, (E.IntImm, E.FloatImm)) and expr.value == 0


@dataclass(frozen=True)
class _Side:
    """One side of a copy: its buffer and the first element it touches."""

    buffer: Buffer
    start: PrimExpr


def _side(buffer: Buffer, indices: tuple[PrimExpr, ...], lanes: int) -> _Side | None:
    """The side of a copy of `lanes` contiguous elements, or None if not contiguous."""
    if len(indices) != 1:
        return None
    (index,) = indices
    if lanes == 1:
        return _Side(buffer, index) if index.dtype.is_scalar else None
    if isinstance(index, E.Ramp) and E.is_const_int(index.stride, 1) and index.lanes == lanes:
        return _Side(buffer, index.base)
    return None


class _Injector(Mutator):
    def __init__(self) -> None:
        self.analyzer = Analyzer()
        self.bindings: dict[E.Var, PrimExpr] = {}  # let-bound variables, for alignment
        self.in_async = False

    def visit_For(self, node: S.For) -> S.Stmt:
        self.analyzer.bind(node.loop_var, Range(node.min, node.extent))
        return self.generic_visit(node)

    def visit_Bind(self, node: S.Bind) -> S.Stmt:
        self.bindings[node.var] = node.value
        self.analyzer.bind(node.var, self.analyzer.const_bound(node.value))
        return self.generic_visit(node)

    def visit_SeqStmt(self, node: S.SeqStmt) -> S.Stmt:
        stmts = [self.visit(stmt) for stmt in node.stmts]
        if all(new is old for new, old in zip(stmts, node.stmts, strict=True)):
            return node
        return S.seq(*stmts)  # flat: an attribute may have become a sequence

    def visit_AttrStmt(self, node: S.AttrStmt) -> S.Stmt:
        if node.key == "thread_extent" and isinstance(node.node, S.IterVar):
            zero = E.IntImm(0, node.node.var.dtype)
            self.analyzer.bind(node.node.var, Range(zero, node.value))
        if node.key == ASYNC_SCOPE:
            was, self.in_async = self.in_async, True
            body = self.visit(node.body)
            self.in_async = was
            return body
        body = self.visit(node.body)
        if node.key == COMMIT_QUEUE_SCOPE:
            return S.seq(body, _call("ptx_commit_group", dt.VOID))
        if node.key == WAIT_QUEUE_SCOPE:
            return body
        if node.key == WAIT_INFLIGHT_COUNT:
            return S.seq(_call("ptx_wait_group", dt.VOID, self.wait_count(node.value)), body)
        return node if body is node.body else dataclasses.replace(node, body=body)

    def wait_count(self, count: PrimExpr) -> E.IntImm:
        """`count`, or its least value where it is not a constant (more groups waited for
        is always correct)."""
        count = self.analyzer.simplify(count)
        if isinstance(count, E.IntImm):
            return E.IntImm(max(count.value, 0), dt.INT32)
        least = self.analyzer.const_bound(count).min
        return E.IntImm(max(least or 0, 0), dt.INT32)

    def visit_BufferStore(self, node: S.BufferStore) -> S.Stmt:
        if not self.in_async:
            return node
        copy = self.as_copy(node)
        return node if copy is None else copy

    def as_copy(self, store: S.BufferStore) -> S.Stmt | None:
        """`store` as one cp.async, or None if it is not a copy cp.async can make."""
        chosen = store.value
        value: object = chosen
        predicate: object = None
        otherwise: object = None
        if isinstance(chosen, E.Call) and chosen.op == "if_then_else":
            predicate, value, otherwise = chosen.args
        elif isinstance(chosen, E.Select):
            predicate, value, otherwise = chosen.condition, chosen.true_value, chosen.false_value
        if predicate is not None:
            scalar = isinstance(predicate, E.PrimExpr) and predicate.dtype.is_scalar
            if not (scalar and isinstance(otherwise, E.PrimExpr) and _is_zero(otherwise)):
                return None
        if not isinstance(value, E.BufferLoad):
            return None
        target, source = store.buffer, value.buffer
        element = target.dtype
        if source.dtype != element or element.lanes != 1 or value.dtype != store.value.dtype:
            return None
        if target.scope not in SHARED_SCOPES or source.scope != "global":
            return None
        lanes = value.dtype.lanes
        size = lanes * element.bytes
        if size not in COPY_BYTES or element.bits % 8:
            return None
        into = _side(target, store.indices, lanes)
        start = _side(source, value.indices, lanes)
        if into is None or start is None:
            return None
        if not (self.is_aligned(into, lanes, size) and self.is_aligned(start, lanes, size)):
            return None
        args: list[PrimExpr] = [into.buffer.data, into.start, start.buffer.data, start.start]
        args.append(E.IntImm(size, dt.INT32))
        if isinstance(predicate, E.PrimExpr):
            args.append(predicate)
        return S.Evaluate(E.Call(element, "ptx_cp_async", tuple(args)), span=store.span)

    def is_aligned(self, side: _Side, lanes: int, size: int) -> bool:
        """Whether the side's first element is at a multiple of `size` bytes."""
        buffer = side.buffer
        if buffer.data_alignment % size:
            return False
        offset = buffer.elem_offset
        if offset is not None and _multiple(offset, self.bindings) % lanes:
            return False
        return _multiple(side.start, self.bindings) % lanes == 0


def _multiple(expr: PrimExpr, bindings: dict[E.Var, PrimExpr], depth: int = 0) -> int:
    """A number `expr` is always a multiple of (0 for zero, 1 when nothing is known)."""
    if depth > 64:
        return 1
    if isinstance(expr, E.IntImm):
        return abs(expr.value)
    if isinstance(expr, E.Var):
        bound = bindings.get(expr)
        return 1 if bound is None else _multiple(bound, bindings, depth + 1)
    if isinstance(expr, E.Cast) and expr.value.dtype.is_integer:
        return _multiple(expr.value, bindings, depth + 1)
    if isinstance(expr, (E.Add, E.Sub)):
        a, b = _multiple(expr.a, bindings, depth + 1), _multiple(expr.b, bindings, depth + 1)
        return math.gcd(a, b)
    if isinstance(expr, E.Mul):
        return _multiple(expr.a, bindings, depth + 1) * _multiple(expr.b, bindings, depth + 1)
    if isinstance(expr, E.FloorMod) and isinstance(expr.b, E.IntImm):
        return math.gcd(_multiple(expr.a, bindings, depth + 1), abs(expr.b.value))
    if isinstance(expr, E.Let):
        return _multiple(expr.body, {**bindings, expr.var: expr.value}, depth + 1)
    return 1


@dataclass(frozen=True)
class InjectPTXAsyncCopy(FunctionPass):
    name = "inject-ptx-async-copy"
    expects = Dialect.FLAT
    leaves = Dialect.FLAT

    def run_function(self, func: PrimFunc) -> PrimFunc:
        body = _Injector().visit(func.body)
        return func if body is func.body else dataclasses.replace(func, body=body)

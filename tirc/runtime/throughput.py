"""What a run of a function moves and computes, for `tirc run --bench`: floating-point
operations counted statically over the lowered program (loop extents times the float
arithmetic in each store, lanes counted) or, for GEMM-like programs, from their
multiply-accumulate blocks (2 x each one's iterations); the bytes its buffer parameters move
(each read once, each written once); and the timing of a call, said as throughput."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from tirc.ir import expr as E
from tirc.ir import stmt as S
from tirc.ir.function import PrimFunc
from tirc.ir.functor import Visitor, walk
from tirc.ir.node import Node

_FLOAT_OPS = (E.Add, E.Sub, E.Mul, E.Div, E.Min, E.Max)


@dataclass(frozen=True)
class Timing:
    """The median seconds of a call over `repeats` calls, measured by `clock` (empty: the
    host's clock)."""

    median: float
    repeats: int
    clock: str = ""

    def describe(self, nbytes: int, flops: int | None = None) -> str:
        """`median 1.2345 ms over 20 runs, 12.34 GB/s moved` (`nbytes` a call), and its
        `flops` as `, 1.23 TFLOP/s` (GFLOP/s below one TFLOP/s) where given."""
        text = f"median {self.median * 1e3:.4f} ms over {self.repeats} runs"
        if self.clock:
            text += f" ({self.clock})"
        text += f", {nbytes / self.median / 1e9:.2f} GB/s moved"
        if flops:
            rate = flops / self.median
            text += (
                f", {rate / 1e12:.2f} TFLOP/s" if rate >= 1e12 else f", {rate / 1e9:.2f} GFLOP/s"
            )
        return text


def count_flops(func: PrimFunc, sizes: Mapping[E.Var, int] | None = None) -> int | None:
    """Float operations one call performs, or None where a loop extent is unknown."""
    known = dict(sizes or {})
    try:
        return _stmt(func.body, known)
    except _Unknown:
        return None


class _Unknown(Exception):
    pass


def multiply_add_flops(func: PrimFunc) -> int | None:
    """A GEMM-like program's float operations: 2 x the iterations (the product of its
    iteration variables' extents) of each block that reduces with a multiply-add
    (`C[i, j] = C[i, j] + A[i, k] * B[k, j]`, casts allowed), summed; a matmul's 2 M N K.
    None where there is no such block (the program is not GEMM-like; it must be s-tir, with
    its blocks) or an extent is not a constant."""
    total = 0
    found = False

    def visit(node: Node) -> None:
        nonlocal total, found
        if not isinstance(node, S.SBlock) or not _multiply_adds(node):
            return
        iterations = 1
        for iter_var in node.iter_vars:
            extent = iter_var.dom.extent if iter_var.dom is not None else None
            if not isinstance(extent, E.IntImm):
                raise _Unknown
            iterations *= extent.value
        total += 2 * iterations
        found = True

    try:
        walk(func.body, visit)
    except _Unknown:
        return None
    return total if found else None


def _multiply_adds(block: S.SBlock) -> bool:
    """Whether the block is a reduction whose body is `W[idx] = W[idx] + x * y`."""
    if not any(iv.iter_type is S.IterType.REDUCE for iv in block.iter_vars):
        return False
    store = block.body
    if not isinstance(store, S.BufferStore) or not isinstance(store.value, E.Add):
        return False
    add = store.value
    for accumulated, product in ((add.a, add.b), (add.b, add.a)):
        if (
            isinstance(accumulated, E.BufferLoad)
            and accumulated.buffer is store.buffer
            and isinstance(_uncast(product), E.Mul)
        ):
            return True
    return False


def _uncast(expr: E.PrimExpr) -> E.PrimExpr:
    while isinstance(expr, E.Cast):
        expr = expr.value
    return expr


def moved_bytes(func: PrimFunc, arrays: Mapping[str, object]) -> int:
    """The bytes a call moves through its buffer parameters: each one's size (`nbytes` of its
    array in `arrays`, by parameter name) once if the function reads it and once more if it
    writes it. A reduction block's read of what its `T.init()` stored is not a read (a
    matmul's C is written once); a buffer the function neither loads nor stores (reached
    through a pointer: an extern call's) counts as read and written."""
    accesses = _Accesses()
    accesses.visit(func.body)
    total = 0
    for param, buffer in func.buffer_map:
        size = getattr(arrays.get(param.name), "nbytes", 0)
        touched = (buffer.data in accesses.read) + (buffer.data in accesses.written)
        total += size * (touched or 2)
    return total


class _Accesses(Visitor):
    """The data of the buffers loaded and stored, less the loads of a block's own result
    that its init stored first."""

    def __init__(self) -> None:
        self.read: set[E.Var] = set()
        self.written: set[E.Var] = set()
        self.initialized: list[set[E.Var]] = [set()]

    def visit_SBlock(self, node: S.SBlock) -> None:  # noqa: N802
        stored: set[E.Var] = set()
        if node.init is not None:
            walk(
                node.init,
                lambda n: stored.add(n.buffer.data) if isinstance(n, S.BufferStore) else None,
            )
        self.initialized.append(stored)
        self.generic_visit(node)
        self.initialized.pop()

    def visit_BufferLoad(self, node: E.BufferLoad) -> None:  # noqa: N802
        if node.buffer.data not in self.initialized[-1]:
            self.read.add(node.buffer.data)
        self.generic_visit(node)

    def visit_BufferStore(self, node: S.BufferStore) -> None:  # noqa: N802
        self.written.add(node.buffer.data)
        self.generic_visit(node)


def _add_stored(node: Node, stored: set[E.Var]) -> None:
    if isinstance(node, S.BufferStore):
        stored.add(node.buffer.data)


def _extent(expr: E.PrimExpr, known: Mapping[E.Var, int]) -> int:
    if isinstance(expr, E.IntImm):
        return expr.value
    if isinstance(expr, E.Var) and expr in known:
        return known[expr]
    raise _Unknown


def _stmt(stmt: S.Stmt | None, known: Mapping[E.Var, int]) -> int:
    if stmt is None:
        return 0
    if isinstance(stmt, S.For):
        return _extent(stmt.extent, known) * _stmt(stmt.body, known)
    if isinstance(stmt, S.SeqStmt):
        return sum(_stmt(child, known) for child in stmt.stmts)
    if isinstance(stmt, S.IfThenElse):
        # a guarded statement (a reduction's init, a boundary) is counted as always running
        return max(_stmt(stmt.then_case, known), _stmt(stmt.else_case, known))
    if isinstance(stmt, (S.AttrStmt, S.While)):
        return _stmt(stmt.body, known)
    if isinstance(stmt, S.BufferStore):
        return _expr_flops(stmt.value)
    if isinstance(stmt, S.SBlockRealize):
        # s-tir: the block's body runs once per binding; its init is a store of a constant
        return _stmt(stmt.block.body, known)
    body = getattr(stmt, "body", None)  # let-bindings, allocations, asserts...
    return _stmt(body, known) if isinstance(body, S.Stmt) else 0


def _expr_flops(expr: E.PrimExpr) -> int:
    total = 0

    def visit(node: Node) -> None:
        nonlocal total
        if isinstance(node, _FLOAT_OPS) and node.dtype.is_float:
            total += node.dtype.lanes
        elif isinstance(node, E.Call) and node.dtype.is_float:
            total += node.dtype.lanes

    walk(expr, visit)
    return total

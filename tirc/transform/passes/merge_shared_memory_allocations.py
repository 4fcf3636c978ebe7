"""merge-shared-memory-allocations: the `shared.dyn` buffers of a kernel (and with
`merge_static=true` its static `shared` ones, into a second buffer) become views of one byte
buffer, at offsets that let buffers whose lifetimes do not overlap share memory.

Expects flat tir with thread launches and barriers (after thread-sync); leaves the same. A
kernel's statements are taken in order, looking through sequences and thread launches; a
buffer lives from the first statement that uses it to the last. Memory is reused only where a
`tvm_storage_sync` separates the last use of one buffer from the first use of the next, so no
thread can still read what another is overwriting. Only one-dimensional buffers of constant
size are merged; offsets are aligned to 16 bytes.

    S1 = T.alloc_buffer((128,), scope="shared.dyn")    buf = T.alloc_buffer((512,), "uint8", ...)
    S1[tx] = ...                                       S1 = T.decl_buffer((128,), data=buf.data)
    T.tvm_storage_sync("shared.dyn")            ->     S2 = T.decl_buffer((128,), data=buf.data)
    ... = S1[...]                                      ...
    T.tvm_storage_sync("shared.dyn")                   (S2 reuses S1's bytes)
    S2 = T.alloc_buffer((128,), scope="shared.dyn")
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from tirc.ir import dtype as dt
from tirc.ir import expr as E
from tirc.ir import stmt as S
from tirc.ir.buffer import Buffer
from tirc.ir.expr import PointerType
from tirc.ir.function import PrimFunc
from tirc.ir.functor import Mutator, Visitor
from tirc.transform.flat_offset import FlatOffsetRewriter
from tirc.transform.pass_base import Dialect, FunctionPass

ALIGNMENT = 16  # bytes: the widest vector access
MERGED_NAMES = {"shared.dyn": "buf_dyn_shmem", "shared": "buf_shmem"}


def _is_sync(stmt: S.Stmt) -> bool:
    return (
        isinstance(stmt, S.Evaluate)
        and isinstance(stmt.value, E.Call)
        and stmt.value.op == "tvm_storage_sync"
    )


def _units(stmt: S.Stmt) -> list[S.Stmt]:
    """The kernel's statements in order, looking through sequences and thread launches."""
    if isinstance(stmt, S.SeqStmt):
        return [unit for child in stmt.stmts for unit in _units(child)]
    if isinstance(stmt, S.AttrStmt) and stmt.key == "thread_extent":
        return _units(stmt.body)
    return [stmt]


class _Uses(Visitor):
    """Data handles a statement mentions (an allocation alone does not use its buffer)."""

    def __init__(self) -> None:
        self.handles: set[E.Var] = set()

    def visit_Var(self, node: E.Var) -> None:
        self.handles.add(node)

    def visit_BufferLoad(self, node: E.BufferLoad) -> None:
        self.handles.add(node.buffer.data)
        self.generic_visit(node)

    def visit_BufferStore(self, node: S.BufferStore) -> None:
        self.handles.add(node.buffer.data)
        self.generic_visit(node)

    def visit_AllocBuffer(self, node: S.AllocBuffer) -> None:
        pass


def _uses(stmt: S.Stmt) -> set[E.Var]:
    finder = _Uses()
    finder.visit(stmt)
    return finder.handles


class _HandleUses(Visitor):
    """Data handles used other than as the buffer of a load or store (e.g. in an access
    pointer): such buffers keep their own allocation."""

    def __init__(self) -> None:
        self.handles: set[E.Var] = set()

    def visit_Var(self, node: E.Var) -> None:
        self.handles.add(node)

    def visit_AllocBuffer(self, node: S.AllocBuffer) -> None:
        pass

    def visit_DeclBuffer(self, node: S.DeclBuffer) -> None:
        self.visit(node.data)


class _Allocations(Visitor):
    def __init__(self, scopes: tuple[str, ...]) -> None:
        self.scopes = scopes
        self.buffers: list[Buffer] = []

    def visit_AllocBuffer(self, node: S.AllocBuffer) -> None:
        buffer = node.buffer
        if (
            buffer.scope in self.scopes
            and len(buffer.shape) == 1
            and isinstance(buffer.shape[0], E.IntImm)
            and not buffer.strides
            and buffer.elem_offset is None
            and buffer.dtype.bytes <= ALIGNMENT
        ):
            self.buffers.append(buffer)


def _round_up(value: int) -> int:
    return (value + ALIGNMENT - 1) // ALIGNMENT * ALIGNMENT


@dataclass(frozen=True)
class _Placed:
    buffer: Buffer
    offset: int  # bytes
    size: int  # bytes
    first: int
    last: int


def plan(buffers: list[Buffer], units: list[S.Stmt]) -> tuple[list[_Placed], int]:
    """Byte offsets for `buffers`, reusing memory across barriers; and the total size."""
    uses = [_uses(unit) for unit in units]
    syncs = [index for index, unit in enumerate(units) if _is_sync(unit)]
    lives: list[tuple[int, int, Buffer]] = []
    for buffer in buffers:
        touched = [index for index, handles in enumerate(uses) if buffer.data in handles]
        if touched:
            lives.append((touched[0], touched[-1], buffer))
        else:
            lives.append((len(units), len(units), buffer))  # never used: anywhere will do
    placed: list[_Placed] = []
    for first, last, buffer in sorted(lives, key=lambda item: (item[0], item[1])):
        size = _round_up(E.int_value(buffer.shape[0]) * buffer.dtype.bytes)
        busy = sorted(
            (other.offset, other.offset + other.size)
            for other in placed
            if not (other.last < first and any(other.last < s < first for s in syncs))
        )
        offset = 0
        for start, end in busy:
            if offset + size <= start:
                break
            offset = max(offset, end)
        placed.append(_Placed(buffer, offset, size, first, last))
    total = max((p.offset + p.size for p in placed), default=0)
    return placed, total


class _Rewriter(FlatOffsetRewriter):
    """Allocations dropped; accesses moved to the views, offset by their element offset."""

    def visit_SeqStmt(self, node: S.SeqStmt) -> S.Stmt:
        kept = [
            self.visit(stmt)
            for stmt in node.stmts
            if not (isinstance(stmt, S.AllocBuffer) and stmt.buffer.data in self.moves)
        ]
        return S.seq(*kept) if kept else S.Evaluate(E.IntImm(0))

    def visit_AllocBuffer(self, node: S.AllocBuffer) -> S.Stmt:
        if node.buffer.data in self.moves:
            return S.Evaluate(E.IntImm(0))
        return node


PrimExpr = E.PrimExpr


def merge_kernel(kernel: S.AttrStmt, scopes: tuple[str, ...]) -> S.AttrStmt:
    """One kernel with the buffers of each of `scopes` merged."""
    units = _units(kernel.body)
    escaping = _HandleUses()
    escaping.visit(kernel.body)
    header: list[S.Stmt] = []
    views: dict[E.Var, tuple[Buffer, int]] = {}
    for scope in scopes:
        finder = _Allocations((scope,))
        finder.visit(kernel.body)
        finder.buffers = [b for b in finder.buffers if b.data not in escaping.handles]
        if len(finder.buffers) < 2:
            continue
        placed, total = plan(finder.buffers, units)
        merged_data = E.Var(MERGED_NAMES[scope], dt.HANDLE, PointerType(dt.UINT8, scope))
        index_dtype = finder.buffers[0].index_dtype
        merged = Buffer(MERGED_NAMES[scope], merged_data, dt.UINT8, (E.IntImm(total, index_dtype),))
        header.append(S.AllocBuffer(merged, span=kernel.span))
        for item in sorted(placed, key=lambda p: (p.offset, p.first)):
            buffer = item.buffer
            elements = item.offset // buffer.dtype.bytes
            extent = E.int_value(buffer.shape[0]) + elements
            view = dataclasses.replace(
                buffer, data=merged_data, shape=(E.IntImm(extent, buffer.index_dtype),)
            )
            header.append(S.DeclBuffer(view, merged_data, span=kernel.span))
            views[buffer.data] = (view, elements)
    if not views:
        return kernel
    body = _Rewriter(views).visit(kernel.body)
    return dataclasses.replace(kernel, body=S.seq(*header, body))


class _Kernels(Mutator):
    def __init__(self, scopes: tuple[str, ...]) -> None:
        self.scopes = scopes

    def visit_AttrStmt(self, node: S.AttrStmt) -> S.Stmt:
        if node.key == "thread_extent":
            return merge_kernel(node, self.scopes)  # the outermost launch: the kernel
        return self.generic_visit(node)


@dataclass(frozen=True)
class MergeSharedMemoryAllocations(FunctionPass):
    name = "merge-shared-memory-allocations"
    expects = Dialect.FLAT
    leaves = Dialect.FLAT

    merge_static: bool = False

    def run_function(self, func: PrimFunc) -> PrimFunc:
        scopes = ("shared.dyn", "shared") if self.merge_static else ("shared.dyn",)
        body = _Kernels(scopes).visit(func.body)
        return func if body is func.body else dataclasses.replace(func, body=body)

"""merge-shared-memory-allocations: the `shared.dyn` buffers of a kernel (and with
`merge_static=true` its static `shared` ones, into a second buffer) become views of one byte
buffer, at offsets that let buffers whose lifetimes do not overlap share memory.

Expects flat tir with thread launches and barriers (after thread-sync); leaves the same. A
kernel's statements are taken in order, looking through sequences and thread launches; a
buffer lives from the first statement that uses it to the last (asynchronous accesses until
their wait; tirc/transform/passes/_shared_memory_timeline.py). Memory is reused only where a
`tvm_storage_sync` of shared memory (not "warp": a `__syncwarp`) separates the last use of
one buffer from the first use of the next, so no thread can still read what another is
overwriting. Only one-dimensional buffers of constant
size are merged, used by loads and stores or through pointers the pass can move (a wgmma's
`T.tvm_access_ptr` operands, a TMA load's or store's shared operand); offsets are aligned to
16 bytes, 128 for a TMA copy's buffer, 1,024 for a swizzled one (tirc.ir.tma.shared_alignment).

A warp-specialized split (inject-warp-specialization's) is planned through: its consumers'
statements in order, the producer's accesses done at the consumers' loop that waits on the
producer's mbarrier every iteration. There a buffer the consumers touch only after that loop
(the epilogue's staging tile) may take the memory of one the split touched before (the operand
ring), across the consumers' named barrier `T.ptx_bar_sync(1, C)`; where their code has none
between the two, the pass puts one just before the later buffer's first statement (after the
consumers' `ptx_wgmma_wait_group(0)`: every consumer's wgmmas have read the ring, every TMA
load into it has completed on the `full` barrier the consumers waited for).

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
from typing import Any

from tirc.ir import dtype as dt
from tirc.ir import expr as E
from tirc.ir import stmt as S
from tirc.ir.buffer import Buffer
from tirc.ir.expr import PointerType
from tirc.ir.function import PrimFunc
from tirc.ir.functor import Mutator, Visitor
from tirc.ir.tma import shared_alignment, tma_load
from tirc.transform.flat_offset import FlatOffsetRewriter
from tirc.transform.pass_base import Dialect, FunctionPass
from tirc.transform.passes._shared_memory_timeline import Timeline, timeline

ALIGNMENT = 16  # bytes: the widest vector access
MERGED_NAMES = {"shared.dyn": "buf_dyn_shmem", "shared": "buf_shmem"}
_TMA_COPIES = ("ptx_tma_load", "ptx_tma_store")  # not multicast: it writes other blocks too


class _HandleUses(Visitor):
    """Data handles used other than as the buffer of a load or store, or as a pointer the pass
    moves: such buffers keep their own allocation."""

    def __init__(self) -> None:
        self.handles: set[E.Var] = set()

    def visit_Var(self, node: E.Var) -> None:
        self.handles.add(node)

    def visit_AllocBuffer(self, node: S.AllocBuffer) -> None:
        pass

    def visit_DeclBuffer(self, node: S.DeclBuffer) -> None:
        self.visit(node.data)

    def visit_Call(self, node: E.Call) -> None:
        movable = _movable_pointers(node)
        for index, arg in enumerate(node.args):
            if index not in movable:
                self.visit(arg)
            elif isinstance(arg, E.Call):  # an access pointer: all but its handle
                self.visit((arg.args[0], *arg.args[2:]))


def _movable_pointers(call: E.Call) -> set[int]:
    """The arguments of `call` that are pointers the pass moves: a wgmma's
    `T.tvm_access_ptr(type, handle, offset, extent, mask)` operands, a TMA copy's shared
    handle (its element offset the next argument)."""
    if call.op == "ptx_wgmma":
        return {
            index
            for index, arg in enumerate(call.args)
            if isinstance(arg, E.Call)
            and arg.op == "tvm_access_ptr"
            and len(arg.args) == 5
            and isinstance(arg.args[1], E.Var)
        }
    if call.op in _TMA_COPIES:
        shared = tma_load(call).shared
        if isinstance(shared, E.Var):
            return {next(i for i, arg in enumerate(call.args) if arg is shared)}
    return set()


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


def _round_up(value: int, alignment: int = ALIGNMENT) -> int:
    return (value + alignment - 1) // alignment * alignment


@dataclass(frozen=True)
class _Placed:
    buffer: Buffer
    offset: int  # bytes
    size: int  # bytes
    first: int
    last: int


@dataclass(frozen=True)
class Plan:
    placed: list[_Placed]
    total: int  # bytes
    barriers: set[int]  # positions before which the consumers' barrier goes


def plan(buffers: list[Buffer], line: Timeline, alignments: dict[E.Var, int]) -> Plan:
    """Byte offsets for `buffers`, reusing memory across barriers (in a split's consumers,
    across one the plan puts where that lowers the offset); and the total size."""
    lives: list[tuple[int, int, Buffer]] = []
    for buffer in buffers:
        touched = line.touched(buffer.data)
        if touched:
            lives.append((touched[0], touched[-1], buffer))
        else:
            lives.append((len(line.units), len(line.units), buffer))  # never used: anywhere
    placed: list[_Placed] = []
    barriers: set[int] = set()
    for first, last, buffer in sorted(lives, key=lambda item: (item[0], item[1])):
        size = _round_up(E.int_value(buffer.shape[0]) * buffer.dtype.bytes)
        alignment = alignments.get(buffer.data, ALIGNMENT)

        offset = _fit(_busy(placed, line, first, barriers), size, alignment)
        if line.barrier is not None and first in line.consumers:
            with_barrier = _fit(_busy(placed, line, first, {first}), size, alignment)
            if with_barrier < offset:
                offset = with_barrier
                barriers.add(first)
        placed.append(_Placed(buffer, offset, size, first, last))
    total = max((p.offset + p.size for p in placed), default=0)
    return Plan(placed, total, barriers)


def _busy(placed: list[_Placed], line: Timeline, first: int, put: set[int]) -> list[_Placed]:
    """The placed buffers whose memory a buffer first used at `first` may not take: in use
    then, or with no barrier between (`put`: where the plan puts the consumers')."""
    return [
        other
        for other in placed
        if not (other.last < first and line.ordered(other.buffer.data, other.last, first, put))
    ]


def _fit(busy: list[_Placed], size: int, alignment: int) -> int:
    """The lowest offset (a multiple of `alignment`) where `size` bytes overlap no busy buffer."""
    offset = 0
    for start, end in sorted((other.offset, other.offset + other.size) for other in busy):
        if offset + size <= start:
            break
        offset = max(offset, _round_up(end, alignment))
    return offset


class _Rewriter(FlatOffsetRewriter):
    """Allocations dropped; accesses moved to the views, offset by their element offset;
    pointers moved to the merged buffer, offset by their bytes; the consumers' barrier put
    before the statements in `barriers`."""

    def __init__(
        self,
        moves: dict[E.Var, tuple[Buffer, int]],
        bytes_at: dict[E.Var, int],
        barriers: dict[int, S.Stmt],
    ) -> None:
        super().__init__(moves)
        self.bytes_at = bytes_at
        self.barriers = barriers

    def visit(self, node: Any) -> Any:
        new = super().visit(node)
        if isinstance(node, S.Stmt) and id(node) in self.barriers:
            # once: the statement at its position (the one the plan met first)
            return S.seq(self.barriers.pop(id(node)), new)
        return new

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

    def visit_Call(self, node: E.Call) -> E.PrimExpr:
        movable = _movable_pointers(node)
        new = self.generic_visit(node)
        if not movable:
            return new
        args = list(new.args)
        for index in sorted(movable):
            arg = args[index]
            if isinstance(arg, E.Call):  # T.tvm_access_ptr(type, handle, offset, ...)
                inner = list(arg.args)
                moved = self.pointer(inner[1], inner[2], _element(inner[0]))
                if moved is not None:
                    inner[1], inner[2] = moved
                    args[index] = dataclasses.replace(arg, args=tuple(inner))
            else:  # a TMA copy's handle and element offset
                moved = self.pointer(arg, args[index + 1], new.dtype.element)
                if moved is not None:
                    args[index], args[index + 1] = moved
        return dataclasses.replace(new, args=tuple(args))

    def pointer(
        self, handle: object, offset: object, dtype: dt.DataType
    ) -> tuple[E.PrimExpr, E.PrimExpr] | None:
        if not isinstance(handle, E.Var) or handle not in self.bytes_at:
            return None
        assert isinstance(offset, E.PrimExpr)
        view, _ = self.moves[handle]
        shift, rest = divmod(self.bytes_at[handle], dtype.bytes)
        assert not rest  # offsets are aligned to 16 bytes at least
        return view.data, _plus(offset, shift)


def _plus(offset: E.PrimExpr, shift: int) -> E.PrimExpr:
    """`offset + shift`, folded into a constant term where `offset` has one."""
    if not shift:
        return offset
    if isinstance(offset, E.IntImm):
        return E.IntImm(offset.value + shift, offset.dtype)
    if isinstance(offset, E.Add) and isinstance(offset.b, E.IntImm):
        return E.Add(offset.a, E.IntImm(offset.b.value + shift, offset.dtype))
    return E.Add(offset, E.IntImm(shift, offset.dtype))


def _element(annotation: object) -> dt.DataType:
    """The element type an access pointer's `T.type_annotation(...)` names."""
    assert isinstance(annotation, E.PrimExpr)
    return annotation.dtype


def merge_kernel(kernel: S.AttrStmt, scopes: tuple[str, ...]) -> S.AttrStmt:
    """One kernel with the buffers of each of `scopes` merged."""
    line: Timeline | None = None
    escaping = _HandleUses()
    escaping.visit(kernel.body)
    header: list[S.Stmt] = []
    views: dict[E.Var, tuple[Buffer, int]] = {}
    bytes_at: dict[E.Var, int] = {}
    barriers: dict[int, S.Stmt] = {}
    for scope in scopes:
        finder = _Allocations((scope,))
        finder.visit(kernel.body)
        finder.buffers = [b for b in finder.buffers if b.data not in escaping.handles]
        if len(finder.buffers) < 2:
            continue
        alignments = {b.data: shared_alignment(kernel.body, b.data) for b in finder.buffers}
        line = line or timeline(kernel)
        result = plan(finder.buffers, line, alignments)
        merged_data = E.Var(MERGED_NAMES[scope], dt.HANDLE, PointerType(dt.UINT8, scope))
        index_dtype = finder.buffers[0].index_dtype
        total = E.IntImm(result.total, index_dtype)
        merged = Buffer(MERGED_NAMES[scope], merged_data, dt.UINT8, (total,))
        header.append(S.AllocBuffer(merged, span=kernel.span))
        for item in sorted(result.placed, key=lambda p: (p.offset, p.first)):
            buffer = item.buffer
            elements = item.offset // buffer.dtype.bytes
            extent = E.int_value(buffer.shape[0]) + elements
            view = dataclasses.replace(
                buffer, data=merged_data, shape=(E.IntImm(extent, buffer.index_dtype),)
            )
            header.append(S.DeclBuffer(view, merged_data, span=kernel.span))
            views[buffer.data] = (view, elements)
            bytes_at[buffer.data] = item.offset
        for position in result.barriers:
            assert line.barrier is not None
            barriers[id(line.units[position])] = line.barrier
    if not views:
        return kernel
    body = _Rewriter(views, bytes_at, barriers).visit(kernel.body)
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

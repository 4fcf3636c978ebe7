"""Which buffers a software pipeline versions, and how: the buffers each statement of a
pipelined loop reads and writes (through accesses, block regions and pointer operands), how
many copies of each the iterations in flight need (only where a write and a later stage's
read may touch the same part: TVM's MayConflict), and the rewrite that indexes each access
with the version its iteration touches."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from tirc.analysis.arith.analyzer import Analyzer
from tirc.analysis.arith.int_set import relax
from tirc.analysis.regions import infer_access_regions
from tirc.ir import expr as E
from tirc.ir import stmt as S
from tirc.ir.buffer import Buffer, BufferRegion, Range
from tirc.ir.expr import PointerType
from tirc.ir.functor import Mutator, Visitor

PrimExpr = E.PrimExpr


class Accesses(Visitor):
    """Which buffers (by data handle) a statement reads and writes."""

    def __init__(self) -> None:
        self.reads: set[E.Var] = set()
        self.writes: set[E.Var] = set()

    def visit_BufferLoad(self, node: E.BufferLoad) -> None:
        self.reads.add(node.buffer.data)
        self.generic_visit(node)

    def visit_BufferStore(self, node: S.BufferStore) -> None:
        self.writes.add(node.buffer.data)
        self.generic_visit(node)

    def visit_SBlock(self, node: S.SBlock) -> None:
        # a tensorized block reads and writes through pointers: its regions say what
        self.reads.update(region.buffer.data for region in node.reads)
        self.writes.update(region.buffer.data for region in node.writes)
        self.generic_visit(node)

    def visit_Call(self, node: E.Call) -> None:
        for data, _, mask in pointers(node):
            if mask & 1:
                self.reads.add(data)
            if mask & 2:
                self.writes.add(data)
        self.generic_visit(node)


READ, WRITE = 1, 2
# the warp-register intrinsics: (position of a data handle, read/write) in their arguments; the
# element offset follows the handle
REGISTER_OPERANDS: dict[str, tuple[tuple[int, int], ...]] = {
    "ptx_mma": ((6, READ), (8, READ), (10, READ | WRITE)),
    "ptx_ldmatrix": ((3, WRITE),),
    "mma_fill": ((1, WRITE),),
    "mma_store": ((3, READ),),
}


def pointers(call: E.Call) -> list[tuple[E.Var, int, int]]:
    """(data, position of its element offset, read/write mask) of each buffer `call` reaches
    through a pointer: `T.tvm_access_ptr(type, data, offset, extent, mask)`, and the register
    operands of the warp-register intrinsics (mma.sync fragments)."""
    if call.op == "tvm_access_ptr" and len(call.args) == 5:
        data, mask = call.args[1], call.args[4]
        if isinstance(data, E.Var):
            return [(data, 2, mask.value if isinstance(mask, E.IntImm) else READ | WRITE)]
        return []
    found = []
    for position, mask in REGISTER_OPERANDS.get(call.op, ()):
        data = call.args[position] if position + 1 < len(call.args) else None
        if isinstance(data, E.Var):
            found.append((data, position + 1, mask))
    return found


class Versioner(Mutator):
    """Accesses of versioned buffers get the version index in front."""

    def __init__(self, versions: dict[E.Var, tuple[Buffer, PrimExpr]]) -> None:
        self.versions = versions

    def visit_BufferLoad(self, node: E.BufferLoad) -> E.PrimExpr:
        node = self.generic_visit(node)
        found = self.versions.get(node.buffer.data)
        if found is None:
            return node
        buffer, index = found
        return dataclasses.replace(node, buffer=buffer, indices=(index, *node.indices))

    def visit_BufferStore(self, node: S.BufferStore) -> S.Stmt:
        node = self.generic_visit(node)
        found = self.versions.get(node.buffer.data)
        if found is None:
            return node
        buffer, index = found
        return dataclasses.replace(node, buffer=buffer, indices=(index, *node.indices))

    def visit_BufferRegion(self, node: BufferRegion) -> BufferRegion:
        found = self.versions.get(node.buffer.data)
        if found is None:
            return node
        buffer, index = found  # the version this iteration touches, as TVM writes it
        version = Range(_like(index, buffer.shape[0]), E.IntImm(1, buffer.index_dtype))
        return BufferRegion(buffer, (version, *node.region), span=node.span)

    def visit_Call(self, node: E.Call) -> E.PrimExpr:
        """A pointer into a versioned buffer (ldmatrix's operand, say) moves to its version:
        the offset grows by the version times the size of one version."""
        node = self.generic_visit(node)
        args = list(node.args)
        for data, position, _ in pointers(node):
            found = self.versions.get(data)
            if found is None:
                continue
            buffer, index = found
            offset = args[position]
            assert isinstance(offset, E.PrimExpr)
            size = buffer.strides[0] if buffer.strides else _product(buffer.shape[1:], offset)
            args[position - 1] = buffer.data
            args[position] = _plus_times(offset, _like(index, offset), _like(size, offset))
        if args == list(node.args):
            return node
        return dataclasses.replace(node, args=tuple(args))


def _product(extents: tuple[E.PrimExpr, ...], like: E.PrimExpr) -> E.PrimExpr:
    """The product of `extents`, folded where they are constants."""
    result: E.PrimExpr = E.IntImm(1, like.dtype)
    for extent in extents:
        if isinstance(result, E.IntImm) and isinstance(extent, E.IntImm):
            result = E.IntImm(result.value * extent.value, like.dtype)
        else:
            result = E.Mul(result, _like(extent, like))
    return result


def _plus_times(offset: E.PrimExpr, index: E.PrimExpr, size: E.PrimExpr) -> E.PrimExpr:
    """offset + index * size, folded where index and size are constants."""
    if isinstance(index, E.IntImm) and isinstance(size, E.IntImm):
        moved = index.value * size.value
        return offset if moved == 0 else E.Add(offset, E.IntImm(moved, offset.dtype))
    return E.Add(offset, E.Mul(index, size))


def _like(expr: E.PrimExpr, other: E.PrimExpr) -> E.PrimExpr:
    return expr if expr.dtype == other.dtype else E.Cast(other.dtype, expr)


class HandleUses(Visitor):
    """Uses of a data handle other than through buffer accesses and pointer operands."""

    def __init__(self, handles: set[E.Var]) -> None:
        self.handles = handles
        self.found: E.Var | None = None

    def visit_Var(self, node: E.Var) -> None:
        if node in self.handles:
            self.found = node

    def visit_Call(self, node: E.Call) -> None:
        handles = {position - 1 for _, position, _ in pointers(node)}
        for position, arg in enumerate(node.args):
            if position not in handles:
                self.visit(arg)


def version_counts(
    candidates: tuple[Buffer, ...],
    accesses: list[Accesses],
    stages: tuple[int, ...],
    orders: tuple[int, ...],
    disjoint: Callable[[Buffer, int, int], bool] | None = None,
) -> dict[E.Var, int]:
    """How many copies of each candidate the iterations in flight need. `disjoint(buffer, w,
    r)` says that what statement w writes of the buffer, in any iteration, is never what
    statement r reads (as TVM's versioning asks: a nested pipeline's prologue fills one
    version of its fragments while the epilogue before it reads the other)."""
    counts: dict[E.Var, int] = {}
    for buffer in candidates:
        need = 1
        for w, writer in enumerate(accesses):
            if buffer.data not in writer.writes:
                continue
            for r, reader in enumerate(accesses):
                if buffer.data not in reader.reads or stages[r] <= stages[w]:
                    continue
                # the copy of iteration j + v is written at step j + v + stage(w); it must come
                # after the read of iteration j at step j + stage(r)
                versions = stages[r] - stages[w] + (1 if orders[r] > orders[w] else 0)
                if versions > need and not (disjoint and disjoint(buffer, w, r)):
                    need = versions
        counts[buffer.data] = need
    return counts


class Regions:
    """The regions each statement of a pipelined loop writes and reads, over every iteration
    of the loop, to tell statements that touch different parts of a buffer apart."""

    def __init__(
        self,
        loop: S.For,
        stmts: tuple[S.Stmt, ...],
        buffers: tuple[Buffer, ...],
        analyzer: Analyzer,
    ) -> None:
        self.loop = loop
        self.analyzer = analyzer
        data = {buffer.data: buffer for buffer in buffers}
        self.regions = []
        for stmt in stmts:
            block = S.SBlock("", (), (), (), stmt)
            self.regions.append(infer_access_regions(block, data))

    def disjoint(self, buffer: Buffer, writer: int, reader: int) -> bool:
        written = self._find(self.regions[writer][1], buffer)
        read = self._find(self.regions[reader][0], buffer)
        if written is None or read is None:
            return False  # a statement that writes the buffer lists no read of it: unknown
        return any(self._apart(a, b) for a, b in zip(written.region, read.region, strict=True))

    @staticmethod
    def _find(regions: tuple[BufferRegion, ...], buffer: Buffer) -> BufferRegion | None:
        return next((r for r in regions if r.buffer.data is buffer.data), None)

    def _apart(self, a: Range, b: Range) -> bool:
        domains = {self.loop.loop_var: Range(self.loop.min, self.loop.extent)}
        low_a, high_a = self._bounds(a, domains)
        low_b, high_b = self._bounds(b, domains)
        if low_a is None or high_a is None or low_b is None or high_b is None:
            return False
        prove = self.analyzer.can_prove
        return prove(E.LT(high_a, low_b), symbolic=True) or prove(
            E.LT(high_b, low_a), symbolic=True
        )

    def _bounds(
        self, item: Range, domains: dict[E.Var, Range]
    ) -> tuple[PrimExpr | None, PrimExpr | None]:
        last = E.Sub(E.Add(item.min, item.extent), E.IntImm(1, item.extent.dtype))
        return (
            relax(item.min, domains, self.analyzer).min,
            relax(self.analyzer.simplify(last), domains, self.analyzer).max,
        )


def versioned_buffer(buffer: Buffer, count: int) -> Buffer:
    """`buffer` with `count` versions: an outer dimension of that extent in front (a stride
    over one version where the buffer has strides), under a new data handle."""
    pointer = buffer.data.pointer or PointerType(buffer.dtype)
    data = E.Var(buffer.data.name, buffer.data.dtype, pointer)
    strides = (E.Mul(buffer.strides[0], buffer.shape[0]), *buffer.strides) if buffer.strides else ()
    count_expr = E.IntImm(count, buffer.index_dtype)
    return dataclasses.replace(
        buffer, data=data, shape=(count_expr, *buffer.shape), strides=strides
    )

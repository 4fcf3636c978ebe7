"""compact-buffer-allocation: each block-allocated buffer shrinks to the region its uses touch
within one execution of the allocating block, and its indices are rebased onto that region.

Expects opaque blocks (after plan-buffer-allocation and convert-blocks-to-opaque); leaves them.
A dimension is rebased onto its touched region when the region's size is a constant no larger
than the dimension's extent (a symbolic extent counts as the least value it can take, every
variable in it at least 1: `v` holds one element, `v * 32` thirty-two): it takes that size,
and its indices lose the region's start even when the size equals the extent (a `(1, 16)`
buffer indexed at `[vi, j]` is indexed at `[vi - vi, j]`, as TVM keeps it). A buffer
whose data pointer escapes (`tvm_access_ptr`, `B.data`) keeps its shape. Loops inside the
allocating block are relaxed; thread loops around it are relaxed too when the buffer's storage
scope is shared by their threads (a shared buffer over threadIdx and vthread, a global one over
blockIdx as well, warp memory over threadIdx.x, a local one over none), wherever those loops sit:

    for i in range(4):                              for i in range(4):
        with T.sblock(""):                              with T.sblock(""):
            A_local = T.sblock_alloc_buffer((4, 8)) ->      A_local = T.sblock_alloc_buffer((1, 8))
            A_local[i, j] = ...                              A_local[i - i, j] = ...

A buffer that a block's `buffer_dim_align` annotation (storage_align: entries (write index,
axis, factor, offset)) names gets strides, as TVM gives them: from the innermost dimension out,
the stride of an aligned axis is rounded up to the next `factor * k + offset`, so rows padded
that way land on different shared-memory banks:

    A_shared = T.sblock_alloc_buffer((16, 32), "float16", scope="shared")
    ... T.sblock_attr({"buffer_dim_align": [[0, 0, 32, 8]]})   (a block writing A_shared)
        ->  A_shared = T.sblock_alloc_buffer((16, 32), "float16", strides=(40, 1), ...)
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from tirc.analysis.arith.analyzer import Analyzer
from tirc.analysis.arith.int_set import relax
from tirc.analysis.storage_scope import can_relax_under_thread
from tirc.ir import expr as E
from tirc.ir import stmt as S
from tirc.ir.buffer import Buffer, BufferRegion, Range
from tirc.ir.dtype import INT32, DataType
from tirc.ir.function import PrimFunc
from tirc.ir.functor import Mutator, Visitor
from tirc.transform.pass_base import Dialect, FunctionPass

Box = list[tuple[E.PrimExpr | None, E.PrimExpr | None]]  # inclusive ends per dimension


class _Touched(Visitor):
    """The bounding box of every access to the given buffers, inner loops relaxed."""

    def __init__(self, buffers: tuple[Buffer, ...], outer: dict[E.Var, Range], shared: set[E.Var]):
        """`outer`: the loops around the allocation; `shared`: those of them relaxed too."""
        self.boxes: dict[int, Box] = {}
        self.wanted = {id(b): b for b in buffers}
        self.data = {b.data: b for b in buffers}
        self.escaped: set[int] = set()
        self.domains: dict[E.Var, Range] = {v: r for v, r in outer.items() if v in shared}
        self.analyzer = Analyzer.over(outer)

    def visit_For(self, node: S.For) -> None:
        self.domains[node.loop_var] = Range(node.min, node.extent)
        self.analyzer.bind(node.loop_var, Range(node.min, node.extent))
        self.generic_visit(node)
        del self.domains[node.loop_var]

    def visit_AttrStmt(self, node: S.AttrStmt) -> None:
        if not (isinstance(node.node, S.IterVar) and node.key in _THREAD_KEYS):
            self.generic_visit(node)
            return
        var = node.node.var
        self.domains[var] = Range(E.IntImm(0, node.value.dtype), node.value)
        self.analyzer.bind(var, self.domains[var])
        self.generic_visit(node)
        del self.domains[var]

    def visit_SBlock(self, node: S.SBlock) -> None:
        for match in node.match_buffers:
            if id(match.source.buffer) in self.wanted:
                for_region = [
                    (r.min, E.Sub(E.Add(r.min, r.extent), E.IntImm(1, r.extent.dtype)))
                    for r in match.source.region
                ]
                self.touch(match.source.buffer, [self.relaxed(lo, hi) for lo, hi in for_region])
        # regions are declarations; the accesses themselves are what count
        self.visit(node.body)
        if node.init is not None:
            self.visit(node.init)

    def visit_BufferLoad(self, node: E.BufferLoad) -> None:
        self.access(node.buffer, node.indices)
        self.visit(node.indices)

    def visit_BufferStore(self, node: S.BufferStore) -> None:
        self.access(node.buffer, node.indices)
        self.visit(node.indices)
        self.visit(node.value)

    def visit_Var(self, node: E.Var) -> None:
        buffer = self.data.get(node)
        if buffer is not None:
            self.escaped.add(id(buffer))

    def access(self, buffer: Buffer, indices: tuple[E.PrimExpr, ...]) -> None:
        if id(buffer) not in self.wanted:
            return
        ends = []
        for index in indices:
            if isinstance(index, E.Ramp):
                last = E.Add(
                    index.base,
                    E.Mul(index.stride, E.IntImm(index.lanes - 1, index.stride.dtype)),
                )
                ends.append(self.relaxed(index.base, last, both=True))
            elif index.dtype.is_vector:
                ends.append((None, None))
            elif buffer.scope == "local":
                ends.append(self.tightest(index))
            else:
                ends.append(self.relaxed(index, index))
        self.touch(buffer, ends)

    def tightest(self, index: E.PrimExpr) -> tuple[E.PrimExpr | None, E.PrimExpr | None]:
        """The index relaxed as written, or simplified first where that gives a smaller
        constant extent: a register array over `(k0 * 128 + tx * 4 + v) % 128 // 4` (a
        lane's slice of a row, laid out by transform_layout) holds the lane's `tx` alone,
        where relaxing the expression as written spans all 32 lanes."""
        plain = self.relaxed(index, index)
        simpler = self.analyzer.simplify(index)
        if simpler is index:
            return plain
        tight = self.relaxed(simpler, simpler)
        narrower = self.extent(tight)
        if narrower is not None and narrower < (self.extent(plain) or narrower + 1):
            return tight
        return plain

    def extent(self, ends: tuple[E.PrimExpr | None, E.PrimExpr | None]) -> int | None:
        low, high = ends
        if low is None or high is None:
            return None
        size = self.analyzer.simplify(E.Sub(high, _like(low, high) or low))
        return size.value + 1 if isinstance(size, E.IntImm) else None

    def relaxed(
        self, low: E.PrimExpr, high: E.PrimExpr, both: bool = False
    ) -> tuple[E.PrimExpr | None, E.PrimExpr | None]:
        a, b = relax(low, self.domains, self.analyzer), relax(high, self.domains, self.analyzer)
        if not both:
            return a.min, b.max
        if a.min is None or b.min is None or a.max is None or b.max is None:
            return None, None
        return (
            self.analyzer.simplify(E.Min(a.min, b.min)),
            self.analyzer.simplify(E.Max(a.max, b.max)),
        )

    def touch(self, buffer: Buffer, ends: Box) -> None:
        box = self.boxes.get(id(buffer))
        if box is None:
            self.boxes[id(buffer)] = list(ends)
            return
        for dim, ((lo, hi), (new_lo, new_hi)) in enumerate(zip(box, ends, strict=False)):
            new_lo, new_hi = _like(new_lo, lo), _like(new_hi, hi)
            box[dim] = (
                None if lo is None or new_lo is None else self.analyzer.simplify(E.Min(lo, new_lo)),
                None if hi is None or new_hi is None else self.analyzer.simplify(E.Max(hi, new_hi)),
            )


def _like(expr: E.PrimExpr | None, other: E.PrimExpr | None) -> E.PrimExpr | None:
    """`expr` in the dtype of `other` (index expressions mix int32 and int64)."""
    if expr is None or other is None or expr.dtype == other.dtype:
        return expr
    return E.Cast(other.dtype, expr)


def _compacted(
    buffer: Buffer, box: Box | None, analyzer: Analyzer
) -> tuple[Buffer, list[E.PrimExpr | None]] | None:
    """The shrunk buffer and the offset of each dimension, or None to keep it as it is."""
    if box is None or buffer.strides or buffer.axis_separators:
        return None
    shape: list[E.PrimExpr] = []
    offsets: list[E.PrimExpr | None] = []
    for extent, (low, high) in zip(buffer.shape, box, strict=False):
        size = None
        if low is not None and high is not None:
            size = analyzer.simplify(E.Add(E.Sub(high, low), E.IntImm(1, low.dtype)))
        if isinstance(size, E.IntImm) and _fits(size.value, extent):
            shape.append(E.IntImm(size.value, extent.dtype))
            offsets.append(None if E.is_const_int(low, 0) else low)
        else:
            shape.append(extent)
            offsets.append(None)
    if all(o is None for o in offsets) and list(buffer.shape) == shape:
        return None
    return dataclasses.replace(buffer, shape=tuple(shape)), offsets


def _fits(size: int, extent: E.PrimExpr) -> bool:
    """Whether a dimension of `extent` is rebased onto a touched region of constant `size`:
    when `size` is at most the extent (a symbolic extent counted as the least value it can
    take). A region as large as the extent still moves its offset to 0."""
    least = extent.value if isinstance(extent, E.IntImm) else _least(extent)
    return 0 < size <= least


def _least(extent: E.PrimExpr) -> int:
    """The least value a symbolic extent can take, each variable in it taken as at least 1 (a
    buffer with an empty dimension has nothing to keep, whatever it shrinks to):

        n -> 1      n * 32 -> 32      n + 8 -> 9      (n + 15) // 16 * 16 -> 16
        min(n, 4) -> 1      n - 1 -> 0 (unknown)
    """
    if isinstance(extent, E.IntImm):
        return extent.value
    if isinstance(extent, E.Var):
        return 1
    if isinstance(extent, E.Mul):
        return _least(extent.a) * _least(extent.b)
    if isinstance(extent, E.Add):
        return _least(extent.a) + _least(extent.b)
    if isinstance(extent, E.FloorDiv) and isinstance(extent.b, E.IntImm) and extent.b.value > 0:
        return _least(extent.a) // extent.b.value  # a padded extent: (n + 15) // 16 * 16
    if isinstance(extent, E.Min):
        return min(_least(extent.a), _least(extent.b))
    if isinstance(extent, E.Max):
        return max(_least(extent.a), _least(extent.b))
    if isinstance(extent, E.Cast):
        return _least(extent.value)
    return 0


class _Rebase(Mutator):
    def __init__(self, plans: dict[int, tuple[Buffer, list[E.PrimExpr | None]]]):
        self.plans = plans

    def indices(self, buffer: Buffer, indices: tuple[E.PrimExpr, ...]) -> tuple[E.PrimExpr, ...]:
        _, offsets = self.plans[id(buffer)]
        out = []
        for index, offset in zip(indices, offsets, strict=False):
            if offset is None:
                out.append(index)
            elif index.dtype.is_vector:
                out.append(E.Sub(index, E.Broadcast(offset, index.dtype.lanes)))
            else:
                out.append(_minus(index, _cast(offset, index.dtype)))
        return tuple(out)

    def visit_BufferLoad(self, node: E.BufferLoad) -> E.PrimExpr:
        node = self.generic_visit(node)
        if id(node.buffer) not in self.plans:
            return node
        return E.BufferLoad(
            self.plans[id(node.buffer)][0],
            self.indices(node.buffer, node.indices),
            node.predicate,
            span=node.span,
        )

    def visit_BufferStore(self, node: S.BufferStore) -> S.Stmt:
        node = self.generic_visit(node)
        if id(node.buffer) not in self.plans:
            return node
        return dataclasses.replace(
            node,
            buffer=self.plans[id(node.buffer)][0],
            indices=self.indices(node.buffer, node.indices),
        )

    def visit_BufferRegion(self, node: BufferRegion) -> BufferRegion:
        if id(node.buffer) not in self.plans:
            return self.generic_visit(node)
        new, offsets = self.plans[id(node.buffer)]
        region = tuple(
            r if o is None else Range(_minus(r.min, _cast(o, r.min.dtype)), r.extent)
            for r, o in zip(node.region, offsets, strict=False)
        )
        return BufferRegion(new, region, span=node.span)

    def visit_SBlock(self, node: S.SBlock) -> S.SBlock:
        block: S.SBlock = self.generic_visit(node)
        allocs = tuple(
            self.plans[id(b)][0] if id(b) in self.plans else b for b in block.alloc_buffers
        )
        if all(a is b for a, b in zip(allocs, block.alloc_buffers, strict=False)):
            return block
        return dataclasses.replace(block, alloc_buffers=allocs)


def _minus(index: E.PrimExpr, offset: E.PrimExpr) -> E.PrimExpr:
    """`index - offset`, folded when both are constants (as TVM's `-` folds them)."""
    if isinstance(index, E.IntImm) and isinstance(offset, E.IntImm):
        return E.IntImm(index.value - offset.value, index.dtype)
    return E.Sub(index, offset)


def _cast(expr: E.PrimExpr, dtype: DataType) -> E.PrimExpr:
    return expr if expr.dtype == dtype else E.Cast(dtype, expr)


ALIGN_KEY = "buffer_dim_align"

Alignments = dict[E.Var, dict[int, tuple[int, int]]]  # buffer data -> axis -> (factor, offset)


def _int(value: object) -> int | None:
    if isinstance(value, E.IntImm):
        return value.value
    return value if isinstance(value, int) and not isinstance(value, bool) else None


class _Alignments(Visitor):
    """Every block's `buffer_dim_align` entries, by the buffer they name."""

    def __init__(self) -> None:
        self.found: Alignments = {}

    def visit_SBlock(self, node: S.SBlock) -> None:
        entries = node.annotations.get(ALIGN_KEY)
        for entry in entries if isinstance(entries, (tuple, list)) else ():
            numbers = [_int(x) for x in entry] if isinstance(entry, (tuple, list)) else []
            if len(numbers) != 4 or None in numbers:
                continue
            index, axis, factor, offset = (n for n in numbers if n is not None)
            if 0 <= index < len(node.writes) and factor > 0:
                data = node.writes[index].buffer.data
                self.found.setdefault(data, {})[axis] = (factor, offset)
        self.generic_visit(node)


def _aligned(buffer: Buffer, aligns: dict[int, tuple[int, int]]) -> Buffer:
    """`buffer` with strides that pad each aligned axis to `factor * k + offset`."""
    analyzer = Analyzer()
    dtype = buffer.shape[0].dtype if buffer.shape else INT32
    stride: E.PrimExpr = E.IntImm(1, dtype)
    strides: list[E.PrimExpr] = []
    for axis in reversed(range(len(buffer.shape))):
        if axis in aligns:
            factor, offset = (E.IntImm(v, dtype) for v in aligns[axis])
            pad = E.FloorMod(E.Sub(E.Add(factor, offset), E.FloorMod(stride, factor)), factor)
            stride = analyzer.simplify(E.Add(stride, pad))
        strides.append(stride)
        stride = analyzer.simplify(E.Mul(stride, buffer.shape[axis]))
    return dataclasses.replace(buffer, strides=tuple(reversed(strides)))


class _Planner(Visitor):
    def __init__(self, alignments: Alignments) -> None:
        self.alignments = alignments
        self.plans: dict[int, tuple[Buffer, list[E.PrimExpr | None]]] = {}
        self.outer: dict[E.Var, Range] = {}
        self.threads: dict[E.Var, str] = {}  # thread tags of the outer thread loops

    def visit_For(self, node: S.For) -> None:
        self.outer[node.loop_var] = Range(node.min, node.extent)
        if node.thread_binding is not None:
            self.threads[node.loop_var] = node.thread_binding.thread_tag
        self.generic_visit(node)
        del self.outer[node.loop_var]
        self.threads.pop(node.loop_var, None)

    def visit_AttrStmt(self, node: S.AttrStmt) -> None:
        launched = node.node
        if not (isinstance(launched, S.IterVar) and node.key in _THREAD_KEYS):
            self.generic_visit(node)
            return
        var = launched.var
        self.outer[var] = Range(E.IntImm(0, node.value.dtype), node.value)
        self.threads[var] = launched.thread_tag or var.name
        self.generic_visit(node)
        del self.outer[var]
        del self.threads[var]

    def visit_SBlock(self, node: S.SBlock) -> None:
        groups: dict[frozenset[E.Var], list[Buffer]] = {}
        for buffer in node.alloc_buffers:
            shared = frozenset(
                var
                for var, tag in self.threads.items()
                if can_relax_under_thread(buffer.scope, tag)
            )
            groups.setdefault(shared, []).append(buffer)
        for shared, buffers in groups.items():
            touched = _Touched(tuple(buffers), self.outer, set(shared))
            touched.visit(node.body)
            if node.init is not None:
                touched.visit(node.init)
            for buffer in buffers:
                if id(buffer) in touched.escaped:
                    continue
                plan = _compacted(buffer, touched.boxes.get(id(buffer)), touched.analyzer)
                aligns = self.alignments.get(buffer.data)
                if aligns and not buffer.strides:
                    new, offsets = plan or (buffer, [None] * len(buffer.shape))
                    plan = _aligned(new, aligns), offsets
                if plan is not None:
                    self.plans[id(buffer)] = plan
        self.generic_visit(node)


_THREAD_KEYS = ("thread_extent", "virtual_thread")


@dataclass(frozen=True)
class CompactBufferAllocation(FunctionPass):
    name = "compact-buffer-allocation"
    expects = Dialect.OPAQUE_BLOCKS
    leaves = Dialect.OPAQUE_BLOCKS

    def run_function(self, func: PrimFunc) -> PrimFunc:
        alignments = _Alignments()
        alignments.visit(func.body)
        planner = _Planner(alignments.found)
        planner.visit(func.body)
        if not planner.plans:
            return func
        body = _Rebase(planner.plans).visit(func.body)
        return dataclasses.replace(func, body=body)

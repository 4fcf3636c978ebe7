"""Access regions: which part of which buffer a block reads and writes.

What the parser fills in for an s-tir block without `T.reads/T.writes`, and what primitives
recompute after a rewrite. Each access is relaxed over the loops inside the block, accesses to
one buffer are joined into their bounding box, and buffers are listed in order of first
access. A buffer the block writes is not also listed as read (the block owns it), buffers
the block allocates are not listed, and an opaque use of a buffer's data pointer touches all
of it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tirc.analysis.arith.analyzer import Analyzer
from tirc.analysis.arith.int_set import relax
from tirc.ir import expr as E
from tirc.ir import stmt as S
from tirc.ir.buffer import Buffer, BufferRegion, Range
from tirc.ir.expr import IntImm, PrimExpr, Var
from tirc.ir.functor import Visitor
from tirc.ir.substitute import substitute


@dataclass
class _Box:
    """A bounding box per dimension, inclusive ends; None: the whole dimension."""

    buffer: Buffer
    lows: list[PrimExpr | None] = field(default_factory=list)
    highs: list[PrimExpr | None] = field(default_factory=list)


class _Collector(Visitor):
    def __init__(self, excluded: set[int], data_buffers: dict[Var, Buffer]):
        self.excluded = excluded
        self.buffer_of_data = data_buffers
        self.matched: dict[int, BufferRegion] = {}
        self.domains: dict[Var, Range] = {}
        self.lets: dict[Var, PrimExpr] = {}
        self.reads: dict[int, _Box] = {}
        self.writes: dict[int, _Box] = {}
        self.analyzer = Analyzer()

    # -- scopes ------------------------------------------------------------------------------

    def visit_For(self, node: S.For) -> None:
        self.visit(node.min)
        self.visit(node.extent)
        self.domains[node.loop_var] = Range(node.min, node.extent)
        self.visit(node.body)
        del self.domains[node.loop_var]

    def visit_Bind(self, node: S.Bind) -> None:
        self.visit(node.value)
        self.lets[node.var] = substitute(node.value, self.lets)

    def visit_AllocBuffer(self, node: S.AllocBuffer) -> None:
        self.excluded.add(id(node.buffer))

    def visit_SBlockRealize(self, node: S.SBlockRealize) -> None:
        """A nested block touches what it declares, seen through its bindings."""
        for value in node.iter_values:
            self.visit(value)
        block = node.block
        mapping = {
            iv.var: value for iv, value in zip(block.iter_vars, node.iter_values, strict=True)
        }
        inner_excluded = {id(b) for b in block.alloc_buffers}
        for region in block.reads:
            if id(region.buffer) not in inner_excluded:
                self.touch(self.reads, substitute(region, mapping))
        for region in block.writes:
            if id(region.buffer) not in inner_excluded:
                self.touch(self.writes, substitute(region, mapping))

    # -- accesses ----------------------------------------------------------------------------

    def visit_BufferLoad(self, node: E.BufferLoad) -> None:
        # the loaded buffer is listed before the buffers its indices load (TVM's order)
        self.access(self.reads, node.buffer, node.indices)
        for index in node.indices:
            self.visit(index)

    def visit_BufferStore(self, node: S.BufferStore) -> None:
        self.visit(node.value)
        for index in node.indices:
            self.visit(index)
        self.access(self.writes, node.buffer, node.indices)

    def visit_Call(self, node: E.Call) -> None:
        if node.op == "tvm_access_ptr" and len(node.args) == 5 and isinstance(node.args[1], Var):
            buffer = self.buffer_of_data.get(node.args[1])
            mask = node.args[4]
            if buffer is not None:
                flags = mask.value if isinstance(mask, IntImm) else 3
                if flags & 1:
                    self.touch(self.reads, BufferRegion.full(buffer))
                if flags & 2:
                    self.touch(self.writes, BufferRegion.full(buffer))
                for arg in node.args[2:]:
                    self.visit(arg)
                return
        self.generic_visit(node)

    def visit_Var(self, node: Var) -> None:
        buffer = self.buffer_of_data.get(node)
        if buffer is not None:  # the data pointer escapes: anything may happen to the buffer
            self.touch(self.reads, BufferRegion.full(buffer))
            self.touch(self.writes, BufferRegion.full(buffer))

    def access(
        self, target: dict[int, _Box], buffer: Buffer, indices: tuple[PrimExpr, ...]
    ) -> None:
        source = self.matched.get(id(buffer))
        if source is not None:  # a match_buffer view: it touches its whole source region
            self.touch(target, source)
            return
        ranges = []
        for index in indices:
            index = substitute(index, self.lets)
            if isinstance(index, E.Ramp) and isinstance(index.stride, IntImm):
                last = E.Add(
                    index.base, E.Mul(index.stride, IntImm(index.lanes - 1, index.stride.dtype))
                )
                low = self.relax_end(index.base, lowest=index.stride.value >= 0)
                high = self.relax_end(last, lowest=index.stride.value < 0)
                ranges.append((low, high))
            else:
                interval = relax(index, self.domains, self.analyzer)
                ranges.append((interval.min, interval.max))
        self.merge(target, buffer, ranges)

    def relax_end(self, expr: PrimExpr, lowest: bool) -> PrimExpr | None:
        interval = relax(expr, self.domains, self.analyzer)
        return interval.min if lowest else interval.max

    def touch(self, target: dict[int, _Box], region: BufferRegion) -> None:
        source = self.matched.get(id(region.buffer))
        if source is not None:
            region = source
        ranges = []
        for item in region.region:
            last = E.Sub(E.Add(item.min, item.extent), IntImm(1, item.extent.dtype))
            low = relax(item.min, self.domains, self.analyzer).min
            high = relax(self.analyzer.simplify(last), self.domains, self.analyzer).max
            ranges.append((low, high))
        self.merge(target, region.buffer, ranges)

    def merge(
        self,
        target: dict[int, _Box],
        buffer: Buffer,
        ranges: list[tuple[PrimExpr | None, PrimExpr | None]],
    ) -> None:
        if id(buffer) in self.excluded:
            return
        box = target.get(id(buffer))
        if box is None:
            target[id(buffer)] = _Box(buffer, [r[0] for r in ranges], [r[1] for r in ranges])
            return
        for dim, (low, high) in enumerate(ranges):
            box.lows[dim] = self.join(box.lows[dim], low, E.Min)
            box.highs[dim] = self.join(box.highs[dim], high, E.Max)

    def join(self, a: PrimExpr | None, b: PrimExpr | None, combine: type) -> PrimExpr | None:
        if a is None or b is None:
            return None
        return self.analyzer.simplify(combine(a, b))


def _region(box: _Box) -> BufferRegion:
    analyzer = Analyzer()
    ranges = []
    for dim, extent in enumerate(box.buffer.shape):
        low, high = box.lows[dim], box.highs[dim]
        dtype = extent.dtype
        if low is None or high is None:
            ranges.append(Range(IntImm(0, dtype), extent))
            continue
        # the index dtype may differ from the shape's (a uint32 index into an int64 shape)
        size = analyzer.simplify(E.Add(E.Sub(high, low), IntImm(1, low.dtype)))
        ranges.append(Range(low, size))
    return BufferRegion(box.buffer, tuple(ranges))


def infer_access_regions(
    block: S.SBlock,
    data_buffers: dict[Var, Buffer] | None = None,
    *,
    reads_of_written: bool = False,
) -> tuple[tuple[BufferRegion, ...], tuple[BufferRegion, ...]]:
    """(reads, writes) of `block` computed from its body and init.

    `data_buffers` maps data handles to the buffers in scope, to resolve opaque uses of
    `A.data`; without it such uses are not seen. A buffer the block writes is left out of its
    reads, unless `reads_of_written` and the block has no init (TVM's rule for a block it
    builds: only a reduction's init makes the read of its output redundant).
    """
    excluded = {id(buffer) for buffer in block.alloc_buffers}
    collector = _Collector(excluded, dict(data_buffers or {}))
    for match in block.match_buffers:
        collector.matched[id(match.buffer)] = match.source
        collector.buffer_of_data[match.buffer.data] = match.buffer
    if block.init is not None:
        collector.visit(block.init)
    collector.visit(block.body)
    writes = tuple(_region(box) for box in collector.writes.values())
    reads = tuple(
        _region(box)
        for key, box in collector.reads.items()
        if key not in collector.writes or (reads_of_written and block.init is None)
    )
    return reads, writes

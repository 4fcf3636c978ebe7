"""Inferring a block's reads and writes when the text leaves them out, as TVM does at parse time.

Every access in the body is a point per dimension; loop variables of loops inside the block
are relaxed to their ranges by interval arithmetic, and nested blocks contribute their own
regions with their iteration variables replaced by their bindings, then relaxed. The
accesses of one buffer are united dimension by dimension (min of the lows, max of the
highs), in order of first access. Buffers the block allocates are left out; for a block
with an init, the buffers the init writes are left out of the reads. Not modelled: the
narrowing TVM applies under `if` conditions; direct use of a buffer's data pointer is an
error (the regions must then be written), as in TVM.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from tirc.ir import arith
from tirc.ir import expr as ir
from tirc.ir.buffer import Buffer, BufferRegion, Range
from tirc.ir.expr import BufferLoad, IntImm, PrimExpr, Var
from tirc.ir.functor import Visitor
from tirc.ir.stmt import AllocBuffer, BufferStore, DeclBuffer, For, SBlock, SBlockRealize, Stmt
from tirc.ir.structural import expr_key
from tirc.ir.substitute import substitute

if TYPE_CHECKING:
    from tirc.text.builder.stmt import Builder


class OpaqueAccess(Exception):
    def __init__(self, buffer: Buffer):
        super().__init__(buffer.name)
        self.buffer = buffer


@dataclass
class Interval:
    low: PrimExpr
    high: PrimExpr

    @property
    def is_point(self) -> bool:
        return self.low is self.high


def _bounds(a: Interval, b: Interval, combine: str) -> Interval:
    low = arith.arithmetic(combine, a.low, b.low)
    high = arith.arithmetic(combine, a.high, b.high)
    return Interval(low, high)


class Relaxer:
    """Interval evaluation of an index over the loop variables inside the block."""

    def __init__(self, domains: dict[Var, Interval]):
        self.domains = domains

    def mentions(self, expr: object) -> bool:
        found = False

        class Finder(Visitor):
            def visit_Var(inner, node: Var) -> None:  # noqa: N805
                nonlocal found
                if node in self.domains:
                    found = True

        Finder().visit(expr)
        return found

    def relax(self, expr: PrimExpr) -> Interval | None:
        """The range of `expr`; None when it cannot be bounded."""
        if not self.domains or not self.mentions(expr):
            return Interval(expr, expr)
        if isinstance(expr, Var):
            return self.domains[expr]
        if isinstance(expr, (ir.Add, ir.Sub, ir.Mul, ir.FloorDiv, ir.FloorMod, ir.Min, ir.Max)):
            return self.relax_binary(expr)
        return None

    def relax_binary(self, expr: Any) -> Interval | None:
        a, b = self.relax(expr.a), self.relax(expr.b)
        if a is None or b is None:
            return None
        if isinstance(expr, ir.Add):
            return _bounds(a, b, "+")
        if isinstance(expr, ir.Sub):
            return Interval(
                arith.arithmetic("-", a.low, b.high), arith.arithmetic("-", a.high, b.low)
            )
        if isinstance(expr, (ir.Min, ir.Max)):
            return _bounds(a, b, "min" if isinstance(expr, ir.Min) else "max")
        if not (b.is_point and isinstance(b.low, IntImm)):
            return None
        factor = b.low.value
        if isinstance(expr, ir.Mul):
            low, high = arith.arithmetic("*", a.low, factor), arith.arithmetic("*", a.high, factor)
            return Interval(low, high) if factor >= 0 else Interval(high, low)
        if factor <= 0:
            return None
        if isinstance(expr, ir.FloorDiv):
            return Interval(
                arith.arithmetic("floordiv", a.low, factor),
                arith.arithmetic("floordiv", a.high, factor),
            )
        return Interval(arith.make_const(0, expr.dtype), arith.make_const(factor - 1, expr.dtype))


# For `var op constant`: the largest value (or smallest, for >) the condition allows.
UPPER = {ir.LT: -1, ir.LE: 0}
LOWER = {ir.GT: 1, ir.GE: 0}
NEGATED: dict[type, type] = {ir.LT: ir.GE, ir.LE: ir.GT, ir.GT: ir.LE, ir.GE: ir.LT}
MIRRORED: dict[type, type] = {ir.LT: ir.GT, ir.LE: ir.GE, ir.GT: ir.LT, ir.GE: ir.LE}


def narrow(domains: dict[Var, Interval], condition: PrimExpr, negate: bool) -> dict[Var, Interval]:
    """Constant bounds a condition puts on loop variables (`k < 4` makes k at most 3)."""
    if isinstance(condition, ir.And) and not negate:
        return narrow(narrow(domains, condition.a, False), condition.b, False)
    if isinstance(condition, ir.Or) and negate:
        return narrow(narrow(domains, condition.a, True), condition.b, True)
    if isinstance(condition, ir.Not):
        return narrow(domains, condition.a, not negate)
    kind = type(condition)
    if not isinstance(condition, ir.CompareOp) or kind not in NEGATED:
        return domains
    a, b = condition.a, condition.b
    if isinstance(b, Var) and isinstance(a, IntImm):
        a, b, kind = b, a, MIRRORED[kind]
    if not (isinstance(a, Var) and a in domains and isinstance(b, IntImm)):
        return domains
    if negate:
        kind = NEGATED[kind]
    low, high = domains[a].low, domains[a].high
    if kind in UPPER and isinstance(high, IntImm):
        limit = b.value + UPPER[kind]
        if limit < high.value:
            high = IntImm(limit, high.dtype)
    elif kind in LOWER and isinstance(low, IntImm):
        limit = b.value + LOWER[kind]
        if limit > low.value:
            low = IntImm(limit, low.dtype)
    domains[a] = Interval(low, high)
    return domains


def union(a: PrimExpr, b: PrimExpr, pick: str) -> PrimExpr:
    """min (or max) of two bounds, decided when they differ by a constant."""
    if a is b or expr_key(a) == expr_key(b):
        return a
    difference = arith.constant_difference(a, b)
    if difference is not None:
        if pick == "min":
            return b if difference > 0 else a
        return a if difference > 0 else b
    return arith.arithmetic(pick, a, b)


class Collector(Visitor):
    """Records every access of the block body, relaxed, in order of first access."""

    def __init__(self, builder: Builder, owned: set[Buffer], matched: dict[Buffer, BufferRegion]):
        self.builder = builder
        self.owned = owned
        self.matched = matched
        self.domains: dict[Var, Interval] = {}
        self.reads: dict[Buffer, list[list[Interval]]] = {}
        self.writes: dict[Buffer, list[list[Interval]]] = {}
        self.data_vars = {b.data: b for b in builder.known_buffers()}

    def record(
        self, table: dict[Buffer, list[list[Interval]]], buffer: Buffer, intervals: list[Interval]
    ) -> None:
        if buffer in self.owned:
            return
        source = self.matched.get(buffer)
        if source is not None:
            buffer = source.buffer
            intervals = [self.relax_range(r) for r in source.region]
        table.setdefault(buffer, []).append(intervals)

    def relax_point(self, buffer: Buffer, axis: int, index: PrimExpr) -> Interval:
        interval = Relaxer(self.domains).relax(index)
        if interval is None:
            extent = buffer.shape[axis]
            zero = arith.make_const(0, extent.dtype)
            return Interval(zero, arith.arithmetic("-", extent, 1))
        return interval

    def relax_range(self, region: Range) -> Interval:
        relaxer = Relaxer(self.domains)
        last = arith.arithmetic("-", arith.arithmetic("+", region.min, region.extent), 1)
        low, high = relaxer.relax(region.min), relaxer.relax(last)
        if low is None or high is None:
            return Interval(region.min, last)
        return Interval(low.low, high.high)

    def visit_BufferLoad(self, node: BufferLoad) -> None:
        self.visit(node.indices)
        intervals = [self.relax_point(node.buffer, axis, i) for axis, i in enumerate(node.indices)]
        self.record(self.reads, node.buffer, intervals)

    def visit_BufferStore(self, node: BufferStore) -> None:
        self.visit(node.value)
        self.visit(node.indices)
        intervals = [self.relax_point(node.buffer, axis, i) for axis, i in enumerate(node.indices)]
        self.record(self.writes, node.buffer, intervals)

    def visit_Var(self, node: Var) -> None:
        buffer = self.data_vars.get(node)
        if buffer is not None and buffer not in self.owned:
            raise OpaqueAccess(buffer)

    def with_condition(self, condition: PrimExpr, branch: object, negate: bool) -> None:
        """Visit `branch` with the loop domains narrowed by `condition` (or its negation)."""
        saved = self.domains
        self.domains = narrow(dict(saved), condition, negate)
        try:
            self.visit(branch)
        finally:
            self.domains = saved

    def visit_IfThenElse(self, node: Any) -> None:
        self.visit(node.condition)
        self.with_condition(node.condition, node.then_case, False)
        if node.else_case is not None:
            self.with_condition(node.condition, node.else_case, True)

    def visit_Call(self, node: ir.Call) -> None:
        if node.op != "if_then_else":
            self.generic_visit(node)
            return
        condition, then_value, else_value = node.args
        if not isinstance(condition, PrimExpr):
            self.generic_visit(node)
            return
        self.visit(condition)
        self.with_condition(condition, then_value, False)
        self.with_condition(condition, else_value, True)

    def visit_DeclBuffer(self, node: Any) -> None:
        return  # declaring a view of a buffer's data is not an access of it

    def visit_For(self, node: For) -> None:
        last = arith.arithmetic("-", arith.arithmetic("+", node.min, node.extent), 1)
        outer = Relaxer(self.domains)
        low, high = outer.relax(node.min), outer.relax(last)
        if low is not None and high is not None:
            self.domains[node.loop_var] = Interval(low.low, high.high)
        self.visit(node.body)

    def visit_SBlockRealize(self, node: SBlockRealize) -> None:
        block = node.block
        self.visit(node.iter_values)
        self.visit(node.predicate)
        pairs = zip(block.iter_vars, node.iter_values, strict=True)
        mapping = {iv.var: value for iv, value in pairs}
        for table, regions in ((self.reads, block.reads), (self.writes, block.writes)):
            for region in regions:
                ranges = [substitute(r, mapping) for r in region.region]
                self.record(table, region.buffer, [self.relax_range(r) for r in ranges])


def to_regions(table: dict[Buffer, list[list[Interval]]], span: Any) -> tuple[BufferRegion, ...]:
    """The union of each buffer's accesses; the regions have the span of the block."""
    regions = []
    for buffer, accesses in table.items():
        ranges = []
        for axis in range(buffer.ndim):
            low, high = accesses[0][axis].low, accesses[0][axis].high
            for access in accesses[1:]:
                low = union(low, access[axis].low, "min")
                high = union(high, access[axis].high, "max")
            if low is high or expr_key(low) == expr_key(high):
                ranges.append(Range(low, arith.make_const(1, low.dtype), span=span))
            else:
                # both ends in one dtype, as a written slice has them (buffers.region_range)
                low, upper = arith.match_types(low, arith.arithmetic("+", high, 1))
                ranges.append(Range(low, arith.difference(upper, low), span=span))
        regions.append(BufferRegion(buffer, tuple(ranges), span=span))
    return tuple(regions)


def written_by(stmt: Stmt) -> set[Buffer]:
    found: set[Buffer] = set()

    class Writes(Visitor):
        def visit_BufferStore(self, node: BufferStore) -> None:
            found.add(node.buffer)
            self.visit(node.value)

    Writes().visit(stmt)
    return found


def infer_regions(
    builder: Builder, realize: SBlockRealize, need_reads: bool, need_writes: bool
) -> SBlockRealize:
    block: SBlock = realize.block
    owned = set(block.alloc_buffers) | local_buffers(block.body)
    matched = {m.buffer: m.source for m in block.match_buffers}
    collector = Collector(builder, owned, matched)
    try:
        collector.visit(block.body)
        if block.init is not None:
            collector.visit(block.init)
    except OpaqueAccess as opaque:
        raise builder.error(
            block.span,
            f"cannot infer the regions block {block.name} accesses: it uses the data pointer "
            f"of {opaque.buffer.name} directly; write T.reads and T.writes",
        ) from None
    except arith.ArithError as problem:
        raise builder.error(
            block.span, f"cannot infer the regions of block {block.name}: {problem}"
        ) from None
    reads, writes = block.reads, block.writes
    if need_reads:
        excluded = written_by(block.init) if block.init is not None else set()
        reads = tuple(
            r for r in to_regions(collector.reads, block.span) if r.buffer not in excluded
        )
    if need_writes:
        writes = to_regions(collector.writes, block.span)
    new_block = replace(block, reads=reads, writes=writes)
    return replace(realize, block=new_block)


def local_buffers(stmt: Stmt) -> set[Buffer]:
    """Buffers allocated or declared inside a statement (not visible outside the block)."""

    found: set[Buffer] = set()

    class Allocations(Visitor):
        def visit_AllocBuffer(self, node: AllocBuffer) -> None:
            found.add(node.buffer)

        def visit_DeclBuffer(self, node: DeclBuffer) -> None:
            found.add(node.buffer)

        def visit_SBlock(self, node: SBlock) -> None:
            found.update(node.alloc_buffers)
            self.generic_visit(node)

    Allocations().visit(stmt)
    return found

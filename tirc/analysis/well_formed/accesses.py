"""Accesses: a load or store that constant loop bounds show to index past a buffer's end (or
before its start) is an error, reported with the loop values that reach it.

Only what is provable is reported: the access must run whenever its loops do (not under an
`if`, `while`, `T.where`, `T.if_then_else` or `T.Select`, not in a `T.init()`, no `break`), its
loops must have constant extents, and a concrete iteration must be found whose index lies
outside the axis. Interval bounds, which may overestimate, only decide where to look.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from tirc.analysis.arith.bound import Bound, const_bound
from tirc.analysis.well_formed.checker import Checker
from tirc.diagnostics import Diagnostic, Note
from tirc.ir import expr as E
from tirc.ir.buffer import Buffer
from tirc.ir.expr import (
    Broadcast,
    BufferLoad,
    Call,
    IntImm,
    Let,
    PrimExpr,
    Ramp,
    Select,
    Var,
    is_true,
)
from tirc.ir.function import PrimFunc
from tirc.ir.functor import vars_in, walk
from tirc.ir.integer import floordiv, floormod, truncdiv, truncmod, wrap
from tirc.ir.node import Node
from tirc.ir.stmt import (
    AttrStmt,
    Bind,
    Break,
    BufferStore,
    Continue,
    For,
    IfThenElse,
    IterVar,
    SBlock,
    SBlockRealize,
    Stmt,
    While,
)
from tirc.ir.substitute import substitute

# Calls whose operands are not all evaluated (a branch), or are addresses, not accesses.
_GUARDING_CALLS = ("if_then_else", "address_of")
# At most this many loop values are tried in the search for an offending iteration.
_MOST_TRIES = 4096


@dataclass(frozen=True, slots=True)
class Counter:
    """A variable that runs through every value of [low, high]: a loop's or a thread's."""

    low: int
    high: int
    site: Node
    what: str  # "loop 'i'", "thread 'threadIdx.x'"


Witness = dict[Var, int]


class AccessChecker(Checker):
    def __init__(self) -> None:
        super().__init__()
        self.counters: dict[Var, Counter] = {}
        self.bounds: dict[Var, Bound] = {}  # counters, and block iteration variables' domains
        self.values: dict[Var, PrimExpr] = {}  # bindings and lets, in terms of counters
        self.guards = 0  # enclosing constructs that may skip an access
        self.reported: set[tuple[int, int, int]] = set()  # (statement, buffer, axis)
        self.statement: Stmt | None = None
        self.has_exits = False  # whether the function has a `break` or `continue` at all
        self.instance_buffers: set[Buffer] = set()  # allocated by blocks under loops

    @contextmanager
    def guarded(self, is_guarded: bool = True) -> Iterator[None]:
        self.guards += is_guarded
        try:
            yield
        finally:
            self.guards -= is_guarded

    @contextmanager
    def counting(self, var: Var, counter: Counter | None) -> Iterator[None]:
        saved_counter, saved_bound = self.counters.pop(var, None), self.bounds.pop(var, None)
        if counter is not None:
            self.counters[var] = counter  # last in the table: the table is in nesting order
            self.bounds[var] = Bound(counter.low, counter.high)
        try:
            yield
        finally:
            self.counters.pop(var, None)
            self.bounds.pop(var, None)
            if saved_counter is not None:
                self.counters[var] = saved_counter
            if saved_bound is not None:
                self.bounds[var] = saved_bound

    def visit_PrimFunc(self, func: PrimFunc) -> None:
        self.has_exits = has_exit(func.body)
        self.visit(func.body)

    def visit_For(self, stmt: For) -> None:
        self.visit(stmt.min)
        self.visit(stmt.extent)
        counter = None
        is_stepped = stmt.step is not None and not (
            isinstance(stmt.step, IntImm) and stmt.step.value == 1
        )
        if isinstance(stmt.min, IntImm) and isinstance(stmt.extent, IntImm) and not is_stepped:
            low, extent = stmt.min.value, stmt.extent.value
            if extent > 0:
                counter = Counter(low, low + extent - 1, stmt, f"loop '{stmt.loop_var.name}'")
        # A loop that may run no iteration, or leave early, may skip what is in it.
        with self.guarded(counter is None or (self.has_exits and has_exit(stmt.body))):
            with self.counting(stmt.loop_var, counter):
                self.visit(stmt.body)

    def visit_AttrStmt(self, stmt: AttrStmt) -> None:
        if not (isinstance(stmt.node, IterVar) and stmt.key in ("thread_extent", "virtual_thread")):
            self.generic_visit(stmt)
            return
        self.visit(stmt.value)
        thread = stmt.node
        counter = None
        if isinstance(stmt.value, IntImm) and stmt.value.value > 0:
            name = thread.thread_tag or thread.var.name
            counter = Counter(0, stmt.value.value - 1, stmt, f"thread '{name}'")
        with self.guarded(counter is None), self.counting(thread.var, counter):
            self.visit(stmt.body)

    def visit_IfThenElse(self, stmt: IfThenElse) -> None:
        self.visit(stmt.condition)
        with self.guarded():
            self.visit(stmt.then_case)
            if stmt.else_case is not None:
                self.visit(stmt.else_case)

    def visit_While(self, stmt: While) -> None:
        self.visit(stmt.condition)
        with self.guarded():
            self.visit(stmt.body)

    def visit_Bind(self, stmt: Bind) -> None:
        self.visit(stmt.value)
        self.values[stmt.var] = self.resolve(stmt.value)

    def visit_Let(self, expr: Let) -> None:
        self.visit(expr.value)
        self.values[expr.var] = self.resolve(expr.value)
        self.visit(expr.body)

    def visit_Select(self, expr: Select) -> None:
        self.visit(expr.condition)
        with self.guarded():
            self.visit(expr.true_value)
            self.visit(expr.false_value)

    def visit_Call(self, call: Call) -> None:
        if call.op not in _GUARDING_CALLS:
            self.generic_visit(call)
            return
        if call.op == "if_then_else":
            self.visit(call.args[0])
        with self.guarded():
            self.visit(call.args[1:] if call.op == "if_then_else" else call.args)

    def visit_SBlockRealize(self, stmt: SBlockRealize) -> None:
        self.visit(stmt.predicate)
        self.visit(stmt.iter_values)
        block = stmt.block
        saved = dict(self.bounds)
        for iter_var, value in zip(block.iter_vars, stmt.iter_values, strict=True):
            if value.dtype == iter_var.var.dtype:  # else the blocks rule reports the binding
                self.values[iter_var.var] = self.resolve(value)
            dom = iter_var.dom
            if dom is not None and isinstance(dom.min, IntImm) and isinstance(dom.extent, IntImm):
                if dom.extent.value > 0:
                    low = dom.min.value
                    self.bounds[iter_var.var] = Bound(low, low + dom.extent.value - 1)
        try:
            with self.guarded(not is_true(stmt.predicate)):
                self.visit(block)
        finally:
            self.bounds = saved

    def visit_SBlock(self, block: SBlock) -> None:
        if self.counters or self.guards:
            # A block under a loop allocates a buffer per instance, which TVM lets each
            # instance index as it pleases: compaction gives it the region the instance
            # touches, at that region's offset.
            self.instance_buffers.update(block.alloc_buffers)
        self.visit(block.alloc_buffers)
        self.visit(block.match_buffers)
        if block.init is not None:
            with self.guarded():  # runs only at the first reduction step, if ever
                self.visit(block.init)
        self.visit(block.body)

    def visit_BufferStore(self, stmt: BufferStore) -> None:
        outer, self.statement = self.statement, stmt
        try:
            self.visit(stmt.value)
            self.visit(stmt.indices)
            if stmt.predicate is None:
                self.check_access(stmt.buffer, stmt.indices, stmt)
        finally:
            self.statement = outer

    def visit_BufferLoad(self, load: BufferLoad) -> None:
        self.visit(load.indices)
        if load.predicate is None:
            self.check_access(load.buffer, load.indices, load)

    def resolve(self, expr: PrimExpr) -> PrimExpr:
        """`expr` with bound variables replaced by their values, in terms of counters."""
        if not self.values:
            return expr
        return substitute(expr, self.values)

    def check_access(self, buffer: Buffer, indices: tuple[PrimExpr, ...], access: Node) -> None:
        if (
            self.guards
            or buffer.buffer_type != "default"
            or len(indices) != len(buffer.shape)
            or buffer in self.instance_buffers
        ):
            return
        for axis, (index, extent) in enumerate(zip(indices, buffer.shape, strict=True)):
            if not isinstance(extent, IntImm):
                continue
            if index.dtype.is_vector and len(indices) > 1:
                continue  # a vector may run on into the following rows (tensor intrinsics do)
            if index_bound(index, self.bounds).is_within(0, extent.value - 1):
                continue
            key = (id(self.statement or access), id(buffer), axis)
            if key in self.reported:
                continue
            resolved = self.resolve(index)
            found = self.find_offending(resolved, extent.value)
            if found is None:
                continue
            self.reported.add(key)
            value, witness = found
            # Out only by a constant offset, with the loops inside the axis: a stencil's edge.
            # TVM's own tests index so; a guard or padding is usually what is missing.
            shifted = without_offset(resolved)
            side = 1 if value >= extent.value else -1
            is_edge = shifted is not resolved and (
                self.find_offending(shifted, extent.value, side) is None
            )
            self.report(buffer, axis, extent.value, access, value, witness, is_edge)

    def find_offending(
        self, index: PrimExpr, extent: int, side: int = 0
    ) -> tuple[int, Witness] | None:
        """An index value outside [0, extent) (past the end for `side` 1, before the start
        for -1) and loop values that give it, if any is found: first among the corners of
        the loops' ranges, then (when there are few) among all their values."""
        counters = vars_in(index)
        if any(var not in self.counters for var in counters):
            return None  # depends on a value no loop sets: nothing is provable
        order = [var for var in self.counters if var in counters]  # outermost first
        if 2 ** len(order) > _MOST_TRIES:
            return None  # too many loops to try their corners
        ranges = [(self.counters[var].low, self.counters[var].high) for var in order]
        corners = itertools.product(*[sorted({low, high}) for low, high in ranges])
        found = worst(index, order, corners, extent, side)
        if found is None and count_values(ranges) <= _MOST_TRIES:
            every = itertools.product(*[range(low, high + 1) for low, high in ranges])
            found = worst(index, order, every, extent, side)
        return found

    def report(
        self,
        buffer: Buffer,
        axis: int,
        extent: int,
        access: Node,
        value: int,
        witness: Witness,
        is_edge: bool,
    ) -> None:
        where = ", ".join(f"{var.name} = {number}" for var, number in witness.items())
        side = "past its end" if value >= extent else "before its start"
        axis_name = f" on axis {axis}" if len(buffer.shape) > 1 else ""
        size = f"of extent {extent}" if len(buffer.shape) > 1 else f"of {extent} elements"
        notes = [
            Note(f"{self.counters[var].what} reaches {number}", self.counters[var].site.span)
            for var, number in witness.items()
        ]
        shape = ", ".join(str(d.value) if isinstance(d, IntImm) else "?" for d in buffer.shape)
        notes.append(Note(f"'{buffer.name}' has shape ({shape})", buffer.span))
        message = f"'{buffer.name}' is indexed {side}: index {value}{axis_name}, {size}" + (
            f", when {where}" if where else ""
        )
        if is_edge:
            notes.insert(
                0,
                Note(
                    "the loops stay inside the axis; the index's constant offset "
                    "takes it out: guard the access or pad the buffer"
                ),
            )
            self.warning(message, access, *notes)
        else:
            self.error(message, access, *notes)


def worst(
    index: PrimExpr,
    order: list[Var],
    points: Iterator[tuple[int, ...]],
    extent: int,
    side: int,
) -> tuple[int, Witness] | None:
    """Among `points` (values of `order`), the one whose index lies farthest outside on
    `side` (1: past the end, -1: before the start, 0: either)."""
    best: tuple[int, int, Witness] | None = None
    for point in points:
        witness = dict(zip(order, point, strict=True))
        for value in lane_values(index, witness):
            if side == 1 and value < extent or side == -1 and value >= 0:
                continue
            distance = value - (extent - 1) if value >= extent else -value
            if distance > 0 and (best is None or distance > best[0]):
                best = (distance, value, witness)
    return None if best is None else (best[1], best[2])


def lane_values(index: PrimExpr, witness: Witness) -> list[int]:
    """The index's value in each lane at `witness` (none when it cannot be evaluated)."""
    value = evaluate(index, witness)
    if value is None:
        return []
    return value if isinstance(value, list) else [value]


def count_values(ranges: list[tuple[int, int]]) -> int:
    total = 1
    for low, high in ranges:
        total *= high - low + 1
        if total > _MOST_TRIES:
            break
    return total


def index_bound(index: PrimExpr, bounds: dict[Var, Bound]) -> Bound:
    """Bounds of a scalar index, or of every lane of a Ramp or Broadcast one."""
    if isinstance(index, Broadcast):
        return const_bound(index.value, bounds)
    if isinstance(index, Ramp) and isinstance(index.stride, IntImm):
        base = const_bound(index.base, bounds)
        reach = index.stride.value * (index.lanes - 1)
        if base.min is None or base.max is None:
            return base
        return Bound(base.min + min(reach, 0), base.max + max(reach, 0))
    return const_bound(index, bounds)


Value = int | list[int]

_BINARY: dict[type, Callable[[int, int], int]] = {
    E.Add: lambda a, b: a + b,
    E.Sub: lambda a, b: a - b,
    E.Mul: lambda a, b: a * b,
    E.FloorDiv: floordiv,
    E.FloorMod: floormod,
    E.Div: truncdiv,
    E.Mod: truncmod,
    E.Min: min,
    E.Max: max,
}


def evaluate(expr: PrimExpr, witness: Witness) -> Value | None:
    """The value of integer expression `expr` at `witness`; None where it depends on
    anything else (a load, a call, an unknown variable) or divides by zero."""
    if isinstance(expr, IntImm):
        return expr.value
    if isinstance(expr, Var):
        return witness.get(expr)
    dtype = expr.dtype
    if not dtype.element.is_integer:
        return None
    if isinstance(expr, Ramp):
        base, stride = evaluate(expr.base, witness), evaluate(expr.stride, witness)
        if not isinstance(base, int) or not isinstance(stride, int):
            return None
        return [wrap(base + lane * stride, dtype.element) for lane in range(expr.lanes)]
    if isinstance(expr, Broadcast):
        value = evaluate(expr.value, witness)
        return [value] * expr.lanes if isinstance(value, int) else None
    if isinstance(expr, E.Cast):
        inner = evaluate(expr.value, witness)
        if inner is None or not expr.value.dtype.element.is_integer:
            return None
        if isinstance(inner, list):
            return [wrap(lane, dtype.element) for lane in inner]
        return wrap(inner, dtype)
    combine = _BINARY.get(type(expr))
    if combine is None:
        return None
    if not isinstance(expr, (E.BinaryOp, E.CompareOp, E.LogicalOp)):
        return None
    a = evaluate(expr.a, witness)
    b = evaluate(expr.b, witness)
    if a is None or b is None:
        return None
    pairs = lanes_of(a, b)
    if pairs is None:
        return None
    try:
        results = [wrap(combine(x, y), dtype.element) for x, y in pairs]
    except ZeroDivisionError:
        return None
    return results if isinstance(a, list) or isinstance(b, list) else results[0]


def lanes_of(a: Value, b: Value) -> list[tuple[int, int]] | None:
    if isinstance(a, int) and isinstance(b, int):
        return [(a, b)]
    left = a if isinstance(a, list) else None
    right = b if isinstance(b, list) else None
    if left is not None and right is not None:
        return list(zip(left, right, strict=True)) if len(left) == len(right) else None
    if left is not None and isinstance(b, int):
        return [(x, b) for x in left]
    if right is not None and isinstance(a, int):
        return [(a, y) for y in right]
    return None


def without_offset(index: PrimExpr) -> PrimExpr:
    """`index` without the constants added to or subtracted from it (the lanes' base for
    a Ramp); `index` itself when there are none."""
    if isinstance(index, Ramp):
        base = without_offset(index.base)
        return index if base is index.base else Ramp(base, index.stride, index.lanes)
    stripped = index
    while True:
        if isinstance(stripped, (E.Add, E.Sub)) and isinstance(stripped.b, IntImm):
            stripped = stripped.a
        elif isinstance(stripped, E.Add) and isinstance(stripped.a, IntImm):
            stripped = stripped.b
        else:
            return stripped


def has_exit(stmt: Stmt) -> bool:
    """Whether `stmt` holds a `break` or `continue` that may end an iteration early."""
    found: list[Node] = []

    def collect(node: Node) -> None:
        if isinstance(node, (Break, Continue)):
            found.append(node)

    walk(stmt, collect)
    return bool(found)


def check_accesses(func: PrimFunc) -> list[Diagnostic]:
    checker = AccessChecker()
    checker.visit(func)
    return checker.diagnostics

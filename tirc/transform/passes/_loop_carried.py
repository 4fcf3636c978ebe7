"""Whether one iteration of a loop may read a value of a buffer that another iteration left
in it: what plan-buffer-allocation asks before it allocates a buffer inside a loop, which
gives each iteration storage of its own (unroll-loop makes one buffer per copy).

The answer is "no" only when each read of the buffer in the loop body is proved either to
read a value written earlier in the same iteration (by a store under no condition the loop
nest does not fill, or by a loop nest of stores whose indices fill a box exactly: a bijective
iterator map counting in mixed radix), or to read where no other iteration writes (some
dimension separates the two for every other iteration). A block that hands the buffer to a
call or names part of it through match_buffer (a tensor intrinsic) is taken to read and write
what it declares. Anything else (a loop that may break or not run, an index that reads
memory, the data pointer used outside such a block) counts as carried.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from tirc.analysis.arith.analyzer import Analyzer
from tirc.analysis.arith.bound import Bound
from tirc.analysis.arith.int_set import relax
from tirc.analysis.arith.iter_map import Level, detect_iter_map
from tirc.analysis.effects import reads_no_memory
from tirc.ir import expr as E
from tirc.ir import stmt as S
from tirc.ir.buffer import Buffer, BufferRegion, Range
from tirc.ir.expr import IntImm, PrimExpr, Var
from tirc.ir.functor import Visitor, uses_var, vars_in, walk
from tirc.ir.node import Node
from tirc.ir.substitute import substitute

Box = tuple[tuple[PrimExpr, PrimExpr], ...]  # per dimension, the least and greatest index


@dataclass(frozen=True)
class _Write:
    """The points `indices` take as the variables of `free` range over their domains (each
    from 0) where `predicate` holds: a store, and the loops left since it ran. `box` is the
    box they fill exactly; None while the predicate names a loop not yet left."""

    indices: tuple[PrimExpr, ...]
    free: tuple[tuple[Var, PrimExpr], ...]
    predicate: PrimExpr | None
    box: Box | None


def carries_values(loop: S.For, buffer: Buffer, outer: Sequence[Node] = ()) -> bool:
    """Whether an iteration of `loop` may read a value of `buffer` written by another one (or
    one the analysis cannot place), so that allocating the buffer per iteration would change
    what the program computes. `outer` are the loops and blocks around it, whose variables
    the body names."""
    iteration = _Iteration(buffer)
    for scope in outer:
        if isinstance(scope, S.For):
            iteration.analyzer.bind(scope.loop_var, Range(scope.min, scope.extent))
        elif isinstance(scope, S.SBlock):
            for iter_var in scope.iter_vars:
                if iter_var.dom is not None:
                    iteration.analyzer.bind(iter_var.var, iter_var.dom)
    iteration.analyzer.bind(loop.loop_var, Range(loop.min, loop.extent))
    iteration.visit(loop.body)
    if iteration.opaque:
        return True
    # a read no write of its own iteration covers still sees the same value wherever the
    # buffer lives if no other iteration writes there
    return any(
        not _apart(read, write, loop, iteration.analyzer)
        for read in iteration.unproved
        for write in iteration.written
    )


class _Iteration(Visitor):
    """Walks one iteration of a loop body in execution order, keeping the writes of `buffer`
    that have surely happened so far (`covered`) and checking each read against them."""

    def __init__(self, buffer: Buffer) -> None:
        self.buffer = buffer
        self.analyzer = Analyzer()
        self.values: dict[Var, PrimExpr] = {}  # block iterators and bound names -> values
        self.covered: list[_Write] = []
        self.opaque = False  # a use the analysis cannot place
        self.inner: dict[Var, Range] = {}  # the loops entered inside the iteration
        # reads that no earlier write of the iteration covers, and every write, as the boxes
        # they may touch over the whole iteration (None: anywhere)
        self.unproved: list[Box | None] = []
        self.written: list[Box | None] = []
        self.fresh = 0

    # -- accesses ------------------------------------------------------------------------------

    def read(self, box: Box) -> None:
        if not any(write.box is not None and self.covers(write.box, box) for write in self.covered):
            self.unproved.append(self.relaxed(box))

    def relaxed(self, box: Box | None) -> Box | None:
        """`box` over every value of the loops entered inside the iteration."""
        if box is None:
            return None
        result: list[tuple[PrimExpr, PrimExpr]] = []
        for low, high in box:
            least = relax(low, self.inner, self.analyzer).min
            most = relax(high, self.inner, self.analyzer).max
            if least is None or most is None:
                return None
            result.append((least, most))
        return tuple(result)

    def covers(self, outer: Box, inner: Box) -> bool:
        prove = self.analyzer.can_prove
        return all(
            prove(E.LE(low, least), symbolic=True) and prove(E.LE(most, high), symbolic=True)
            for (low, high), (least, most) in zip(outer, inner, strict=True)
        )

    def write(
        self,
        indices: tuple[PrimExpr, ...],
        free: tuple[tuple[Var, PrimExpr], ...] = (),
        predicate: PrimExpr | None = None,
    ) -> None:
        if not reads_no_memory((indices, predicate)):
            return  # the index may mean another element by the time of the read
        names = {var for var, _ in free}
        box = None
        if predicate is None or not vars_in(predicate) - names:
            box = _exact_box(indices, free, predicate, self.analyzer)
        # without a box (a predicate that names loops not left yet, a digit of an index that
        # only the loops around make whole), it may get one when the next loop is left
        self.covered.append(_Write(indices, free, predicate, box))

    def point(self, indices: tuple[PrimExpr, ...]) -> Box | None:
        """The box one access's indices touch, after substituting bound names; None for an
        index the analysis does not read (a vector of non-constant stride)."""
        box: list[tuple[PrimExpr, PrimExpr]] = []
        for index in indices:
            index = substitute(index, self.values) if self.values else index
            if isinstance(index, E.Ramp):
                if not isinstance(index.stride, IntImm):
                    return None
                last = E.Add(
                    index.base, IntImm(index.stride.value * (index.lanes - 1), index.base.dtype)
                )
                low, high = (index.base, last) if index.stride.value >= 0 else (last, index.base)
                box.append((low, high))
            elif isinstance(index, E.Broadcast):
                box.append((index.value, index.value))
            else:
                box.append((index, index))
        return tuple(box)

    def region_box(self, region: BufferRegion) -> Box:
        box = []
        for extent in region.region:
            low = substitute(extent.min, self.values) if self.values else extent.min
            high = E.Sub(E.Add(low, extent.extent), IntImm(1, extent.extent.dtype))
            box.append((low, self.analyzer.simplify(high)))
        return tuple(box)

    # -- scopes --------------------------------------------------------------------------------

    def conditional(self, body: S.Stmt, condition: PrimExpr | None, keep: bool = False) -> None:
        """`body` run only when `condition` holds: its writes count for its own reads, and
        with `keep` for later ones under the condition (a predicate a loop nest may fill)."""
        mark = len(self.covered)
        forget = self.analyzer.assume(condition) if condition is not None else None
        self.visit(body)
        if forget is not None:
            forget()
        inside = self.covered[mark:]
        del self.covered[mark:]
        if not keep or condition is None:
            return
        for write in inside:
            both = condition if write.predicate is None else E.And(condition, write.predicate)
            self.write(write.indices, write.free, both)

    # -- statements ----------------------------------------------------------------------------

    def visit_BufferLoad(self, node: E.BufferLoad) -> None:
        self.visit(node.indices)
        if node.buffer is self.buffer:
            box = self.point(node.indices)
            if box is None:
                self.unproved.append(None)
            else:
                self.read(box)

    def visit_BufferStore(self, node: S.BufferStore) -> None:
        self.visit(node.value)
        self.visit(node.indices)
        if node.predicate is not None:
            self.visit(node.predicate)
        if node.buffer is not self.buffer:
            return
        box = self.point(node.indices)
        self.written.append(self.relaxed(box))
        if node.predicate is not None or box is None:
            return
        if all(low is high for low, high in box):
            self.write(tuple(low for low, _ in box))
        else:
            # a vector store: the lanes as one more free variable
            self.write_box(box)

    def write_box(self, box: Box) -> None:
        indices: list[PrimExpr] = []
        free: list[tuple[Var, PrimExpr]] = []
        for low, high in box:
            extent = self.analyzer.simplify(E.Add(E.Sub(high, low), IntImm(1, low.dtype)))
            if isinstance(extent, IntImm) and extent.value == 1:
                indices.append(low)
                continue
            if not isinstance(extent, IntImm) or extent.value < 1:
                return
            self.fresh += 1
            offset = Var(f"lane{self.fresh}", low.dtype)
            free.append((offset, extent))
            indices.append(E.Add(low, offset))
        self.write(tuple(indices), tuple(free))

    def visit_Var(self, node: E.Var) -> None:
        if node is self.buffer.data:
            self.opaque = True  # an opaque use outside a block that declares it

    def visit_Call(self, node: E.Call) -> None:
        if _has_opaque_use(node, self.buffer):
            self.opaque = True  # likewise: an address, which the callee may write through
            return
        self.visit(node.args)

    def visit_For(self, node: S.For) -> None:
        self.visit(node.min)
        self.visit(node.extent)
        self.analyzer.bind(node.loop_var, Range(node.min, node.extent))
        self.inner[node.loop_var] = Range(node.min, node.extent)
        mark = len(self.covered)
        self.visit(node.body)
        del self.inner[node.loop_var]
        inside = self.covered[mark:]
        del self.covered[mark:]
        if not self.analyzer.can_prove(E.GE(node.extent, IntImm(1, node.extent.dtype))):
            return  # it may not run at all
        if _leaves_early(node.body):
            return
        if node.step is not None and not (isinstance(node.step, IntImm) and node.step.value == 1):
            return  # its variable skips values
        self.fresh += 1
        start = Var(f"{node.loop_var.name}_{self.fresh}", node.loop_var.dtype)
        shifted = {node.loop_var: E.Add(start, node.min)}
        for write in inside:
            indices = tuple(substitute(index, shifted) for index in write.indices)
            predicate = None if write.predicate is None else substitute(write.predicate, shifted)
            self.write(indices, (*write.free, (start, node.extent)), predicate)

    def visit_While(self, node: S.While) -> None:
        self.visit(node.condition)
        self.conditional(node.body, None)

    def visit_IfThenElse(self, node: S.IfThenElse) -> None:
        self.visit(node.condition)
        condition = self.substituted(node.condition)
        self.conditional(node.then_case, condition, keep=node.else_case is None)
        if node.else_case is not None:
            self.conditional(node.else_case, E.Not(condition))

    def visit_Bind(self, node: S.Bind) -> None:
        self.visit(node.value)
        self.values[node.var] = self.substituted(node.value)

    def visit_DeclBuffer(self, node: S.DeclBuffer) -> None:
        if node.buffer.data is self.buffer.data or (
            node.data is not None and uses_var(node.data, self.buffer.data)
        ):
            self.opaque = True  # a view of the buffer under another name

    def visit_SBlockRealize(self, node: S.SBlockRealize) -> None:
        self.visit(node.iter_values)
        self.visit(node.predicate)
        block = node.block
        for iter_var, value in zip(block.iter_vars, node.iter_values, strict=True):
            self.values[iter_var.var] = self.substituted(value)
        predicate: PrimExpr | None = self.substituted(node.predicate)
        if predicate is not None and self.analyzer.can_prove(predicate):
            predicate = None
        aliased = any(match.source.buffer is self.buffer for match in block.match_buffers)
        if aliased or _has_opaque_use((block.body, block.init), self.buffer):
            self.opaque_block(block, predicate)
            return
        if block.init is not None:
            self.conditional(block.init, predicate)
        if predicate is None:
            self.visit(block.body)
        else:
            self.conditional(block.body, predicate, keep=True)

    def opaque_block(self, block: S.SBlock, predicate: PrimExpr | None) -> None:
        """A block that names part of the buffer under another name (match_buffer) or hands
        its address to a call (a tensor intrinsic): what it reads and writes is taken to be
        what it declares, reads first."""
        reads = [region for region in block.reads if region.buffer is self.buffer]
        writes = [region for region in block.writes if region.buffer is self.buffer]
        if not reads and not writes:
            self.opaque = True
            return
        for region in reads:
            self.read(self.region_box(region))
        for region in writes:
            box = self.region_box(region)
            self.written.append(self.relaxed(box))
            if predicate is None:
                self.write_box(box)

    def substituted(self, expr: PrimExpr) -> PrimExpr:
        return substitute(expr, self.values) if self.values else expr


def _has_opaque_use(node: object, buffer: Buffer) -> bool:
    """Whether `node`, outside the blocks nested in it, names the buffer's data pointer or
    takes an element's address."""
    finder = _OpaqueUse(buffer)
    finder.visit(node)
    return finder.found


class _OpaqueUse(Visitor):
    def __init__(self, buffer: Buffer) -> None:
        self.buffer = buffer
        self.found = False

    def visit_SBlockRealize(self, node: S.SBlockRealize) -> None:
        pass  # its own uses are its own

    def visit_Var(self, node: Var) -> None:
        self.found = self.found or node is self.buffer.data

    def visit_Call(self, node: E.Call) -> None:
        for arg in node.args:
            if arg is self.buffer or (
                node.op == "address_of"
                and isinstance(arg, E.BufferLoad)
                and arg.buffer is self.buffer
            ):
                self.found = True
        self.generic_visit(node)


def _apart(read: Box | None, write: Box | None, loop: S.For, analyzer: Analyzer) -> bool:
    """Whether what an iteration of `loop` reads (`read`) lies apart from what every other
    iteration writes (`write`): some dimension separates them, for the iterations before it
    and for those after it."""
    if read is None or write is None:
        return False
    var = loop.loop_var
    distance = Var(f"{var.name}_distance", var.dtype)
    analyzer.bind(distance, Bound(0, None))
    one = IntImm(1, var.dtype)
    for other in (E.Sub(E.Sub(var, one), distance), E.Add(E.Add(var, one), distance)):
        there = {var: other}
        if not any(
            analyzer.can_prove(E.LT(high, substitute(low_w, there)), symbolic=True)
            or analyzer.can_prove(E.LT(substitute(high_w, there), low), symbolic=True)
            for (low, high), (low_w, high_w) in zip(read, write, strict=True)
        ):
            return False
    return True


def _leaves_early(body: S.Stmt) -> bool:
    """Whether a `break` or `continue` may end some iteration before its last statement."""
    found = False

    def look(node: object) -> None:
        nonlocal found
        found = found or isinstance(node, (S.Break, S.Continue))

    walk(body, look)
    return found


def _exact_box(
    indices: tuple[PrimExpr, ...],
    free: tuple[tuple[Var, PrimExpr], ...],
    predicate: PrimExpr | None,
    analyzer: Analyzer,
) -> Box | None:
    """The box the points of `indices` fill exactly as the `free` variables range from 0 over
    their extents (where `predicate` holds), or None where they may leave holes in it: the
    indices must be a bijective iterator map whose every index counts its digits in mixed
    radix (scales 1, e1, e1 * e2, ...), so that index d takes each value of
    [base, base + e1 * e2 * ...) and independently of the others."""
    used = {var: extent for var, extent in free if uses_var((indices, predicate), var)}
    if not used:
        return None if predicate is not None else tuple((index, index) for index in indices)
    domains: dict[Var, Range] = {}
    for var, extent in used.items():
        extent = analyzer.simplify(extent)
        if not isinstance(extent, IntImm) or extent.value < 1:
            return None
        domains[var] = Range(IntImm(0, var.dtype), extent)
        analyzer.bind(var, domains[var])  # a fresh name: nothing else reads it
    result = detect_iter_map(list(indices), domains, predicate, Level.BIJECTIVE, analyzer)
    if not result.ok:
        return None
    box: list[tuple[PrimExpr, PrimExpr]] = []
    for total, index in zip(result.sums, indices, strict=True):
        expected = 1
        for split in sorted(total.splits, key=lambda split: split.scale):
            if split.scale != expected or not isinstance(split.extent, int):
                return None
            if split.divisor is not None:
                return None
            expected *= split.extent
        high = E.Add(total.base, IntImm(expected - 1, index.dtype))
        box.append((analyzer.simplify(total.base), analyzer.simplify(high)))
    return tuple(box)

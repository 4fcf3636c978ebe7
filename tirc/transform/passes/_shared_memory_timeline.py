"""When each shared buffer of a kernel is in use, as merge-shared-memory-allocations plans it:
the kernel's statements in order (positions), the buffers each touches, and the barriers
between them; a warp-specialized split is its consumers' statements, the producer's accesses
placed where the consumers know them done.

A buffer is in use from the first position that touches it to the last. Accesses that go on
after their statement count until what ends them: a wgmma's reads until a later
`ptx_wgmma_wait_group(0)` statement, a TMA store's reads until a `ptx_tma_store_wait(0)`, a TMA
load's writes, outside a split's producer, until the kernel ends.

In a split (`T.attr(0, "warp_specialize_scope", P)` around `if <producers>: ... else:
<consumers>`, inject-warp-specialization's), the positions are the consumers' statements;
the producer's accesses span the consumers' positions from the first up to the statement
whose wait makes them all visible: the consumers' loop that waits unconditionally, every
iteration, on an mbarrier the producer signals (its TMA loads complete on it, or it arrives on
it), where all the producer's accesses sit in one loop of the same range that signals it. Each
producer iteration's accesses precede its signal, the consumers wait for every iteration's,
so after their loop nothing the producer did is in flight. Where the producer has another
form, its accesses span the whole split. The consumers' named barrier `T.ptx_bar_sync(1, C)`
(thread-sync's, C the block's threads but the producers) orders the consumers' accesses, and,
through their waits, the producer's.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tirc.diagnostics import DiagnosticError
from tirc.ir import expr as E
from tirc.ir import stmt as S
from tirc.ir.functor import Mutator, walk
from tirc.ir.named_barrier import SYNC as NAMED_SYNC
from tirc.ir.node import Node
from tirc.ir.structural import structural_equal
from tirc.ir.tma import TMA_LOADS, tma_load
from tirc.transform.passes.inject_warp_specialization import SCOPE as SPLIT
from tirc.transform.passes.inject_warp_specialization import split_branches
from tirc.transform.passes.storage_rewrite import handles
from tirc.transform.passes.thread_sync import CONSUMER_BARRIER, named_sync, split_consumers

_THREAD_TAGS = ("threadIdx.x", "threadIdx.y", "threadIdx.z")
# calls whose reads of shared memory go on after them, and the wait (of 0 groups) that ends them
_ASYNC_READS = {"ptx_wgmma": "ptx_wgmma_wait_group", "ptx_tma_store": "ptx_tma_store_wait"}
_SIGNALS = ("ptx_mbarrier_arrive", "ptx_mbarrier_arrive_expect_tx", "ptx_mbarrier_arrive_cp_async")


@dataclass
class Timeline:
    """A kernel's positions: `units[p]` its statement, `uses[p]` the handles in use there."""

    units: list[S.Stmt] = field(default_factory=list)
    uses: list[set[E.Var]] = field(default_factory=list)
    syncs: set[int] = field(default_factory=set)  # block barriers: every thread
    consumer_syncs: set[int] = field(default_factory=set)  # the split consumers' barrier
    consumers: range = range(0)  # the split consumers' positions
    barrier: S.Evaluate | None = None  # the consumers' named barrier, to put where needed

    def add(self, stmt: S.Stmt) -> int:
        self.units.append(stmt)
        self.uses.append(_uses(stmt))
        if _is_sync(stmt):
            self.syncs.add(len(self.units) - 1)
        return len(self.units) - 1

    def touched(self, handle: E.Var) -> list[int]:
        return [p for p, handles in enumerate(self.uses) if handle in handles]

    def ordered(self, handle: E.Var, last: int, first: int, before: set[int]) -> bool:
        """Whether a barrier orders every access to `handle` (last at `last`) before the
        statement at `first`: a block barrier between, or, with both in the consumers, theirs
        (one at a position, or one put just before a position in `before`), where the
        accesses before the split are followed by a block barrier before it."""
        if any(last < s < first for s in self.syncs):
            return True
        if last not in self.consumers or first not in self.consumers:
            return False
        if not any(last < s < first for s in self.consumer_syncs) and not any(
            last < p <= first for p in before
        ):
            return False
        return self.settled_before_split(handle)

    def settled_before_split(self, handle: E.Var) -> bool:
        """Whether `handle`'s accesses before the split are followed by a block barrier
        before it (the consumers' barrier does not wait for the producers)."""
        early = [p for p in self.touched(handle) if p < self.consumers.start]
        return not early or any(early[-1] < s < self.consumers.start for s in self.syncs)


def _is_sync(stmt: S.Stmt) -> bool:
    """A block barrier: `T.tvm_storage_sync` of shared memory (of "warp", a `__syncwarp`,
    orders one warp's lanes alone)."""
    if not (isinstance(stmt, S.Evaluate) and isinstance(stmt.value, E.Call)):
        return False
    call = stmt.value
    scope = call.args[0] if call.args else None
    return (
        call.op == "tvm_storage_sync"
        and isinstance(scope, E.StringImm)
        and scope.value in ("shared", "shared.dyn")
    )


def _is_consumer_sync(stmt: S.Stmt, count: int) -> bool:
    if not (isinstance(stmt, S.Evaluate) and isinstance(stmt.value, E.Call)):
        return False
    call = stmt.value
    values = [arg.value if isinstance(arg, E.IntImm) else None for arg in call.args]
    return call.op == NAMED_SYNC and values == [CONSUMER_BARRIER, count]


def _uses(stmt: Node) -> set[E.Var]:
    """Data handles a statement mentions (an allocation alone does not use its buffer)."""
    found = handles(stmt)
    return found.accessed | found.other


def _units(stmt: S.Stmt) -> list[S.Stmt]:
    """Statements in order, looking through sequences and thread launches."""
    if isinstance(stmt, S.SeqStmt):
        return [unit for child in stmt.stmts for unit in _units(child)]
    if isinstance(stmt, S.AttrStmt) and stmt.key == "thread_extent":
        return _units(stmt.body)
    return [stmt]


def _calls(node: Node) -> list[E.Call]:
    found: list[E.Call] = []
    walk(node, lambda item: found.append(item) if isinstance(item, E.Call) else None)
    return found


def _thread_extents(kernel: S.Stmt) -> dict[str, E.PrimExpr]:
    extents: dict[str, E.PrimExpr] = {}

    def look(node: Node) -> None:
        if isinstance(node, S.AttrStmt) and node.key == "thread_extent":
            if isinstance(node.node, S.IterVar) and node.node.thread_tag in _THREAD_TAGS:
                extents[node.node.thread_tag] = node.value

    walk(kernel, look)
    return extents


def timeline(kernel: S.AttrStmt) -> Timeline:
    """The positions of `kernel` (its outermost launch)."""
    line = Timeline()
    extents = _thread_extents(kernel)
    for unit in _units(kernel.body):
        found = split_branches(unit) if isinstance(unit, S.AttrStmt) and unit.key == SPLIT else None
        if found is None or line.consumers:  # one split a kernel is planned through
            line.add(unit)
            continue
        assert isinstance(unit, S.AttrStmt)
        try:
            count = split_consumers(unit, extents)
        except DiagnosticError:  # no named barrier: the split stays one statement
            line.add(unit)
            continue
        bindings, branches, consumer_code = found
        for binding in bindings:
            line.add(binding)
        start = len(line.units)
        for stmt in _units(consumer_code):
            position = line.add(stmt)
            if _is_consumer_sync(stmt, count):
                line.consumer_syncs.add(position)
        line.consumers = range(start, len(line.units))
        line.barrier = named_sync(count, unit.span)
        producer = branches.then_case
        done = _producer_done(producer, line.units[start:])
        end = start + done if done is not None else len(line.units) - 1
        handles = _uses(producer) | _uses(branches.condition)
        for position in range(start, end + 1):
            line.uses[position] |= handles
    _extend_async(line)
    return line


def _extend_async(line: Timeline) -> None:
    """Reads that go on after their statement are in use until their wait; TMA loads'
    writes outside a split's producer until the end."""
    count = len(line.units)
    for position in range(count):
        unit = line.units[position]
        for op, wait in _ASYNC_READS.items():
            handles = _open_reads(unit, op, wait)
            if not handles:
                continue
            end = next(
                (q for q in range(position + 1, count) if _waits_all(line.units[q], wait)),
                count - 1,
            )
            for q in range(position + 1, end + 1):
                line.uses[q] |= handles
        loads = {tma_load(call).shared for call in _calls(unit) if call.op in TMA_LOADS}
        handles = {handle for handle in loads if isinstance(handle, E.Var)}
        for q in range(position + 1, count):
            line.uses[q] |= handles


def _open_reads(unit: S.Stmt, op: str, wait: str) -> set[E.Var]:
    """The handles `op` calls in `unit` read that no later wait of 0 in `unit` ends."""
    open_handles: set[E.Var] = set()
    for call in _calls(unit):
        if call.op == op:
            open_handles |= _uses(call)
        elif call.op == wait and _is_zero(call.args[0]):
            open_handles = set()
    return open_handles


def _is_zero(expr: object) -> bool:
    return isinstance(expr, E.IntImm) and expr.value == 0


def _waits_all(stmt: S.Stmt, wait: str) -> bool:
    return any(call.op == wait and _is_zero(call.args[0]) for call in _calls(stmt))


def _producer_done(producer: S.Stmt, consumers: list[S.Stmt]) -> int | None:
    """The index in `consumers` of the loop after which the producer's accesses are all
    visible to the consumers (the module docstring's conditions), or None."""
    loops = [node for node in _nodes(producer) if isinstance(node, S.For) and _signals(node.body)]
    if len(loops) != 1:
        return None
    (loop,) = loops
    if _uses(_Without(loop).visit(producer)) & _shared_handles(producer):
        return None  # the producer touches shared memory outside its loop
    signalled = _signals(loop.body)
    for index, stmt in enumerate(consumers):
        if isinstance(stmt, S.For) and _same_range(stmt, loop) and _waits_each(stmt, signalled):
            return index
    return None


def _nodes(node: Node) -> list[Node]:
    found: list[Node] = []
    walk(node, found.append)
    return found


def _signals(node: Node) -> set[E.Var]:
    """The mbarriers `node` arrives on, or completes TMA loads on."""
    found: set[E.Var] = set()
    for call in _calls(node):
        if call.op in _SIGNALS and isinstance(call.args[0], E.Var):
            found.add(call.args[0])
        elif call.op in TMA_LOADS:
            barrier = tma_load(call).barrier
            if isinstance(barrier, E.Var):
                found.add(barrier)
    return found


def _shared_handles(node: Node) -> set[E.Var]:
    """The handles of shared memory `node` touches (buffers, and pointer-typed variables)."""
    found: set[E.Var] = set()
    for handle in _uses(node):
        pointer = handle.pointer
        if pointer is not None and pointer.scope in ("shared", "shared.dyn"):
            found.add(handle)
    return found


class _Without(Mutator):
    def __init__(self, loop: S.For) -> None:
        self.loop = loop

    def visit_For(self, node: S.For) -> S.Stmt:
        if node is self.loop:
            return S.Evaluate(E.IntImm(0))
        return self.generic_visit(node)


def _same_range(a: S.For, b: S.For) -> bool:
    return _same(a.min, b.min) and _same(a.extent, b.extent)


def _same(a: E.PrimExpr, b: E.PrimExpr) -> bool:
    """The same expression of the same variables."""
    return structural_equal(a, b) and _variables(a) == _variables(b)


def _variables(expr: E.PrimExpr) -> list[int]:
    return [id(node) for node in _nodes(expr) if isinstance(node, E.Var)]


def _waits_each(loop: S.For, barriers: set[E.Var]) -> bool:
    """Whether every iteration of `loop` waits on one of `barriers` (a wait in the body's
    own sequence, not under a condition)."""
    for stmt in _units(loop.body):
        if isinstance(stmt, S.Evaluate) and isinstance(stmt.value, E.Call):
            call = stmt.value
            if call.op == "ptx_mbarrier_wait" and call.args[0] in barriers:
                return True
    return False

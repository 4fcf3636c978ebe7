"""Storage reuse across a whole allocation scope (the function's body, a thread launch's or a
parallel loop's) for the allocations whose storage a program, not a backend, lays out: global
ones (a CPU function's temporaries) and tagged local ones (`local.L0A`: an accelerator's
scratchpad). Plain `local` and `warp` allocations are registers, which the backend's register
allocator shares better (as TVM 0.27 leaves them), and one of 32 bits or less is not worth it.

Each allocation's lifetime is the span, in execution order, from its first access to its
last; an access inside a loop that does not hold the allocation stands for the whole loop
(its value lives across iterations). Allocations of one scope whose lifetimes do not overlap
share one allocation, made at the top of the scope and as large as the largest in bytes: one
of the first's dtype reads and writes it directly, one of another dtype through a view of its
data (`T.decl_buffer(..., data=A.data)`) made just after it (`can_share` says which dtypes).
Lifetimes that meet in one loop share too where that loop writes the later in place of the
earlier (`is_in_place`: `for j: C[j] = B[j] * 2`), and an allocation nothing uses goes.
Allocating above a loop what was allocated inside it is sound: an allocation inside a loop
starts each iteration undefined, so no iteration reads what another left there; and the
threads of a scope (a launch's, a parallel loop's) each keep storage of their own.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from tirc.ir import expr as E
from tirc.ir import stmt as S
from tirc.ir.buffer import Buffer
from tirc.ir.canonical import to_sum
from tirc.ir.dtype import DataType
from tirc.ir.functor import Mutator, Visitor, walk
from tirc.ir.structural import structural_equal


def is_reusable(scope: str) -> bool:
    """Whether allocations of `scope` share storage here: global, or local with a tag."""
    return scope == "global" or (scope.startswith("local.") and scope != "local.dyn")


def opens_scope(stmt: S.Stmt) -> bool:
    """Whether `stmt`'s body is an allocation scope of its own: a thread launch or a parallel
    loop, whose threads each have their own storage."""
    if isinstance(stmt, S.AttrStmt):
        return stmt.key in ("thread_extent", "virtual_thread")
    return isinstance(stmt, S.For) and stmt.kind is S.ForKind.PARALLEL


def element_bytes(dtype: DataType) -> int | None:
    """The bytes of one element, where storage of it may hold another dtype's: whole bytes
    (no bool, sub-byte or scalable type, no handle)."""
    if dtype.kind in ("bool", "handle", "void") or dtype.scalable or dtype.bits % 8:
        return None
    return dtype.bits // 8 * dtype.lanes


def can_share(owner: Buffer, member: Buffer) -> bool:
    """Whether `member` may live in `owner`'s storage, from its start: one scope, and one
    dtype or one whose element size divides the owner's (an allocation aligned for the
    owner's elements is then aligned for the member's: a float32 one holds int16 or int8,
    not float64). Registers (`local`, `warp`) share within one dtype only: a view of another
    type is a pointer cast, which would keep the array out of registers."""
    if owner.scope != member.scope:
        return False
    if owner.dtype == member.dtype:
        return True
    if owner.scope in ("local", "warp"):
        return False
    wide, narrow = element_bytes(owner.dtype), element_bytes(member.dtype)
    return wide is not None and narrow is not None and wide % narrow == 0


def grown_to_hold(owner: Buffer, members: list[Buffer]) -> Buffer:
    """`owner`, one-dimensional, with as many elements as hold the largest of `members` in
    bytes (itself where that is its size already)."""
    size = max(E.int_value(member.shape[0]) * member.dtype.bytes for member in [owner, *members])
    extent = -(-size // owner.dtype.bytes)
    if extent == E.int_value(owner.shape[0]):
        return owner
    return dataclasses.replace(owner, shape=(E.IntImm(extent, owner.shape[0].dtype),))


def target_in(owner: Buffer, member: Buffer) -> Buffer:
    """What `member`'s accesses read and write once it lives in `owner`'s storage: `owner`
    itself where the dtypes agree, else `member` as a view of `owner`'s data (declared with
    `T.decl_buffer(..., data=owner.data)`, as `A.view("int16")` is)."""
    if member.dtype == owner.dtype:
        return owner
    return dataclasses.replace(member, data=owner.data)


def _candidate(buffer: Buffer) -> bool:
    return (
        is_reusable(buffer.scope)
        and len(buffer.shape) == 1
        and isinstance(buffer.shape[0], E.IntImm)
        and not buffer.dtype.scalable
        and buffer.shape[0].value * buffer.dtype.bits * buffer.dtype.lanes > 32
        and isinstance(buffer.shape[0], E.IntImm)
        and not buffer.strides
        and buffer.elem_offset is None
    )


@dataclass
class _Life:
    buffer: Buffer
    loops: tuple[int, ...]  # the loops around the allocation
    first: int = -1
    last: int = -1
    touched: bool = False
    # the loop (its id) whose span gives `first` / `last`, where an access in a loop that
    # does not hold the allocation does
    first_loop: int | None = None
    last_loop: int | None = None


@dataclass
class _Timeline(Visitor):
    """The lifetime of each candidate allocation of one scope (nested scopes left out)."""

    clock: int = 0
    loops: list[int] = field(default_factory=list)  # ids of the loops open now
    spans: dict[int, tuple[int, int]] = field(default_factory=dict)  # loop id -> its span
    loop_nodes: dict[int, S.Stmt] = field(default_factory=dict)  # loop id -> the loop
    attributed: set[E.Var] = field(default_factory=set)  # data handles an attribute names
    lives: dict[E.Var, _Life] = field(default_factory=dict)
    accesses: list[tuple[E.Var, int, tuple[int, ...]]] = field(default_factory=list)
    escaping: set[E.Var] = field(default_factory=set)
    nested: int = 0  # depth of nested allocation scopes around the walk

    def tick(self) -> int:
        self.clock += 1
        return self.clock

    def visit_AllocBuffer(self, node: S.AllocBuffer) -> None:
        if self.nested == 0 and _candidate(node.buffer):
            self.lives[node.buffer.data] = _Life(node.buffer, tuple(self.loops))
        self.tick()

    def access(self, data: E.Var) -> None:
        if self.nested:
            self.escaping.add(data)  # a thread of a nested scope reaches it: leave it alone
        else:
            self.accesses.append((data, self.tick(), tuple(self.loops)))

    def visit_BufferLoad(self, node: E.BufferLoad) -> None:
        self.visit(node.indices)
        if node.predicate is not None:
            self.visit(node.predicate)
        self.access(node.buffer.data)

    def visit_BufferStore(self, node: S.BufferStore) -> None:
        self.visit(node.value)
        self.visit(node.indices)
        if node.predicate is not None:
            self.visit(node.predicate)
        self.access(node.buffer.data)

    def visit_Var(self, node: E.Var) -> None:
        self.escaping.add(node)  # a data handle named otherwise than by an access

    def visit_DeclBuffer(self, node: S.DeclBuffer) -> None:
        self.escaping.add(node.buffer.data)
        if node.data is not None:
            self.visit(node.data)

    def repeated(self, node: S.Stmt, header: tuple[object, ...], body: S.Stmt) -> None:
        self.visit(header)
        key = id(node)
        start = self.tick()
        self.loops.append(key)
        nested = opens_scope(node)
        self.nested += nested
        self.visit(body)
        self.nested -= nested
        self.loops.pop()
        self.spans[key] = (start, self.tick())
        self.loop_nodes[key] = node

    def visit_For(self, node: S.For) -> None:
        self.repeated(node, (node.min, node.extent), node.body)

    def visit_While(self, node: S.While) -> None:
        self.repeated(node, (), S.seq(S.Evaluate(node.condition), node.body))

    def visit_Call(self, node: E.Call) -> None:
        for arg in node.args:
            if isinstance(arg, Buffer):
                self.escaping.add(arg.data)  # a builtin handed the buffer itself
            elif node.op == "address_of" and isinstance(arg, E.BufferLoad):
                self.escaping.add(arg.buffer.data)  # a pointer that may outlive the access
        self.generic_visit(node)

    def visit_AttrStmt(self, node: S.AttrStmt) -> None:
        if isinstance(node.node, E.Var):
            self.attributed.add(node.node)
        if opens_scope(node):
            self.repeated(node, (node.value,), node.body)
        else:
            self.visit(node.value)
            self.visit(node.body)

    def lifetimes(self) -> list[_Life]:
        for data, time, loops in self.accesses:
            life = self.lives.get(data)
            if life is None:
                continue
            depth = len(life.loops)
            start = end = time
            loop = loops[depth] if len(loops) > depth else None
            if loop is not None:
                start, end = self.spans[loop]
            if not life.touched:
                life.first, life.last, life.touched = start, end, True
                life.first_loop = life.last_loop = loop
                continue
            if start < life.first:
                life.first, life.first_loop = start, loop
            if end > life.last:
                life.last, life.last_loop = end, loop
        return [
            life for data, life in self.lives.items() if life.touched and data not in self.escaping
        ]

    def unused(self) -> set[E.Var]:
        """The candidate allocations nothing reads, writes or names (after `lifetimes`)."""
        return {
            data
            for data, life in self.lives.items()
            if not life.touched and data not in self.escaping and data not in self.attributed
        }


def is_in_place(earlier: _Life, later: _Life, loops: dict[int, S.Stmt]) -> bool:
    """Whether `later` may take `earlier`'s storage where the one loop that reads `earlier`
    last writes `later` first: a nest of loops around one store of `later` whose value
    reads `earlier` only at the stored index, which no two iterations share (`for j: E[j] =
    D[j] + 1`: each iteration reads its element before it overwrites it, and no other
    iteration reads that element)."""
    loop = earlier.last_loop
    if loop is None or loop != later.first_loop or earlier.buffer.dtype != later.buffer.dtype:
        return False
    extents: dict[E.Var, int] = {}
    node = loops[loop]
    while isinstance(node, S.For) and node.kind is not S.ForKind.PARALLEL:
        if not isinstance(node.extent, E.IntImm):
            return False
        extents[node.loop_var] = node.extent.value
        node = node.body
    if not (
        isinstance(node, S.BufferStore)
        and node.buffer.data is later.buffer.data
        and node.predicate is None
        and len(node.indices) == 1
        and node.indices[0].dtype.is_scalar
    ):
        return False
    loads: list[E.BufferLoad] = []
    walk(
        (node.value, node.indices),
        lambda n: loads.append(n) if isinstance(n, E.BufferLoad) else None,
    )
    for load in loads:
        if load.buffer.data is later.buffer.data:
            return False
        if load.buffer.data is earlier.buffer.data and (
            load.predicate is not None or not structural_equal(load.indices, node.indices)
        ):
            return False
    return is_injective(node.indices[0], extents)


def is_injective(index: E.PrimExpr, extents: dict[E.Var, int]) -> bool:
    """Whether `index`, a sum of the loop variables of `extents` (each from 0 or its loop's
    start, whichever) with constant scales, takes a different value at each iteration: every
    variable that varies appears, each scale larger than the span of the smaller ones (mixed
    radix, as `i * 16 + j` over j in [0, 16))."""
    total = to_sum(index)
    scales: dict[E.Var, int] = {}
    for atom, coeff in total.terms.values():
        if not isinstance(atom, E.Var) or atom not in extents:
            return False
        scales[atom] = abs(coeff)
    if any(extent > 1 and var not in scales for var, extent in extents.items()):
        return False
    span = 0
    for var, scale in sorted(scales.items(), key=lambda item: item[1]):
        if scale <= span:
            return False
        span += scale * (extents[var] - 1)
    return True


def plan(body: S.Stmt) -> tuple[dict[E.Var, Buffer], set[E.Var]]:
    """For the candidate allocations of the scope whose body is `body`, each one that shares
    storage -> what its accesses use (`target_in`) the allocation of its group, grown to hold
    the group's largest in bytes: the group's first member, by first use, with its data
    handle; and the allocations nothing uses, to drop."""
    timeline = _Timeline()
    timeline.visit(body)
    groups: list[tuple[list[_Life], int]] = []  # members, last use of the group
    for life in sorted(timeline.lifetimes(), key=lambda life: (life.first, life.last)):
        for index, (members, last) in enumerate(groups):
            if not can_share(members[0].buffer, life.buffer):
                continue
            if last < life.first or is_in_place(members[-1], life, timeline.loop_nodes):
                members.append(life)
                groups[index] = (members, life.last)
                break
        else:
            groups.append(([life], life.last))
    shared: dict[E.Var, Buffer] = {}
    for members, _ in groups:
        if len(members) < 2:
            continue
        buffers = [member.buffer for member in members]
        grown = grown_to_hold(buffers[0], buffers[1:])
        for buffer in buffers:
            shared[buffer.data] = target_in(grown, buffer)
    return shared, timeline.unused()


class _Rewrite(Mutator):
    """Drops the shared allocations and redirects their accesses; nested scopes are left to
    their own plan."""

    def __init__(self, shared: dict[E.Var, Buffer], dropped: set[E.Var]) -> None:
        self.shared = shared
        self.dropped = dropped

    def visit_SeqStmt(self, node: S.SeqStmt) -> S.Stmt:
        kept = [
            stmt
            for stmt in node.stmts
            if not (isinstance(stmt, S.AllocBuffer) and stmt.buffer.data in self.dropped)
        ]
        return S.seq(*(self.visit(stmt) for stmt in kept))

    def visit_BufferLoad(self, node: E.BufferLoad) -> E.PrimExpr:
        node = self.generic_visit(node)
        target = self.shared.get(node.buffer.data)
        return node if target is None else dataclasses.replace(node, buffer=target)

    def visit_BufferStore(self, node: S.BufferStore) -> S.Stmt:
        node = self.generic_visit(node)
        target = self.shared.get(node.buffer.data)
        return node if target is None else dataclasses.replace(node, buffer=target)


def reuse_storage(body: S.Stmt) -> S.Stmt:
    """`body`, a function's, with the global and tagged local allocations of each allocation
    scope in it sharing storage where their lifetimes allow."""
    return _reuse_here(_Scopes().visit(body))


def _reuse_here(body: S.Stmt) -> S.Stmt:
    shared, unused = plan(body)
    if not shared and not unused:
        return body
    allocations: dict[E.Var, S.AllocBuffer] = {}

    class _Allocations(Visitor):
        def visit_AllocBuffer(self, node: S.AllocBuffer) -> None:
            allocations[node.buffer.data] = node

    _Allocations().visit(body)
    made: list[S.Stmt] = [
        dataclasses.replace(allocations[data], buffer=target)
        for data, target in shared.items()
        if data is target.data
    ]
    made += [  # the views of another dtype, after the allocation they view
        S.DeclBuffer(target, target.data)
        for target in shared.values()
        if target is not shared[target.data]
    ]
    rewritten: S.Stmt = _Rewrite(shared, set(shared) | unused).visit(body)
    return S.seq(*made, rewritten)


class _Scopes(Mutator):
    """Plans each nested allocation scope on its own, innermost first."""

    def visit_AttrStmt(self, node: S.AttrStmt) -> S.Stmt:
        node = self.generic_visit(node)
        if not opens_scope(node):
            return node
        body = _reuse_here(node.body)
        return node if body is node.body else dataclasses.replace(node, body=body)

    def visit_For(self, node: S.For) -> S.Stmt:
        node = self.generic_visit(node)
        if not opens_scope(node):
            return node
        body = _reuse_here(node.body)
        return node if body is node.body else dataclasses.replace(node, body=body)

"""plan-buffer-allocation: each block-allocated buffer moves to the lowest common ancestor of
its uses, so that later passes allocate it as late as possible and compact it per iteration.

Expects s-tir; leaves s-tir. A use is a load, a store, a match_buffer source or an opaque use
of the data pointer; a block whose non-spatial (reduce, scan, opaque) iteration variables are
bound to loops keeps the buffers it writes above those loops, across which their values carry
(a reduction's accumulator), and a buffer it reads or writes at an index of a non-reduce one
stays above that variable's loops too (a rolling buffer read at the previous iteration's
rows). A global buffer stays above every blockIdx loop of the function (at most just inside
the innermost one), since all blocks of a grid share it. Nor does a buffer move into a
serial or unrolled loop whose iterations may pass values to one another through it (one reads
what another wrote: `_loop_carried`), where TVM moves it all the same.
When the ancestor is a loop, its body is wrapped in a new opaque block that allocates:

    A_local = T.sblock_alloc_buffer((8,))     for i in range(4):
    for i in range(4):                    ->      with T.sblock(""):
        (uses of A_local)                             A_local = T.sblock_alloc_buffer((8,))
                                                      (uses of A_local)
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from tirc.analysis.regions import infer_access_regions
from tirc.analysis.storage_scope import GLOBAL, scope_rank
from tirc.ir import dtype as dt
from tirc.ir import expr as E
from tirc.ir import stmt as S
from tirc.ir.buffer import Buffer
from tirc.ir.function import PrimFunc
from tirc.ir.functor import Mutator, Visitor
from tirc.ir.node import Node
from tirc.transform.parsed_regions import parsed_region
from tirc.transform.pass_base import Dialect, FunctionPass
from tirc.transform.passes._loop_carried import carries_values

Path = tuple[Node, ...]  # the scopes (blocks and loops) from the root down


def _common(a: Path | None, b: Path) -> Path:
    if a is None:
        return b
    length = 0
    for x, y in zip(a, b, strict=False):
        if x is not y:
            break
        length += 1
    return a[:length]


class _UseFinder(Visitor):
    """For each allocated buffer, the deepest scope that holds all its uses."""

    def __init__(self) -> None:
        self.scopes: list[Node] = []
        self.allocated: dict[int, Buffer] = {}  # id -> buffer, in allocation order
        self.by_data: dict[E.Var, Buffer] = {}
        self.lca: dict[int, Path] = {}
        self.grid_loops: list[Path] = []  # each blockIdx loop, as the path ending at it

    def use(self, buffer: Buffer, path: Path | None = None) -> None:
        if id(buffer) in self.allocated:
            here = tuple(self.scopes) if path is None else path
            self.lca[id(buffer)] = _common(self.lca.get(id(buffer)), here)

    def visit_For(self, node: S.For) -> None:
        self.scopes.append(node)
        if node.thread_binding is not None and node.thread_binding.thread_tag.startswith(
            "blockIdx"
        ):
            self.grid_loops.append(tuple(self.scopes))
        self.generic_visit(node)
        self.scopes.pop()

    def visit_SBlockRealize(self, node: S.SBlockRealize) -> None:
        self.visit(node.iter_values)
        self.visit(node.predicate)
        block = node.block
        for buffer in block.alloc_buffers:
            self.allocated[id(buffer)] = buffer
            self.by_data[buffer.data] = buffer
        self.raise_carried(node, tuple(self.scopes))
        self.scopes.append(block)
        for match in block.match_buffers:
            self.use(match.source.buffer)
        if block.init is not None:
            self.visit(block.init)
        self.visit(block.body)
        self.scopes.pop()

    def raise_carried(self, node: S.SBlockRealize, here: Path) -> None:
        """Keeps above its loops each buffer whose values a non-spatial iteration variable
        carries across them: what a reduction writes stays above all its reduce loops; what a
        block with an opaque (scan, ...) variable writes, and each region it reads or writes
        whose bounds name that variable, stays above the loops the variable's binding names."""
        block = node.block
        reduce_scope: Path | None = None
        carried: dict[E.Var, Path] = {}  # opaque variable -> the scope above its loops
        for iv, value in zip(block.iter_vars, node.iter_values, strict=False):
            if iv.iter_type is S.IterType.SPATIAL:
                continue
            names = _vars_of(value)
            loops = [
                i for i, s in enumerate(self.scopes) if isinstance(s, S.For) and s.loop_var in names
            ]
            if not loops:
                continue
            scope = here[: loops[0]]
            if iv.iter_type is S.IterType.REDUCE:
                if reduce_scope is None or len(scope) < len(reduce_scope):
                    reduce_scope = scope
            else:
                carried[iv.var] = scope
                for region in block.writes:
                    self.use(region.buffer, scope)
        if not carried and reduce_scope is None:
            return
        accesses = [(region, False) for region in block.reads]
        accesses += [(region, True) for region in block.writes]
        for region, is_write in accesses:
            if not carried and not is_write:
                continue
            scope = here + (block,)
            for bound in region.region:
                for var in _vars_of(bound.min) | _vars_of(bound.extent):
                    if var in carried and len(carried[var]) < len(scope):
                        scope = carried[var]
            if is_write and reduce_scope is not None and len(reduce_scope) < len(scope):
                scope = reduce_scope
            self.use(region.buffer, scope)

    def visit_BufferLoad(self, node: E.BufferLoad) -> None:
        self.use(node.buffer)
        self.generic_visit(node)

    def visit_BufferStore(self, node: S.BufferStore) -> None:
        self.use(node.buffer)
        self.generic_visit(node)

    def visit_Var(self, node: E.Var) -> None:
        buffer = self.by_data.get(node)
        if buffer is not None:
            self.use(buffer)


def _vars_of(expr: E.PrimExpr) -> set[E.Var]:
    found: set[E.Var] = set()

    class _Vars(Visitor):
        def visit_Var(self, node: E.Var) -> None:
            found.add(node)

    _Vars().visit(expr)
    return found


class _Mover(Mutator):
    def __init__(self, targets: dict[int, list[Buffer]], moved: set[int]):
        self.targets = targets  # id(scope) -> buffers to allocate there
        self.moved = moved

    def visit_SBlock(self, node: S.SBlock) -> S.SBlock:
        arriving = self.targets.get(id(node), [])
        block: S.SBlock = self.generic_visit(node)
        kept = tuple(b for b in block.alloc_buffers if id(b) not in self.moved)
        allocs = kept + tuple(arriving)
        if allocs == block.alloc_buffers:
            return block
        here = {id(b) for b in arriving}
        return dataclasses.replace(
            block,
            alloc_buffers=allocs,
            reads=tuple(r for r in block.reads if id(r.buffer) not in here),
            writes=tuple(r for r in block.writes if id(r.buffer) not in here),
        )

    def visit_For(self, node: S.For) -> S.For:
        arriving = self.targets.get(id(node))
        loop: S.For = self.generic_visit(node)
        if not arriving:
            return loop
        # named "" as TVM names it, even beside another block of that name: nothing schedules
        # a lowered module by block name
        inner = S.SBlock("", (), (), (), loop.body, alloc_buffers=tuple(arriving))
        reads, writes = infer_access_regions(inner, reads_of_written=True)
        inner = dataclasses.replace(
            inner, reads=tuple(map(parsed_region, reads)), writes=tuple(map(parsed_region, writes))
        )
        realize = S.SBlockRealize((), E.IntImm(1, dt.BOOL), inner)
        return dataclasses.replace(loop, body=realize)


@dataclass(frozen=True)
class PlanBufferAllocation(FunctionPass):
    name = "plan-buffer-allocation"
    expects = Dialect.S_TIR
    leaves = Dialect.S_TIR

    def run_function(self, func: PrimFunc) -> PrimFunc:
        finder = _UseFinder()
        finder.visit(func.body)
        targets: dict[int, list[Buffer]] = {}
        moved: set[int] = set()
        owner = _owners(func.body)
        for key, buffer in finder.allocated.items():
            path = finder.lca.get(key)
            if path is not None and scope_rank(buffer.scope) == GLOBAL:
                for grid_loop in finder.grid_loops:
                    path = _common(path, grid_loop)
            home = owner.get(key)
            if not path or path[-1] is home or not any(s is home for s in path):
                continue  # unused, already where it belongs, or needed above its owner
            assert home is not None  # the path holds it
            path = _above_carrying_loop(path, home, buffer)
            if path[-1] is home:
                continue
            targets.setdefault(id(path[-1]), []).append(buffer)
            moved.add(key)
        if not moved:
            return func
        body = _Mover(targets, moved).visit(func.body)
        return dataclasses.replace(func, body=body)


def _above_carrying_loop(path: Path, home: S.SBlock, buffer: Buffer) -> Path:
    """`path` cut above the outermost loop below `home` whose iterations carry values of
    `buffer` from one to the next: allocated inside it, each iteration would have its own.
    Parallel, vectorized and thread loops are left alone: their iterations may not depend
    on one another (and a thread's local storage must be its own)."""
    start = next(i for i, scope in enumerate(path) if scope is home) + 1
    for position in range(start, len(path)):
        scope = path[position]
        if (
            isinstance(scope, S.For)
            and scope.kind in (S.ForKind.SERIAL, S.ForKind.UNROLLED)
            and carries_values(scope, buffer, path[:position])
        ):
            return path[:position]
    return path


def _owners(body: S.Stmt) -> dict[int, S.SBlock]:
    owners: dict[int, S.SBlock] = {}

    class _Owners(Visitor):
        def visit_SBlock(self, node: S.SBlock) -> None:
            for buffer in node.alloc_buffers:
                owners[id(buffer)] = node
            self.generic_visit(node)

    _Owners().visit(body)
    return owners

"""cache_index: precompute the index expressions a block loads through into int buffers,
one block per expression, placed before the block's loop nest; the block then indexes
through them.

Each distinct index of a load that is computed from the block's iterators (not a variable or
a constant, holding no load) is cached when it occurs at least `cse_thresh` times (in loads and
stores); its buffer `index_var_<k>` has one dimension per iterator it uses. The block keeps
the regions it declared from its original indices (as in TVM).

    for i, j: B[vi*4 + vj] = A[vi*16 + vj*4]   →   for ax0, ax1: index_var_0[v0, v1] = v0*16 + v1*4
                                                   for i, j: B[vi*4 + vj] = A[index_var_0[vi, vj]]
"""

from __future__ import annotations

import dataclasses

from tirc.analysis.regions import infer_access_regions
from tirc.ir import dtype as dt
from tirc.ir.arith import arithmetic
from tirc.ir.buffer import Buffer, BufferRegion, Range, make_buffer
from tirc.ir.expr import BufferLoad, IntImm, PrimExpr, Var
from tirc.ir.functor import Mutator, walk
from tirc.ir.stmt import (
    BufferStore,
    IterType,
    IterVar,
    SBlock,
    SBlockRealize,
    SeqStmt,
    Stmt,
)
from tirc.ir.structural import expr_key
from tirc.ir.substitute import substitute
from tirc.schedule.errors import ScheduleError
from tirc.schedule.primitives import primitive
from tirc.schedule.rebind import serial_loop
from tirc.schedule.schedule import Schedule, describe
from tirc.schedule.signature import Kind, Param, Signature, optional
from tirc.schedule.sref import SRef
from tirc.schedule.storage_scope import check_storage_scope


@primitive(
    Signature(
        "cache_index",
        "CacheIndex",
        inputs=(Param("block", Kind.BLOCK),),
        attrs=(Param("storage_scope", Kind.STR), optional("cse_thresh", Kind.INT, 0)),
        outputs="many",
        doc="Precompute the block's computed load indices into index buffers.",
    )
)
def cache_index(sch: Schedule, block: SRef, storage_scope: str, cse_thresh: int = 0) -> list[SRef]:
    state = sch.state_owning(block)
    check_storage_scope(storage_scope, block)
    scope = block.enclosing_block()
    assert scope is not None, "the root block has no loads to cache"
    top = _top_statement(block, scope)
    node = block.block
    domains = {iv.var: iv.dom for iv in node.iter_vars if iv.dom is not None}
    order = [iv.var for iv in node.iter_vars]
    candidates = _candidates(node, set(domains), int(cse_thresh))
    if not candidates:
        raise ScheduleError(
            f"{describe(block)} loads through no index computed from its iterators"
            + (f" at least {cse_thresh} times" if int(cse_thresh) > 1 else ""),
            block,
        )
    caches: dict[object, BufferLoad] = {}
    buffers: list[Buffer] = []
    nests: list[Stmt] = []
    for number, expr in enumerate(candidates):
        used = [var for var in order if _uses(expr, var)]
        ranges = [domains[var] for var in used]
        shape = tuple(_end(dom) for dom in ranges)
        # TVM gives index buffers strides (1,): right for one dimension, left off for more
        strides = (IntImm(1, shape[0].dtype),) if len(shape) == 1 else ()
        dtype = expr.dtype
        buffer = make_buffer(f"index_var_{number}", shape, dtype, storage_scope, strides=strides)
        buffers.append(buffer)
        nests.append(_index_nest(number, buffer, expr, used, ranges))
        caches[expr_key(expr)] = BufferLoad(buffer, tuple(used))
    reads, writes = infer_access_regions(node)
    new_block = dataclasses.replace(_IndexRewrite(caches).visit(node), reads=reads, writes=writes)
    new_top = _Replace(node, new_block).visit(top.stmt)
    root = scope.block
    body = root.body
    stmts = list(body.stmts) if isinstance(body, SeqStmt) else [body]
    position = next(i for i, stmt in enumerate(stmts) if stmt is top.stmt)
    stmts[position : position + 1] = [*nests, new_top]
    new_root = dataclasses.replace(
        root, body=SeqStmt(tuple(stmts)), alloc_buffers=root.alloc_buffers + tuple(buffers)
    )
    state.replace(scope, new_root, {node: new_block})
    return [state.get_sref(_block_of(nest)) for nest in nests]


def _top_statement(block: SRef, scope: SRef) -> SRef:
    node = block
    while node.parent is not scope:
        assert node.parent is not None
        node = node.parent
    return node


def _candidates(block: SBlock, iterators: set[Var], threshold: int) -> list[PrimExpr]:
    """The computed load indices in order of first occurrence, those occurring often enough;
    a store's indices count towards the threshold but are not candidates themselves (TVM's
    rule: `B[vi * 4 + vj] = A[vi * 4 + vj]` uses `vi * 4 + vj` twice)."""
    found: dict[object, PrimExpr] = {}
    counts: dict[object, int] = {}

    def look(node: object) -> None:
        if not isinstance(node, (BufferLoad, BufferStore)):
            return
        for index in node.indices:
            if not _is_computed(index, iterators):
                continue
            key = expr_key(index)
            if isinstance(node, BufferLoad):
                found.setdefault(key, index)
            counts[key] = counts.get(key, 0) + 1

    walk(block.body, look)
    return [expr for key, expr in found.items() if counts[key] >= threshold]


def _is_computed(index: PrimExpr, iterators: set[Var]) -> bool:
    if isinstance(index, (Var, IntImm)) or not hasattr(index, "dtype"):
        return False
    names: list[Var] = []
    loads: list[BufferLoad] = []

    def look(node: object) -> None:
        if isinstance(node, Var):
            names.append(node)
        elif isinstance(node, BufferLoad):
            loads.append(node)

    walk(index, look)
    return bool(names) and not loads and all(var in iterators for var in names)


def _uses(expr: PrimExpr, var: Var) -> bool:
    found: list[Var] = []
    walk(expr, lambda node: found.append(node) if node is var else None)
    return bool(found)


def _end(dom: Range) -> PrimExpr:
    if isinstance(dom.min, IntImm) and dom.min.value == 0:
        return dom.extent
    if isinstance(dom.min, IntImm) and isinstance(dom.extent, IntImm):
        return IntImm(dom.min.value + dom.extent.value, dom.extent.dtype)

    return arithmetic("+", dom.min, dom.extent)


def _index_nest(
    number: int, buffer: Buffer, expr: PrimExpr, used: list[Var], ranges: list[Range]
) -> Stmt:
    """`for ax0, ...: with T.sblock("index_<k>"): index_var_<k>[v0, ...] = expr`."""
    loop_vars = [Var(f"ax{position}", var.dtype) for position, var in enumerate(used)]
    block_vars = [Var(f"v{position}", var.dtype) for position, var in enumerate(used)]
    value = substitute(expr, dict(zip(used, block_vars, strict=True)))
    store = BufferStore(buffer, value, tuple(block_vars))
    region = BufferRegion(buffer, tuple(Range(var, IntImm(1, var.dtype)) for var in block_vars))
    iter_vars = tuple(
        IterVar(var, dom, IterType.SPATIAL) for var, dom in zip(block_vars, ranges, strict=True)
    )
    block = SBlock(f"index_{number}", iter_vars, (), (region,), store)
    bindings = tuple(
        loop if _is_zero(dom.min) else _plus(loop, dom.min)
        for loop, dom in zip(loop_vars, ranges, strict=True)
    )
    nest: Stmt = SBlockRealize(bindings, IntImm(1, dt.BOOL), block)
    for loop, dom in reversed(list(zip(loop_vars, ranges, strict=True))):
        nest = serial_loop(loop, dom.extent, nest)
    return nest


def _is_zero(expr: PrimExpr) -> bool:
    return isinstance(expr, IntImm) and expr.value == 0


def _plus(a: PrimExpr, b: PrimExpr) -> PrimExpr:
    return arithmetic("+", a, b)


def _block_of(nest: Stmt) -> SBlock:
    found: list[SBlock] = []
    walk(nest, lambda node: found.append(node) if isinstance(node, SBlock) else None)
    return found[0]


class _IndexRewrite(Mutator):
    """Indices (of loads and stores) that were cached become loads of their index buffer."""

    def __init__(self, caches: dict[object, BufferLoad]):
        self.caches = caches

    def _indices(self, indices: tuple[PrimExpr, ...]) -> tuple[PrimExpr, ...]:
        return tuple(self.caches.get(expr_key(index), index) for index in indices)

    def visit_BufferLoad(self, node: BufferLoad) -> PrimExpr:
        new: BufferLoad = self.generic_visit(node)
        return dataclasses.replace(new, indices=self._indices(new.indices))

    def visit_BufferStore(self, node: BufferStore) -> Stmt:
        new: BufferStore = self.generic_visit(node)
        return dataclasses.replace(new, indices=self._indices(new.indices))

    def visit_SBlock(self, node: SBlock) -> SBlock:
        # only the block's own statements: its signature keeps the original regions
        return dataclasses.replace(
            node,
            body=self.visit(node.body),
            init=None if node.init is None else self.visit(node.init),
        )


class _Replace(Mutator):
    def __init__(self, old: SBlock, new: SBlock):
        self.old, self.new = old, new

    def visit_SBlock(self, node: SBlock) -> SBlock:
        return self.new if node is self.old else node

"""cache_index: precompute the computations a block repeats into buffers, one block per
computation, placed before the block's loop nest; the block then reads them back.

The computations are TVM's (`repeated_computations`): pure expressions of the block's
iterators met at least `cse_thresh` times in its stores, sub-computations counted where their
enclosing one is too rare. Each gets a buffer `index_var_<k>` of its own dtype, one dimension
per iterator it uses (in the order the expression names them), and every expression of the
block's stores equal to it after simplification becomes a load of that buffer. The block keeps
the regions it declared (as in TVM).

    for i, j: B[vi*4 + vj] = A[vi*16 + vj*4]   →   for ax0, ax1: index_var_0[v0, v1] = v0*16 + v1*4
                                                   for i, j: B[vi*4 + vj] = A[index_var_0[vi, vj]]
"""

from __future__ import annotations

import dataclasses

from tirc.ir import dtype as dt
from tirc.ir.arith import arithmetic
from tirc.ir.buffer import Buffer, BufferRegion, Range, make_buffer
from tirc.ir.expr import BufferLoad, IntImm, PrimExpr, Var
from tirc.ir.functor import Mutator, Visitor, walk
from tirc.ir.stmt import (
    BufferStore,
    IterType,
    IterVar,
    SBlock,
    SBlockRealize,
    SeqStmt,
    Stmt,
)
from tirc.ir.substitute import substitute
from tirc.schedule.errors import ScheduleError
from tirc.schedule.primitives import primitive
from tirc.schedule.rebind import serial_loop
from tirc.schedule.repeated_computations import (
    Equivalence,
    is_computation,
    post_order,
    repeated_computations,
)
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
        doc="Precompute the block's repeated computations into index buffers.",
    )
)
def cache_index(sch: Schedule, block: SRef, storage_scope: str, cse_thresh: int = 0) -> list[SRef]:
    state = sch.state_owning(block)
    check_storage_scope(storage_scope, block)
    if int(cse_thresh) < 0:
        raise ScheduleError(f"cse_thresh must not be negative, not {cse_thresh}", block)
    scope = block.enclosing_block()
    assert scope is not None, "the root block has no loads to cache"
    top = _top_statement(block, scope)
    node = block.block
    domains = {iv.var: iv.dom for iv in node.iter_vars if iv.dom is not None}
    same = Equivalence()
    candidates = repeated_computations(_stores(node), set(domains), int(cse_thresh), same)
    if not candidates:
        raise ScheduleError(
            f"{describe(block)} computes nothing from its iterators"
            + (f" at least {cse_thresh} times" if int(cse_thresh) > 1 else ""),
            block,
        )
    caches: list[tuple[PrimExpr, BufferLoad]] = []
    buffers: list[Buffer] = []
    nests: list[Stmt] = []
    for number, expr in enumerate(candidates):
        used = _vars_in_post_order(expr)
        ranges = [domains[var] for var in used]
        shape = tuple(_end(dom) for dom in ranges)
        # TVM gives index buffers strides (1,): right for one dimension, left off for more
        strides = (IntImm(1, shape[0].dtype),) if len(shape) == 1 else ()
        dtype = expr.dtype
        buffer = make_buffer(f"index_var_{number}", shape, dtype, storage_scope, strides=strides)
        buffers.append(buffer)
        nests.append(_index_nest(number, buffer, expr, used, ranges))
        caches.append((expr, BufferLoad(buffer, tuple(used))))
    new_block = _StoreRewrite(caches, same, set(domains)).visit(node)
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


def _stores(block: SBlock) -> list[BufferStore]:
    """The block's own stores (its init's first), not those of blocks nested in it."""
    collector = _StoreCollector()
    for part in (block.init, block.body):
        if part is not None:
            collector.visit(part)
    return collector.stores


class _StoreCollector(Visitor):
    def __init__(self) -> None:
        self.stores: list[BufferStore] = []

    def visit_BufferStore(self, store: BufferStore) -> None:
        self.stores.append(store)

    def visit_SBlock(self, nested: SBlock) -> None:
        pass


def _vars_in_post_order(expr: PrimExpr) -> list[Var]:
    """The variables of `expr`, each once, in the order a post-order walk meets them."""
    found: list[Var] = []
    for node in post_order(expr):
        if isinstance(node, Var) and not any(var is node for var in found):
            found.append(node)
    return found


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


class _StoreRewrite(Mutator):
    """In the block's own stores, every expression equal to a cached computation (after
    simplification) becomes a load of its buffer; the computations are replaced one after
    the other, each from the outside in, as TVM does."""

    def __init__(
        self, caches: list[tuple[PrimExpr, BufferLoad]], same: Equivalence, iterators: set[Var]
    ):
        self.caches, self.same, self.iterators = caches, same, iterators
        self.top = True

    def visit_SBlock(self, node: SBlock) -> SBlock:
        # only the block's own statements: its signature keeps the original regions
        if not self.top:
            return node
        self.top = False
        return dataclasses.replace(
            node,
            body=self.visit(node.body),
            init=None if node.init is None else self.visit(node.init),
        )

    def visit_BufferStore(self, node: BufferStore) -> Stmt:
        value, indices = node.value, node.indices
        for computation, load in self.caches:
            value = self._replace(value, computation, load)
            indices = tuple(self._replace(index, computation, load) for index in indices)
        if value is node.value and all(a is b for a, b in zip(indices, node.indices, strict=True)):
            return node
        return dataclasses.replace(node, value=value, indices=indices)

    def _replace(self, expr: PrimExpr, computation: PrimExpr, load: BufferLoad) -> PrimExpr:
        result: PrimExpr = _Substitution(computation, load, self.same, self.iterators).visit(expr)
        return result


class _Substitution(Mutator):
    """Every expression equal to `computation` as `load`, the outermost first."""

    def __init__(
        self, computation: PrimExpr, load: BufferLoad, same: Equivalence, iterators: set[Var]
    ):
        self.computation, self.load, self.same, self.iterators = computation, load, same, iterators

    def visit_PrimExpr(self, node: PrimExpr) -> PrimExpr:
        if isinstance(node, Var):
            return node
        if is_computation(node, self.iterators) and self.same.same(node, self.computation):
            return self.load
        return self.generic_visit(node)


class _Replace(Mutator):
    def __init__(self, old: SBlock, new: SBlock):
        self.old, self.new = old, new

    def visit_SBlock(self, node: SBlock) -> SBlock:
        return self.new if node is self.old else node

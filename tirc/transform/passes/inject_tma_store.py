"""inject-tma-store: a copy from shared memory into a box of a global buffer parameter, whose
block is annotated `tma_store` (1), leaves by TMA (Hopper's `cp.async.bulk.tensor`, shared to
global): the epilogue of the fast Hopper GEMMs, which stage a tile in shared memory and store
it in one bulk operation instead of each thread's stores.

Expects opaque blocks with thread-binding loops (after unify-thread-binding, before
inject-warp-specialization, so that the barrier it puts in a warp-specialized kernel's
consumers becomes their named barrier); leaves the same. The annotated block is the store of a
nest of serial loops (constant extents, from 0) that sits in the kernel's thread loops, outside
any other loop or condition (every thread must reach the barrier): over the threads it names
and its loops, it reads each element of a shared buffer once and writes it into a box of a
dense global buffer parameter, the shared buffer laid out as the box row-major or a TMA swizzle
of it, or as equal slabs that are each such a box (the rules of inject-warp-specialization's TMA
loads, tirc/transform/passes/_tma_copy.py, read the other way). Conditions may be the global
buffer's bounds (TMA writes nothing outside the tensor) or on the threads and the loops alone.
The nest becomes:

- `fence.proxy.async` (each thread: its stores into the shared buffer, made in the generic
  proxy, ordered before the TMA unit's reads in the async proxy), then a block barrier (every
  thread's stores done);
- in the kernel's first thread (every thread index 0): one `T.ptx_tma_store` a box, one
  commit of the bulk group, and `T.ptx_tma_store_wait(0)`: the group has read the shared
  buffer before the thread goes on (or the block exits and its shared memory goes).

The host builds the tensor map of each box as for the loads (tirc.ir.tma.tensor_maps). A nest
that is not such a copy is refused at its store, saying why; an annotation other than 1, or
a block in another loop or condition, at the block.

    for i, j in T.grid(64, 256):                    T.ptx_fence_proxy_async()
      with T.sblock("C_shared"):                    T.tvm_storage_sync("shared")
        T.sblock_attr({"tma_store": 1})       ->    if threadIdx_x == 0 and threadIdx_y == 0:
        C[by * 64 + i, j] = C_shared[i, j]              T.ptx_tma_store("float32", C.data, 2, 0,
                                                            M, N, 64, 256, C_shared.data, 0,
                                                            by * 64, 0)
                                                        T.ptx_tma_store_commit()
                                                        T.ptx_tma_store_wait(0)
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

from tirc.analysis.arith.analyzer import Analyzer
from tirc.diagnostics import DiagnosticError, Note
from tirc.ir import dtype as dt
from tirc.ir import expr as E
from tirc.ir import stmt as S
from tirc.ir.arith import arithmetic
from tirc.ir.buffer import Buffer, Range
from tirc.ir.function import PrimFunc
from tirc.ir.functor import Mutator
from tirc.transform.pass_base import Dialect, FunctionPass
from tirc.transform.passes._tma_copy import (
    CopyNest,
    box_space,
    conjuncts,
    fit_layout,
    is_bound,
    refuse,
    variables,
)

TMA_STORE = "tma_store"
_THREAD_TAGS = ("threadIdx.x", "threadIdx.y", "threadIdx.z")
_SHARED = ("shared", "shared.dyn")


def _annotated_block(stmt: S.Stmt) -> S.SBlock | None:
    """The block annotated `tma_store` at the bottom of the loop nest `stmt`, or None."""
    node: S.Stmt = stmt
    while True:
        if isinstance(node, S.For) and node.thread_binding is None:
            node = node.body
        elif isinstance(node, S.SBlockRealize):
            if TMA_STORE in node.block.annotations:
                return node.block
            node = node.block.body
        elif isinstance(node, S.SBlock) and not node.alloc_buffers:
            node = node.body
        else:
            return None


def _check_annotation(block: S.SBlock) -> None:
    value = block.annotations.get(TMA_STORE)
    if isinstance(value, E.IntImm):
        value = value.value
    if value != 1 or isinstance(value, bool):
        raise DiagnosticError.at(
            block.span, f"the block's '{TMA_STORE}' is 1 (a TMA store), not {value}"
        )


class _Injector(Mutator):
    def __init__(self, tensors: set[E.Var]) -> None:
        self.analyzer = Analyzer()
        self.tensors = tensors  # the function's buffer parameters' data
        self.threads: dict[E.Var, int] = {}  # the kernel's thread indices (constant extents)
        self.around: list[S.Stmt] = []  # the loops and conditions around, threads' aside

    def visit_For(self, node: S.For) -> S.Stmt:
        self.analyzer.bind(node.loop_var, Range(node.min, node.extent))
        binding = node.thread_binding
        if binding is not None and binding.thread_tag in _THREAD_TAGS:
            if isinstance(node.extent, E.IntImm):
                self.threads[node.loop_var] = node.extent.value
            try:
                return self.generic_visit(node)
            finally:
                self.threads.pop(node.loop_var, None)
        if binding is not None:  # blockIdx: every thread of a block runs the same
            return self.generic_visit(node)
        block = _annotated_block(node)
        if block is not None:
            return self.rewrite(node, block)
        self.around.append(node)
        try:
            return self.generic_visit(node)
        finally:
            self.around.pop()

    def visit_IfThenElse(self, node: S.IfThenElse) -> S.Stmt:
        self.around.append(node)
        try:
            return self.generic_visit(node)
        finally:
            self.around.pop()

    def visit_SBlockRealize(self, node: S.SBlockRealize) -> S.Stmt:
        if TMA_STORE in node.block.annotations:
            return self.rewrite(node, node.block)
        if not E.is_const_int(node.predicate, 1):
            self.around.append(node)
            try:
                return self.generic_visit(node)
            finally:
                self.around.pop()
        return self.generic_visit(node)

    def visit_SeqStmt(self, node: S.SeqStmt) -> S.Stmt:
        result = self.generic_visit(node)  # a rewritten copy is a sequence: flattened
        return result if result is node else S.seq(*result.stmts)

    def visit_PrimExpr(self, node: E.PrimExpr) -> E.PrimExpr:
        return node

    def rewrite(self, nest: S.Stmt, block: S.SBlock) -> S.Stmt:
        _check_annotation(block)
        if self.around or not self.threads:
            where = self.around[-1] if self.around else None
            raise DiagnosticError.at(
                block.span,
                "a TMA store's copy must sit directly in its kernel's thread loops, where "
                "every thread reaches the barrier before it (not in another loop or condition)",
                *([Note("inside this", where.span)] if where is not None else []),
            )
        return tma_store(nest, block, self.threads, self.tensors, self.analyzer)


@dataclass(frozen=True)
class _Box:
    box: tuple[int, ...]
    swizzle: int
    corners: tuple[tuple[E.PrimExpr, ...], ...]  # each slab's, in the tensor


def tma_store(
    nest: S.Stmt,
    block: S.SBlock,
    threads: dict[E.Var, int],
    tensors: set[E.Var],
    analyzer: Analyzer,
) -> S.Stmt:
    """The copy `nest` (its store in `block`, run by the threads `threads`: variable ->
    extent) as fenced, synchronized TMA stores by the first thread; a located error saying
    why it cannot be."""
    loops = CopyNest(nest, block)
    store = loops.store
    at = store if store.span is not None else nest
    tensor, value = store.buffer, store.value
    if not isinstance(value, E.BufferLoad) or value.buffer.scope not in _SHARED:
        raise refuse(
            at, block, f"it stores into '{tensor.name}' what it does not read from shared memory"
        )
    shared = value.buffer
    if tensor.dtype != shared.dtype:
        raise refuse(
            at,
            block,
            f"it converts {shared.dtype} to {tensor.dtype}: TMA copies the elements as they are",
        )
    box = box_space(
        at, block, shared, tensor, store.indices, tensors, nest, threads, loops, analyzer
    )
    shape, space, inner, corner, local = box.shape, box.space, box.inner, box.corner, box.local
    masks: list[E.PrimExpr] = []
    for condition in loops.conditions:
        for conjunct in conjuncts(condition):
            if is_bound(conjunct, store.indices, tensor, inner):
                continue  # TMA writes nothing outside the tensor
            if variables(conjunct) <= space.keys():
                masks.append(conjunct)
                continue
            raise refuse(
                at,
                block,
                f"its condition is not the bounds of '{tensor.name}' nor on its threads and loops",
            )
    # the shared buffer's elements in the order the copy reads them, as a load's would store them
    reads = S.BufferStore(shared, value, value.indices, span=store.span)
    fit = fit_layout(at, block, reads, local, masks, shape, space, tensor.name)
    corners = tuple(
        tuple(arithmetic("+", c, o) if o else c for c, o in zip(corner, slab, strict=True))
        for slab in fit.slabs
    )
    return _statements(_Box(fit.box, fit.swizzle, corners), shared, tensor, threads, nest)


def _statements(
    box: _Box, shared: Buffer, tensor: Buffer, threads: dict[E.Var, int], nest: S.Stmt
) -> S.Stmt:
    span = nest.span
    int32 = dt.INT32
    size = math.prod(box.box)
    stores: list[S.Stmt] = []
    for index, corner in enumerate(box.corners):
        args: tuple[E.PrimExpr, ...] = (
            tensor.data,
            E.IntImm(len(box.box), int32),
            E.IntImm(box.swizzle, int32),
            *tensor.shape,
            *(E.IntImm(extent, int32) for extent in box.box),
            shared.data,
            E.IntImm(index * size, int32),
            *corner,
        )
        stores.append(S.Evaluate(E.Call(shared.dtype, "ptx_tma_store", args, span=span), span=span))
    first: E.PrimExpr | None = None
    for var in threads:
        test = E.EQ(var, E.IntImm(0, var.dtype))
        first = test if first is None else E.And(first, test)
    assert first is not None  # the caller checked the kernel has thread loops
    issue = S.seq(
        *stores,
        S.evaluate_call("ptx_tma_store_commit", span=span),
        S.evaluate_call("ptx_tma_store_wait", 0, span=span),
    )
    return S.seq(
        S.evaluate_call("ptx_fence_proxy_async", span=span),
        S.storage_sync("shared", span),
        S.IfThenElse(first, issue, span=span),
    )


@dataclass(frozen=True)
class InjectTmaStore(FunctionPass):
    name = "inject-tma-store"
    expects = Dialect.OPAQUE_BLOCKS
    leaves = Dialect.OPAQUE_BLOCKS

    def run_function(self, func: PrimFunc) -> PrimFunc:
        tensors = {buffer.data for _, buffer in func.buffer_map}
        body = _Injector(tensors).visit(func.body)
        return func if body is func.body else dataclasses.replace(func, body=body)

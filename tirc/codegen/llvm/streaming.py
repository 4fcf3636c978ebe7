"""Streaming stores: a large output that the function writes in whole cache lines and never
reads goes around the cache.

An ordinary store first reads the cache line it writes into (a read for ownership); a
non-temporal store (`!nontemporal`, x86 `vmovntps`) does not, and leaves the caches to data
that is used again. Adding two 64 MiB arrays moves four streams of 64 MiB with ordinary
stores and three with streaming ones. A parameter buffer's stores stream when

- the buffer is at least as large as the target's last-level cache, so that its lines would
  leave the cache before anyone read them again anyway;
- the function never reads it: no load, and its data pointer appears in no expression (a
  call, an address) that could read it behind the compiler's back;
- every store to it is a contiguous vector of whole 64-byte lines, without a predicate.

    C[i*64 : i*64+64] = A[...] + B[...]    # C: 64 MiB, never read, cache 32 MiB
    ->  store <64 x float> ..., align 64, !nontemporal

LLVM emits the streaming instruction only where it can prove the address aligned; elsewhere
the store stays ordinary. Streaming stores are weakly ordered: every function that makes
them ends with a store fence (see `emit_fence`), so that the caller, or the thread that
joins an OpenMP region, sees them.
"""

from __future__ import annotations

from llvmlite import ir

from tirc.codegen.abi import parameter_buffers
from tirc.codegen.llvm import types as T
from tirc.codegen.llvm.indexing import flat_index
from tirc.ir import expr as E
from tirc.ir import stmt as S
from tirc.ir.expr import Var
from tirc.ir.function import PrimFunc
from tirc.ir.functor import Visitor

CACHE_LINE_BYTES = 64


def streaming_buffers(func: PrimFunc, cache_bytes: int) -> frozenset[Var]:
    """The data variables of the parameter buffers whose stores may stream."""
    if cache_bytes <= 0:
        return frozenset()
    large = set()
    for buffer in parameter_buffers(func).values():
        if T.constant_bytes(buffer) >= cache_bytes:
            large.add(buffer.data)
    if not large:
        return frozenset()
    finder = _Disqualifier(large)
    finder.visit(func.body)
    chosen = large - finder.excluded
    views = {view for view, root in finder.roots.items() if root in chosen}
    return frozenset(chosen | views)


class _Disqualifier(Visitor):
    """Collects the candidates that are read, mentioned or stored in some other way. A view
    (`C_1 = T.decl_buffer(..., data=C.data)`) stands for its candidate."""

    def __init__(self, candidates: set[Var]):
        self.roots: dict[Var, Var] = {var: var for var in candidates}
        self.excluded: set[Var] = set()

    def visit_Var(self, node: Var) -> None:
        if node in self.roots:
            self.excluded.add(self.roots[node])

    def visit_DeclBuffer(self, node: S.DeclBuffer) -> None:
        if isinstance(node.data, Var) and node.data in self.roots:
            self.roots[node.buffer.data] = self.roots[node.data]
        else:
            self.generic_visit(node)

    def visit_BufferLoad(self, node: E.BufferLoad) -> None:
        if node.buffer.data in self.roots:
            self.excluded.add(self.roots[node.buffer.data])
        self.generic_visit(node)

    def visit_BufferStore(self, node: S.BufferStore) -> None:
        data = node.buffer.data
        if data in self.roots and not _whole_lines(node):
            self.excluded.add(self.roots[data])
        self.generic_visit(node)


def _whole_lines(store: S.BufferStore) -> bool:
    if store.predicate is not None or store.buffer.dtype.lanes != 1:
        return False
    index = flat_index(store.buffer, store.indices)
    if not (isinstance(index, E.Ramp) and E.is_const_int(index.stride, 1)):
        return False
    lanes = index.dtype.lanes
    return lanes * T.element_bytes(store.buffer.dtype) % CACHE_LINE_BYTES == 0


def mark_streaming(module: ir.Module, store: ir.Instruction) -> None:
    store.set_metadata("nontemporal", module.add_metadata([ir.Constant(T.I32, 1)]))


def sfence(module: ir.Module) -> ir.Function:
    """The store fence intrinsic, declared in `module` on first use."""
    existing = module.globals.get("llvm.x86.sse.sfence")
    if isinstance(existing, ir.Function):
        return existing
    return ir.Function(module, ir.FunctionType(ir.VoidType(), []), "llvm.x86.sse.sfence")


def emit_fence(module: ir.Module, function: ir.Function) -> None:
    """A store fence before every return of `function`."""
    fence = sfence(module)
    for block in function.blocks:
        terminator = block.instructions[-1] if block.is_terminated else None
        if isinstance(terminator, ir.Ret):
            builder = ir.IRBuilder(block)
            builder.position_before(terminator)
            builder.call(fence, [])

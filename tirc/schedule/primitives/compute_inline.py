"""compute_inline: a producer block disappears; each load of what it wrote becomes its value.

The producer must be a complete block that writes one buffer the scope allocates, as
`B[v0, v1, ...] = f(v0, v1, ...)` over distinct iteration variables, or more generally
through indices that are an invertible affine map of them (`B[0, vi * 128 + vj]`). The
scope must be a stage pipeline (no block overwrites what an earlier one reads; each producer
writes all that its consumers read from it), and no block may read the buffer opaquely or
bind a subregion of it with T.match_buffer.

    B[vi, vj] = A[vi, vj] * 2.0                        (gone)
    C[vi, vj] = B[vi, vj] + 1.0            →           C[vi, vj] = A[vi, vj] * 2.0 + 1.0
"""

from __future__ import annotations

from tirc.analysis.arith.iter_map import Level, detect_iter_map
from tirc.analysis.arith.iter_map_inverse import inverse_iter_map
from tirc.ir.buffer import Buffer, Range
from tirc.ir.expr import BufferLoad, IntImm, PrimExpr, Var, is_const_int
from tirc.ir.functor import walk
from tirc.ir.node import Node
from tirc.ir.stmt import BufferStore, For, SBlock
from tirc.ir.substitute import substitute
from tirc.schedule.block_removal import plan_leaf_removal
from tirc.schedule.errors import ScheduleError
from tirc.schedule.inline import ScopeInliner, data_buffers
from tirc.schedule.primitives import primitive
from tirc.schedule.properties import not_complete
from tirc.schedule.schedule import Schedule, describe
from tirc.schedule.signature import Kind, Param, Signature
from tirc.schedule.sref import SRef
from tirc.schedule.stage_pipeline import stage_pipeline_root
from tirc.schedule.state import ScheduleState


@primitive(
    Signature(
        "compute_inline",
        "ComputeInline",
        inputs=(Param("block", Kind.BLOCK),),
        doc="Inline a producer block into the blocks that read what it writes.",
    )
)
def compute_inline(sch: Schedule, block: SRef) -> None:
    state = sch.state_owning(block)
    producer = block.block
    check_no_init(block)
    buffer = single_write(block)
    scope_root = stage_pipeline_root(state, block)
    check_not_output(block, scope_root)
    reason = not_complete(state.scope(scope_root).writers, block)
    if reason is not None:
        raise ScheduleError(f"{describe(block)} is not a complete block: {reason}", block)
    store = _inlinable_store(producer)
    if store is None:
        raise ScheduleError(
            f"the body of {describe(block)} is not of the form `B[i, j, ...] = f(i, j, ...)` "
            "with distinct iteration variables as indices and no other iteration variables "
            "in the value",
            block,
        )
    removal = plan_leaf_removal(block)
    source, target = removal.source.node, removal.target
    inliner = _Inliner(buffer, store, producer, scope_root.block, source, target, state, scope_root)
    new_root = inliner.visit(scope_root.block)
    if inliner.has_opaque_access:
        raise ScheduleError(
            f"the buffer {buffer.name} is accessed opaquely (through its data pointer, or "
            f"a subregion bound by T.match_buffer) in {describe(scope_root)}, so its loads "
            "cannot be replaced",
            scope_root,
        )
    state.replace(scope_root, new_root, inliner.reuse)


def check_no_init(block: SRef) -> None:
    if block.block.init is not None:
        raise ScheduleError(f"{describe(block)} has an init statement (T.init())", block)


def single_write(block: SRef) -> Buffer:
    writes = block.block.writes
    if len(writes) != 1:
        raise ScheduleError(
            f"{describe(block)} must write exactly one buffer region, but it writes {len(writes)}",
            block,
        )
    return writes[0].buffer


def check_not_output(block: SRef, scope_root: SRef) -> None:
    """The buffers the block writes must be allocated by its scope: else the writes are
    the function's (or an outer scope's) output and cannot vanish."""
    allocated = {id(buffer) for buffer in scope_root.block.alloc_buffers}
    for region in block.block.writes:
        if id(region.buffer) not in allocated:
            raise ScheduleError(
                f"{describe(block)} is an output block: it writes {region.buffer.name}, "
                f"which {describe(scope_root)} does not allocate",
                block,
            )


def _inlinable_store(block: SBlock) -> BufferStore | None:
    """The block's store if its indices are an invertible affine map of its iteration
    variables (distinct variables, the usual case, or e.g. `B[0, vi * 128 + vj]`) and its
    value uses no iteration variable the indices do not determine."""
    store = block.body
    if not isinstance(store, BufferStore):
        return None
    if _index_inverse(block, store, store.indices) is None:
        return None
    return store


def _index_inverse(
    block: SBlock, store: BufferStore, loaded: tuple[PrimExpr, ...]
) -> dict[Var, PrimExpr] | None:
    """The producer's iteration variables in terms of `loaded`, the indices a load reads;
    None when the store's indices do not determine every variable its value uses."""
    domains = {iv.var: iv.dom for iv in block.iter_vars if iv.dom is not None}
    indices = store.indices
    variables = [i for i in indices if isinstance(i, Var)]
    positional = _positional_inverse(block, indices, loaded)
    if positional is not None:
        inverse: dict[Var, PrimExpr] | None = positional
    elif all(isinstance(i, (Var, IntImm)) for i in indices) and len(set(variables)) == len(
        variables
    ):
        # distinct variables (constants aside) are read back directly, whatever the extents
        pairs = zip(indices, loaded, strict=True)
        inverse = {i: v for i, v in pairs if isinstance(i, Var)}
    else:
        inverse = _affine_inverse(store, domains, loaded)
    if inverse is None:
        return None
    used: list[Node] = []
    walk(store.value, lambda node: used.append(node) if node in domains else None)
    if any(var not in inverse for var in used):
        return None
    return inverse


def _positional_inverse(
    block: SBlock, indices: tuple[PrimExpr, ...], loaded: tuple[PrimExpr, ...]
) -> dict[Var, PrimExpr] | None:
    """TVM's trivial case: the i-th index is the i-th iterator, or 0 where that iterator
    has the one value 0 (`B[0, v1, v2]` over v0 in [0, 1)); each iterator is then the
    load's i-th index."""
    if len(block.iter_vars) != len(indices):
        return None
    for iter_var, index in zip(block.iter_vars, indices, strict=True):
        dom = iter_var.dom
        unit = dom is not None and is_const_int(dom.min, 0) and is_const_int(dom.extent, 1)
        if index is not iter_var.var and not (unit and is_const_int(index, 0)):
            return None
    return {iv.var: value for iv, value in zip(block.iter_vars, loaded, strict=True)}


def _affine_inverse(
    store: BufferStore, domains: dict[Var, Range], loaded: tuple[PrimExpr, ...]
) -> dict[Var, PrimExpr] | None:
    detected = detect_iter_map(store.indices, domains, level=Level.NO_CHECK)
    if detected.errors:
        return None
    return inverse_iter_map(detected.sums, loaded)


class _Inliner(ScopeInliner):
    def __init__(
        self,
        buffer: Buffer,
        store: BufferStore,
        producer: SBlock,
        root: SBlock,
        source: For | SBlock,
        target: For | SBlock,
        state: ScheduleState,
        scope_root: SRef,
    ):
        super().__init__(buffer, root, source, target, data_buffers(state.func, scope_root))
        self.store = store
        self.producer = producer

    def visit_BufferLoad(self, node: BufferLoad) -> PrimExpr:
        load: BufferLoad = self.generic_visit(node)
        if load.buffer is not self.buffer:
            return load
        mapping = _index_inverse(self.producer, self.store, load.indices)
        assert mapping is not None  # checked before rewriting
        return substitute(self.store.value, mapping)

"""lower-opaque-block: opaque blocks become plain statements, and loops lose what only
schedules needed.

Expects opaque blocks without match_buffers; leaves tir (no blocks). A block's allocations
become `T.alloc_buffer` statements, its predicate an `if`; a thread-bound loop becomes
`T.launch_thread` (a blockIdx loop's "cluster_dims" annotation, a plan's request for thread-block
clusters, becomes the function's attribute: tirc.ir.cluster); a loop of one iteration without
annotations is replaced by its body, unless a `T.break_loop()` / `T.continue_loop()` in it
would then leave no loop to act on (TVM marks those loops irregular first).
A block's `pragma_*` annotations become `T.attr(0, key, value)` around what it lowers to, as in
TVM; its other annotations go. Unlike TVM, a loop's `pragma_*` annotations stay on the loop
rather than becoming `T.attr(i, ...)` around it: that form names the loop variable before the
loop defines it, so it cannot print and parse back to the same program.

    for i in range(4):                      for i in range(4):
        for u in range(1):                      B = T.alloc_buffer((4,))
            with T.sblock(""):       ->         if i < 3:
                T.where(i < 3)                      B[0 + i] = ...
                B = T.sblock_alloc_buffer((4,))
                B[u + i] = ...
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from tirc.diagnostics import DiagnosticError
from tirc.ir import dtype as dt
from tirc.ir import expr as E
from tirc.ir import stmt as S
from tirc.ir.buffer import Range
from tirc.ir.cluster import CLUSTER_ATTR, cluster_dims, function_span, parse_dims
from tirc.ir.function import PrimFunc
from tirc.ir.functor import Mutator, walk
from tirc.ir.node import Node
from tirc.ir.substitute import substitute
from tirc.transform.pass_base import Dialect, FunctionPass

THREAD_EXTENT = "thread_extent"
VIRTUAL_THREAD = "virtual_thread"


def alloc_annotations(alignment: int) -> S.Attrs:
    """What TVM 0.27 records on each allocation it lowers, kept so the two print alike."""
    return S.Attrs((("buffer_allocated_addr", ()), ("buffer_data_alignment", E.IntImm(alignment))))


def _pragma_value(block: S.SBlock, key: str, value: object) -> E.PrimExpr:
    """A block's pragma annotation as the value of its attribute."""
    if isinstance(value, E.PrimExpr):
        return value
    if isinstance(value, bool):
        return E.IntImm(int(value), dt.BOOL)
    if isinstance(value, int):
        return E.IntImm(value)
    if isinstance(value, float):
        return E.FloatImm(value)
    if isinstance(value, str):
        return E.StringImm(value)
    raise DiagnosticError.at(
        block.span, f"block '{block.name}' has pragma '{key}' of a value no attribute can hold"
    )


class _Lowerer(Mutator):
    def __init__(self) -> None:
        self.clusters: list[S.For] = []  # blockIdx loops a plan annotated with "cluster_dims"

    def visit_SeqStmt(self, node: S.SeqStmt) -> S.Stmt:
        stmts = [self.visit(stmt) for stmt in node.stmts]
        if all(new is old for new, old in zip(stmts, node.stmts, strict=False)):
            return node
        return S.seq(*stmts)  # a lowered block may be a sequence itself: keep one level

    def visit_SBlockRealize(self, node: S.SBlockRealize) -> S.Stmt:
        block = node.block
        if block.iter_vars or block.init is not None or block.match_buffers:
            raise DiagnosticError.at(
                block.span,
                f"block '{block.name}' is not opaque; run convert-blocks-to-opaque and "
                "lower-match-buffer first",
            )
        body: S.Stmt = self.visit(block.body)
        predicate = self.visit(node.predicate)
        if not E.is_const_int(predicate, 1):
            body = S.IfThenElse(predicate, body, span=node.span)
        allocs = [
            S.AllocBuffer(buffer, alloc_annotations(buffer.data_alignment), span=block.span)
            for buffer in block.alloc_buffers
        ]
        stmt = S.seq(*allocs, body)
        for key, value in sorted(block.annotations.items, key=lambda item: item[0])[::-1]:
            if key.startswith("pragma_"):  # TVM's legacy convention: an attribute, node 0
                stmt = S.AttrStmt(
                    E.IntImm(0), key, _pragma_value(block, key, value), stmt, span=block.span
                )
        return stmt

    def visit_For(self, node: S.For) -> S.Stmt:
        body: S.Stmt = self.visit(node.body)
        if node.kind is S.ForKind.THREAD_BINDING:
            return self.thread(node, body)
        if (
            E.is_const_int(node.extent, 1)
            and not node.annotations.items
            and node.kind
            in (S.ForKind.SERIAL, S.ForKind.UNROLLED, S.ForKind.VECTORIZED, S.ForKind.PARALLEL)
            and not _has_break_or_continue(body)
        ):
            return substitute(body, {node.loop_var: node.min})
        return node if body is node.body else dataclasses.replace(node, body=body)

    def thread(self, node: S.For, body: S.Stmt) -> S.Stmt:
        binding = node.thread_binding
        assert binding is not None
        if not E.is_const_int(node.min, 0):
            body = substitute(body, {node.loop_var: E.Add(node.loop_var, node.min)})
        iter_var = S.IterVar(
            node.loop_var,
            Range(E.IntImm(0, node.extent.dtype), node.extent),
            S.IterType.THREAD,
            binding.thread_tag,
            span=binding.span,
        )
        key = VIRTUAL_THREAD if binding.thread_tag.startswith("vthread") else THREAD_EXTENT
        if CLUSTER_ATTR in node.annotations:
            self.clusters.append(node)
        return S.AttrStmt(iter_var, key, node.extent, body, span=node.span)


@dataclass(frozen=True)
class LowerOpaqueBlock(FunctionPass):
    name = "lower-opaque-block"
    expects = Dialect.OPAQUE_BLOCKS
    leaves = Dialect.TIR

    def run_function(self, func: PrimFunc) -> PrimFunc:
        lowerer = _Lowerer()
        body = lowerer.visit(func.body)
        attrs = _cluster_attrs(func, lowerer.clusters)
        if body is func.body and attrs is func.attrs:
            return func
        return dataclasses.replace(func, body=body, attrs=attrs)


def _cluster_attrs(func: PrimFunc, loops: list[S.For]) -> S.Attrs:
    """The function's attributes with the cluster shape its blockIdx loops were annotated with
    (a plan's `annotate(bx, "cluster_dims", [2, 1, 1])`): a kernel's, so the function's."""
    attrs = func.attrs
    known = cluster_dims(func)
    for loop in loops:
        where = loop.span or function_span(func)  # a plan's loops have no place in the text
        value = parse_dims(loop.annotations.get(CLUSTER_ATTR), where)
        binding = loop.thread_binding
        if binding is None or not binding.thread_tag.startswith("blockIdx"):
            raise DiagnosticError.at(
                where,
                f'"{CLUSTER_ATTR}" annotates a loop bound to blockIdx, not one bound to '
                f"{binding.thread_tag if binding is not None else 'no thread'}",
            )
        if known is not None and known != value:
            raise DiagnosticError.at(
                where,
                f"this loop asks for clusters of {value}, but the function already has "
                f'"{CLUSTER_ATTR}" {known}',
            )
        attrs, known = attrs.set(CLUSTER_ATTR, value), value
    return attrs


def _has_break_or_continue(body: S.Stmt) -> bool:
    """Whether `body` holds a break or continue (one of an inner loop's counts too: keeping
    a unit loop is never wrong)."""
    found: list[Node] = []
    walk(body, lambda node: found.append(node) if isinstance(node, S.Break | S.Continue) else None)
    return bool(found)

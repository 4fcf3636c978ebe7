"""lift-thread-binding: in each kernel, one loop per thread tag, at the top of the kernel.

A kernel is an outermost `T.thread_binding` loop and everything under it. Every thread loop
inside it (`vthread` excepted) is removed where it stands and its variable replaced by one
variable per tag (named like TVM: `threadIdx_x`); the loops for those variables, in the order
their tags first appear, wrap the kernel's body. Each thread runs the statements around its
old loop, which is what the loops computed when they were spread over the threads. A kernel
whose loops of one tag start elsewhere than at 0 is left as it is; loops of one tag that
differ in extent are refused with a located error. Loops of one tag in two index types (4
and T.int64(4)) share the variable of the first, cast for the other; a lifted loop's
annotations stay where it stood, on a unit serial loop.

Expects s-tir with opaque blocks or later; leaves the same dialect:

    for bx in T.thread_binding(8, "blockIdx.x"):     for blockIdx_x in T.thread_binding(8, ...):
        for tx in T.thread_binding(32, ...):              for threadIdx_x in T.thread_binding(32):
            B[bx, tx] = A[bx, tx]               ->            B[blockIdx_x, threadIdx_x] = ...
        for k in range(4):                                    for k in range(4):
            for tx in T.thread_binding(32, ...):                  C[blockIdx_x, threadIdx_x] = ...
                C[bx, tx] = B[k, tx]
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from tirc.diagnostics import DiagnosticError, Note
from tirc.ir import expr as E
from tirc.ir import stmt as S
from tirc.ir.cluster import CLUSTER_ATTR
from tirc.ir.function import PrimFunc
from tirc.ir.functor import Mutator, walk
from tirc.ir.structural import structural_equal
from tirc.ir.substitute import substitute
from tirc.transform.pass_base import Dialect, FunctionPass


def is_lifted(loop: S.For) -> bool:
    """Whether `loop` is a thread loop that lifting moves."""
    return _tag(loop) is not None


def _tag(loop: S.For) -> str | None:
    """The thread tag of a loop that lifting moves; None for other loops."""
    if loop.kind is not S.ForKind.THREAD_BINDING or loop.thread_binding is None:
        return None
    tag = loop.thread_binding.thread_tag
    return None if tag.startswith("vthread") else tag


def _thread_loops(stmt: S.Stmt) -> list[S.For]:
    found: list[S.For] = []

    def visit(node: object) -> None:
        if isinstance(node, S.For) and _tag(node) is not None:
            found.append(node)

    walk(stmt, visit)
    return found


# annotations of a launch, not of a place in the kernel: they go with the lifted loop
LAUNCH_ANNOTATIONS = frozenset({CLUSTER_ATTR})


def _annotations(loop: S.For, *, launch: bool) -> S.Attrs:
    """The loop's annotations of the launch (`launch`), or the others."""
    items = tuple(
        (key, value)
        for key, value in loop.annotations.items
        if (key in LAUNCH_ANNOTATIONS) == launch
    )
    return S.Attrs(items) if items else S.EMPTY_ATTRS


class _Strip(Mutator):
    """The kernel body without its thread loops, their variables replaced."""

    def __init__(self, mapping: dict[E.Var, E.PrimExpr]):
        self.mapping = mapping

    def visit_SeqStmt(self, node: S.SeqStmt) -> S.Stmt:
        stmts = tuple(self.visit(stmt) for stmt in node.stmts)
        if all(a is b for a, b in zip(stmts, node.stmts, strict=True)):
            return node
        return S.seq(*stmts)  # a stripped loop's sequence joins the one around it

    def visit_For(self, node: S.For) -> S.Stmt:
        body = self.visit(node.body)
        if _tag(node) is not None:
            staying = _annotations(node, launch=False)
            if not staying.items:
                return body
            # its annotations stay where the loop stood, on a unit loop, as TVM keeps them
            # (those of the launch itself go with the lifted loop)
            unit = E.Var("var", node.loop_var.dtype)
            zero, one = E.IntImm(0, unit.dtype), E.IntImm(1, unit.dtype)
            return S.For(unit, zero, one, S.ForKind.SERIAL, body, annotations=staying)
        return node if body is node.body else dataclasses.replace(node, body=body)


def lift_kernel(kernel: S.For) -> S.For:
    """`kernel` with one loop per thread tag at its top; itself when the loops disagree."""
    loops = _thread_loops(kernel)
    order: dict[str, S.For] = {}
    for loop in loops:
        tag = _tag(loop)
        assert tag is not None
        first = order.setdefault(tag, loop)
        if not E.is_const_int(loop.min, 0):
            return kernel
        if not _same_extent(loop.extent, first.extent):
            raise DiagnosticError.at(
                loop.span,
                f"'{tag}' is bound with another extent here than elsewhere in the same kernel; "
                "a kernel has one extent per thread tag",
                Note(f"'{tag}' is first bound here", first.span),
            )
    plain = not any(loop.annotations for loop in loops)
    if plain and len(order) == len(loops) and _is_chain(kernel, len(loops)):
        return kernel  # already one loop per tag, at the top
    unified: dict[str, E.Var] = {}
    mapping: dict[E.Var, E.PrimExpr] = {}
    for tag, first in order.items():
        var = E.Var(tag.replace(".", "_"), first.loop_var.dtype)
        unified[tag] = var
    for loop in loops:
        tag = _tag(loop)
        assert tag is not None  # `loops` are the lifted loops, each with its tag
        var = unified[tag]
        # a loop of another index type reads the one variable cast to its own, as in TVM
        same = var.dtype == loop.loop_var.dtype
        mapping[loop.loop_var] = var if same else E.Cast(loop.loop_var.dtype, var)
    body: S.Stmt = substitute(_Strip(mapping).visit(kernel), mapping)
    for tag, first in reversed(order.items()):
        var = unified[tag]
        body = dataclasses.replace(
            first,
            loop_var=var,
            body=body,
            annotations=_annotations(first, launch=True),
            span=first.span,
        )
    assert isinstance(body, S.For)  # `order` is not empty: a loop wraps the body
    return body


def _same_extent(a: E.PrimExpr, b: E.PrimExpr) -> bool:
    """The same expression, or the same constant in two index types (4 and T.int64(4))."""
    if isinstance(a, E.IntImm) and isinstance(b, E.IntImm):
        return a.value == b.value
    return structural_equal(a, b)


def _is_chain(loop: S.Stmt, count: int) -> bool:
    """The first `count` statements from `loop` down are thread loops, each the body of the last."""
    for _ in range(count):
        if not isinstance(loop, S.For) or _tag(loop) is None:
            return False
        loop = loop.body
    return True


class _Kernels(Mutator):
    def visit_For(self, node: S.For) -> S.Stmt:
        if is_lifted(node):
            return lift_kernel(node)
        return self.generic_visit(node)


def lift_kernels(func: PrimFunc) -> PrimFunc:
    """`func` with every kernel lifted (the same object where nothing changed)."""
    body = _Kernels().visit(func.body)
    return func if body is func.body else dataclasses.replace(func, body=body)


@dataclass(frozen=True)
class LiftThreadBinding(FunctionPass):
    name = "lift-thread-binding"
    expects = Dialect.OPAQUE_BLOCKS
    leaves = Dialect.OPAQUE_BLOCKS

    def run_function(self, func: PrimFunc) -> PrimFunc:
        return lift_kernels(func)

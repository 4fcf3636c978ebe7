"""Blocks: each binding is an integer inside its iteration variable's domain, checked wherever
constant loop bounds decide it.

Two habits are valid but suspicious, and draw warnings: two blocks of one name (a schedule
cannot pick one by name; TVM's own rfactor schedules produce them), and `T.init` in a block
without a reduction iteration variable (the init then runs before every execution of the body).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from tirc.analysis.arith.bound import Bound, const_bound
from tirc.analysis.well_formed.checker import Checker
from tirc.diagnostics import Diagnostic, Note, Span
from tirc.ir.buffer import Range
from tirc.ir.expr import IntImm, PrimExpr, Var, is_true
from tirc.ir.function import PrimFunc
from tirc.ir.functor import walk
from tirc.ir.node import Node
from tirc.ir.stmt import For, IterType, IterVar, SBlock, SBlockRealize, Stmt

# Only these promise a value inside the domain; opaque and thread iterators promise nothing.
_DOMAIN_BOUND = (IterType.SPATIAL, IterType.REDUCE)


class BlockChecker(Checker):
    def __init__(self) -> None:
        super().__init__()
        self.names: dict[str, Span | None] = {}
        self.bounds: dict[Var, Bound] = {}
        self.guards = 0  # enclosing ifs and whiles: they may keep a binding in range

    @contextmanager
    def bound(self, var: Var, known: Bound | None) -> Iterator[None]:
        if known is not None:
            self.bounds[var] = known
        try:
            yield
        finally:
            self.bounds.pop(var, None)

    def visit_For(self, stmt: For) -> None:
        known = range_bound(Range(stmt.min, stmt.extent))
        with self.bound(stmt.loop_var, known):
            self.generic_visit(stmt)

    def visit_guarded(self, stmt: Stmt) -> None:
        self.guards += 1
        try:
            self.generic_visit(stmt)
        finally:
            self.guards -= 1

    visit_IfThenElse = visit_While = visit_guarded

    def visit_SBlockRealize(self, stmt: SBlockRealize) -> None:
        block = stmt.block
        is_guarded = self.guards > 0 or not is_true(stmt.predicate)
        for iter_var, value in zip(block.iter_vars, stmt.iter_values, strict=True):
            self.check_binding(block, iter_var, value, is_guarded)
        self.visit(stmt.predicate)
        self.visit(stmt.iter_values)
        self.visit(block)

    def check_binding(
        self, block: SBlock, iter_var: IterVar, value: PrimExpr, is_guarded: bool
    ) -> None:
        name = iter_var.var.name
        value_type = value.dtype
        if not value_type.is_integer or value_type.is_vector:
            self.error(
                f"iteration variable '{name}' of block '{block.name}' is bound to a value of "
                f"type {value_type}; bindings are integers",
                self.first_located(value, iter_var),
            )
            return
        if value_type != iter_var.var.dtype:
            # Lowering and the schedule primitives put the binding where the variable was.
            self.error(
                f"iteration variable '{name}' of block '{block.name}' is "
                f"{iter_var.var.dtype} but bound to a value of type {value_type}",
                self.first_located(value, iter_var),
            )
            return
        if is_guarded or iter_var.iter_type not in _DOMAIN_BOUND or iter_var.dom is None:
            return
        domain = range_bound(iter_var.dom)
        if domain is None or not is_known(value, self.bounds):
            return
        values = const_bound(value, self.bounds)
        assert domain.min is not None and domain.max is not None
        if (
            values.min is not None
            and values.max is not None
            and not values.is_within(domain.min, domain.max)
        ):
            self.error(
                f"binding of '{name}' in block '{block.name}' takes values in "
                f"[{values.min}, {values.max}], outside its domain [{domain.min}, {domain.max}]",
                self.first_located(value, iter_var),
            )

    def visit_SBlock(self, block: SBlock) -> None:
        if block.name in self.names:
            self.warning(
                f"two blocks are named '{block.name}'; get_sblock cannot tell them apart",
                block,
                Note(f"the first '{block.name}' is here", self.names[block.name]),
            )
        else:
            self.names[block.name] = self.span_of(block)
        if block.init is not None and not any(
            iter_var.iter_type is IterType.REDUCE for iter_var in block.iter_vars
        ):
            self.warning(
                f"block '{block.name}' has a T.init() but no reduction iteration variable, "
                "so the init runs before every execution of the body",
                block.init,
            )
        saved = dict(self.bounds)
        for iter_var in block.iter_vars:
            known = range_bound(iter_var.dom) if iter_var.dom is not None else None
            if known is not None:
                self.bounds[iter_var.var] = known
        try:
            self.generic_visit(block)
        finally:
            self.bounds = saved


def range_bound(dom: Range) -> Bound | None:
    """[min, min + extent - 1] of a range with constant bounds and a positive extent."""
    if isinstance(dom.min, IntImm) and isinstance(dom.extent, IntImm) and dom.extent.value > 0:
        return Bound(dom.min.value, dom.min.value + dom.extent.value - 1)
    return None


def is_known(expr: PrimExpr, bounds: dict[Var, Bound]) -> bool:
    """Whether every variable of `expr` has a known constant range: a bound that falls back
    on a variable's dtype limits proves nothing about a binding."""
    unknown: list[Var] = []

    def collect(node: Node) -> None:
        if isinstance(node, Var) and node not in bounds:
            unknown.append(node)

    walk(expr, collect)
    return not unknown


def check_blocks(func: PrimFunc) -> list[Diagnostic]:
    checker = BlockChecker()
    checker.visit(func)
    return checker.diagnostics

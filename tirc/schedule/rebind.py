"""Rebuilding the body of a rewritten loop nest: loop variables replaced by expressions of the
new loops in everything below, block bindings put in iterator-map normal form, a guard
appended to the predicates of the outermost blocks, and a record of the blocks rebuilt (for
`state.replace`'s reuse).
"""

from __future__ import annotations

from collections.abc import Mapping

from tirc.analysis.arith.iter_map import normalize_iter_map
from tirc.ir import expr as E
from tirc.ir.buffer import Range
from tirc.ir.expr import IntImm, PrimExpr, Var
from tirc.ir.stmt import For, ForKind, SBlock, SBlockRealize, Stmt
from tirc.ir.substitute import Substituter
from tirc.schedule.sref import SRef


def conjoin(predicate: PrimExpr, extra: PrimExpr) -> PrimExpr:
    """`predicate and extra`, without the `True and` that a fresh block's predicate would add."""
    if isinstance(predicate, IntImm) and predicate.value:
        return extra
    return E.And(predicate, extra)


class Rebinder(Substituter):
    """Substitutes loop variables below a rewritten loop.

    Bindings that change are rewritten in iterator-map normal form over the loops around
    them (`domains`: the loops above the body; loops inside are added as they are met), and
    left as substituted when they are not affine; predicates are substituted as written.
    `guard`, when given, is conjoined to the predicate of each block realized directly in the
    body (blocks nested in those are guarded by their parent). `reuse` maps each rebuilt
    block to its new version.
    """

    def __init__(
        self,
        mapping: Mapping[Var, PrimExpr],
        domains: Mapping[Var, Range],
        keep_unit_iters: bool = True,
        guard: PrimExpr | None = None,
        written: Mapping[Var, PrimExpr] | None = None,
    ):
        # With `written`, bindings take `mapping` (simplified) and everything else, predicates
        # and the accesses of blocks without iterators, the substitution as the primitive
        # writes it (split's nested `(i_0 * 2 + i_1) * 16 + i_2`), as TVM substitutes them.
        super().__init__(mapping if written is None else written)
        self.bindings = None if written is None else Substituter(mapping)
        self.domains = dict(domains)
        self.keep_unit_iters = keep_unit_iters
        self.guard = guard
        self.reuse: dict[SBlock, SBlock] = {}
        self._depth = 0

    def visit_For(self, node: For) -> For:
        self.domains[node.loop_var] = Range(node.min, node.extent)
        result: For = self.generic_visit(node)
        del self.domains[node.loop_var]
        return result

    def visit_SBlockRealize(self, node: SBlockRealize) -> SBlockRealize:
        binding = self.visit if self.bindings is None else self.bindings.visit
        values = [binding(value) for value in node.iter_values]
        predicate = self.visit(node.predicate)
        if self.guard is not None and self._depth == 0:
            predicate = conjoin(predicate, self.guard)
        changed = any(a is not b for a, b in zip(values, node.iter_values, strict=False))
        if changed and self._depth == 0:
            normal = normalize_iter_map(values, self.domains, predicate, self.keep_unit_iters)
            constant = _constant_bounds(predicate)
            if normal is None and constant is not predicate:
                # a bound by a shape variable (`i_0 * 256 + i_1 < n`) or a disjunction does
                # not change how the bindings read: normalize under the constant bounds alone
                normal = normalize_iter_map(values, self.domains, constant, self.keep_unit_iters)
            if normal is not None:
                values = normal
        self._depth += 1
        block = self.visit(node.block)
        self._depth -= 1
        if block is node.block and predicate is node.predicate and not changed:
            return node
        return SBlockRealize(tuple(values), predicate, block, span=node.span)

    def visit_SBlock(self, node: SBlock) -> SBlock:
        new = self.generic_visit(node)
        if new is not node:
            self.reuse[node] = new
        return new


def _constant_bounds(predicate: PrimExpr) -> PrimExpr:
    """`predicate` with only its conjuncts `x < c` for a constant `c`, those that shorten a
    fused iterator; the same object when it has no others. Bounds by shape variables and
    disjunctions (`x < n`, `(a < 0 or x == 0)`) leave how the bindings read unchanged."""
    conjuncts: list[PrimExpr] = []
    pending = [predicate]
    while pending:
        term = pending.pop(0)
        if isinstance(term, E.And):
            pending[:0] = [term.a, term.b]
        else:
            conjuncts.append(term)
    kept = [term for term in conjuncts if isinstance(term, E.LT) and isinstance(term.b, IntImm)]
    if len(kept) == len(conjuncts):
        return predicate
    result: PrimExpr = IntImm(1, predicate.dtype)
    for term in kept:
        result = conjoin(result, term)
    return result


def rebind(
    body: Stmt,
    mapping: Mapping[Var, PrimExpr],
    domains: Mapping[Var, Range],
    keep_unit_iters: bool = True,
    guard: PrimExpr | None = None,
    written: Mapping[Var, PrimExpr] | None = None,
) -> tuple[Stmt, dict[SBlock, SBlock]]:
    """`body` with `mapping` substituted (see Rebinder) and the blocks it rebuilt."""
    rebinder = Rebinder(mapping, domains, keep_unit_iters, guard, written)
    result: Stmt = rebinder.visit(body)
    return result, rebinder.reuse


def outer_domains(sref: SRef, top: SRef | None = None) -> dict[Var, Range]:
    """The ranges of the loops above `sref`, up to its block (or up to the loop `top`)."""
    domains: dict[Var, Range] = {}
    node = sref.parent
    while node is not None and node.is_loop:
        loop = node.loop
        domains[loop.loop_var] = Range(loop.min, loop.extent)
        if node is top:
            break
        node = node.parent
    return domains


def serial_loop(var: Var, extent: PrimExpr, body: Stmt) -> For:
    """`for var in range(extent)`: a plain loop, as split, fuse and merge create them."""
    return For(var, IntImm(0, var.dtype), extent, ForKind.SERIAL, body)


def const_value(expr: object) -> int | None:
    """The value of an integer constant (IntImm or Python int), else None."""
    if isinstance(expr, bool):
        return int(expr)
    if isinstance(expr, int):
        return expr
    if isinstance(expr, IntImm):
        return expr.value
    return None

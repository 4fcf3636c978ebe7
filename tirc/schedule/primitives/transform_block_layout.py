"""transform_block_layout: remap a block's iteration space through an index map, and rebuild
the loops around it to run over the new space.

The block must be the only thing in its loops, bound trivially (iterator k is loop k), and
the map must be a bijective affine map of the iteration space; the block's body reads the
old iterators through the map's inverse. New iterators are `v0, v1...`, loops `ax0, ax1...`.

    for i, j in T.grid(16, 4):                  for ax0 in range(64):
        vi, vj = T.axis.remap("SS", [i, j])  →      v0 = T.axis.spatial(64, ax0)
        B[vi, vj] = A[vi, vj]                       B[v0 // 4, v0 % 4] = A[v0 // 4, v0 % 4]
    (index map: lambda vi, vj: (vi * 4 + vj,))
"""

from __future__ import annotations

import dataclasses

from tirc.analysis.arith import Analyzer
from tirc.analysis.arith.iter_map import detect_iter_map, normalize_iter_map
from tirc.ir import expr as E
from tirc.ir.buffer import BufferRegion, Range
from tirc.ir.canonical import from_sum, to_sum
from tirc.ir.expr import Cast, IntImm, PrimExpr, Var
from tirc.ir.functor import Mutator, walk
from tirc.ir.stmt import (
    BufferStore,
    For,
    ForKind,
    IterType,
    IterVar,
    SBlock,
    SBlockRealize,
    Stmt,
    domain_of,
)
from tirc.ir.substitute import substitute
from tirc.schedule.access_simplify import simplify_accesses
from tirc.schedule.dtype_substitute import substitute_legalized
from tirc.schedule.errors import ScheduleError
from tirc.schedule.index_map import IndexMap, IndexMapError, parse_index_map
from tirc.schedule.primitives import primitive
from tirc.schedule.properties import realize_of
from tirc.schedule.schedule import Schedule, describe
from tirc.schedule.signature import Kind, Param, Signature
from tirc.schedule.sref import SRef
from tirc.schedule.state import ScheduleState, children
from tirc.text import script


@primitive(
    Signature(
        "transform_block_layout",
        "TransformBlockLayout",
        inputs=(Param("block", Kind.BLOCK),),
        attrs=(Param("index_map", Kind.INDEX_MAP),),
        doc="Remap a block's iteration space through an index map; rebuild its loops.",
    )
)
def transform_block_layout(sch: Schedule, block: SRef, index_map: str | IndexMap) -> None:
    state = sch.state_owning(block)
    node = block.block
    mapping = _as_index_map(index_map, node)
    loops = Schedule.loops_above(block)
    _check_loops(loops, block)
    realize = realize_of(block)
    _check_trivial_binding(realize, loops, block)
    if len(mapping.initial) != len(node.iter_vars):
        raise ScheduleError(
            f"the index map takes {len(mapping.initial)} indices but {describe(block)} has "
            f"{len(node.iter_vars)} iterators",
            block,
        )
    new_block, realize_new = _rewrite(mapping, node, realize, block)
    nest: Stmt = realize_new
    for iter_var in reversed(new_block.iter_vars):
        loop_var = realize_new.iter_values[new_block.iter_vars.index(iter_var)]
        assert isinstance(loop_var, Var)
        extent = domain_of(iter_var).extent
        nest = For(loop_var, IntImm(0, loop_var.dtype), extent, ForKind.SERIAL, nest)
    if loops:
        state.replace(loops[0], nest, {node: new_block})
    else:
        _replace_realize(state, block, realize, nest, node, new_block)


def _as_index_map(index_map: str | IndexMap, block: SBlock) -> IndexMap:
    if isinstance(index_map, IndexMap):
        return index_map
    dtypes = [iter_var.var.dtype for iter_var in block.iter_vars]
    hint = max(dtypes, key=lambda dtype: dtype.bits) if dtypes else None
    return parse_index_map(index_map, dtype_hint=hint)


def _check_loops(loops: list[SRef], block: SRef) -> None:
    for loop in loops:
        start = loop.loop.min
        if not (isinstance(start, IntImm) and start.value == 0):
            raise ScheduleError(f"{describe(loop)} does not start at 0", loop)
    for loop in loops:
        inner = children(loop.loop)
        if len(inner) != 1 or _has_other_statements(loop.loop):
            raise ScheduleError(
                f"{describe(loop)} has more than one child: the loops above {describe(block)} "
                "must hold nothing else",
                loop,
                block,
            )


def _has_other_statements(loop: For) -> bool:
    """Whether the loop body is more than the next loop or block realize (a sequence)."""
    return not isinstance(loop.body, (For, SBlockRealize))


def _check_trivial_binding(realize: SBlockRealize, loops: list[SRef], block: SRef) -> None:
    values = realize.iter_values
    trivial = len(values) == len(loops) and all(
        value is loop.loop.loop_var for value, loop in zip(values, loops, strict=True)
    )
    if not trivial:
        raise ScheduleError(
            f"{describe(block)} is not bound trivially: its iterators must be the loop "
            "variables around it, in order",
            block,
        )


def _rewrite(
    mapping: IndexMap, node: SBlock, realize: SBlockRealize, block: SRef
) -> tuple[SBlock, SBlockRealize]:
    analyzer = Analyzer()
    old_vars = [iter_var.var for iter_var in node.iter_vars]
    extents = []
    for iter_var in node.iter_vars:
        assert iter_var.dom is not None
        extents.append(iter_var.dom.extent)
    try:
        transformed = mapping.map(old_vars, analyzer)
        new_extents = mapping.map_shape(extents)
    except IndexMapError as error:
        raise ScheduleError(
            f"the index map does not apply to {describe(block)}: {error}", block
        ) from None
    types = {id(iter_var.var): iter_var.iter_type for iter_var in node.iter_vars}
    new_iters = []
    for position, (expr, extent) in enumerate(zip(transformed, new_extents, strict=True)):
        var = Var(f"v{position}", expr.dtype)
        if isinstance(extent, IntImm) and extent.value == 1:
            iter_type = IterType.SPATIAL
        else:
            iter_type = _iter_type_of(expr, types)
        if iter_type is IterType.OPAQUE:
            raise ScheduleError(
                f"the new iterator {_text(expr)} of {describe(block)} mixes data-parallel and "
                "reduction iterators (or none): its kind cannot be decided",
                block,
            )
        zero = IntImm(0, var.dtype)
        new_iters.append(IterVar(var, Range(zero, _cast_like(extent, var)), iter_type))
    try:
        inverse = mapping.inverse(extents)
    except IndexMapError as error:
        raise ScheduleError(
            f"the index map {mapping} is not a bijection of {describe(block)}'s iteration "
            f"space: {error}",
            block,
        ) from None
    new_vars = [iter_var.var for iter_var in new_iters]
    recovered = inverse.map(new_vars, analyzer)
    substitution = dict(zip(old_vars, recovered, strict=True))
    body_block = substitute_legalized(node, substitution)
    new_block = dataclasses.replace(body_block, iter_vars=tuple(new_iters))
    # a unit iterator stays a variable where it is an index itself (A[v0, ...]), as TVM
    # leaves it, and is 0 within a larger index
    units: dict[Var, PrimExpr] = {
        iv.var: IntImm(0, iv.var.dtype) for iv in new_iters if _is_unit(iv)
    }
    domains = {iv.var: iv.dom for iv in new_iters if iv.dom is not None}
    new_block = simplify_accesses(
        new_block,
        analyzer,
        bind_unit_iterators=False,
        arrange=lambda index, written: _in_iterator_form(
            _drop_units(index, units), written, domains
        ),
    )
    new_block = _NegativeOffsets().visit(new_block)
    loop_vars = tuple(Var(f"ax{position}", var.dtype) for position, var in enumerate(new_vars))
    new_realize = dataclasses.replace(realize, iter_values=loop_vars, block=new_block)
    return new_block, new_realize


def _is_unit(iter_var: IterVar) -> bool:
    dom = iter_var.dom
    return dom is not None and isinstance(dom.extent, IntImm) and dom.extent.value == 1


def _drop_units(index: PrimExpr, units: dict[Var, PrimExpr]) -> PrimExpr:
    """`index` with the unit iterators in it 0 (`v1 * 4096 + v0` is `v0` for a unit `v1`),
    unless it is one of them."""
    if isinstance(index, Var) or not units or not (_vars_of(index) & set(units)):
        return index
    return Analyzer().simplify(substitute(index, units))


def _in_iterator_form(index: PrimExpr, written: PrimExpr, domains: dict[Var, Range]) -> PrimExpr:
    """A simplified index as TVM's iterator-map simplification writes it where the map reads
    it: one iterator term scaled by a negative factor is `v * -1 + 511` (not `511 - v`),
    otherwise the iterators' terms come first (`_iterators_first`). An index the map does not
    read (`load + v // page_size`, a division by a symbolic divisor; `2047 - v * 4 - w`, terms
    that do not fuse) stays as `written`, unsimplified, as TVM leaves it."""
    total = to_sum(index)
    moving = [
        (atom, coeff) for atom, coeff in total.terms.values() if _vars_of(atom) & set(domains)
    ]
    if len(moving) == 1 and moving[0][1] < 0 and _is_affine(moving[0][0], domains):
        atom, coeff = moving[0]
        rest = to_sum(index)
        rest.add_term(atom, -coeff)
        term: PrimExpr = E.Mul(atom, IntImm(coeff, index.dtype))
        if rest.is_const and rest.const == 0:
            return term
        return E.Add(term, from_sum(rest))
    if moving and not _is_affine(index, domains):
        return written
    if moving and not isinstance(written, Var):
        # the map's normal form of the index as substituted: its terms in the order the
        # map fuses them (`v0 // 16 + v1 // 96` stays so, where the simplifier sorts it)
        # (a negative base as the simplifier writes it, `x - 1`: _NegativeOffsets decides)
        normal = normalize_iter_map([written], domains, None, keep_unit_iters=False)
        if normal is not None:
            return _as_difference(normal[0])
    return _iterators_first(index, set(domains))


def _as_difference(index: PrimExpr) -> PrimExpr:
    """`x + -c` as `x - c`."""
    if isinstance(index, E.Add) and isinstance(index.b, IntImm) and index.b.value < 0:
        return E.Sub(index.a, IntImm(-index.b.value, index.b.dtype))
    return index


def _is_affine(index: PrimExpr, domains: dict[Var, Range]) -> bool:
    return detect_iter_map([index], domains, symbolic=True).ok


def _iterators_first(index: PrimExpr, iterators: set[Var]) -> PrimExpr:
    """A sum with its terms that read the block's iterators first, in their order, and those
    that do not after them, as one term: `n + v0` is `v0 + n`, `v0 + n + v1 + m` is
    `v0 + v1 + (n + m)` (as TVM writes an index in iterator-map form, base last)."""
    terms: list[PrimExpr] = []
    pending = [index]
    while pending:
        term = pending.pop()
        if isinstance(term, E.Add):
            pending += [term.b, term.a]
        else:
            terms.append(term)
    reads = [bool(_vars_of(term) & iterators) for term in terms]
    if all(reads) or not any(reads) or reads.index(False) == len(reads) - 1:
        return index  # one kind of term only, or the iterators' then one other
    moving = [term for term, read in zip(terms, reads, strict=True) if read]
    base = [term for term, read in zip(terms, reads, strict=True) if not read]
    return E.Add(_sum(moving), _sum(base))


class _NegativeOffsets(Mutator):
    """`x - 3` written `x + -3` in the accesses and regions, as TVM writes an index in
    iterator-map form; except `v - 3` for an iterator `v` that the condition of an enclosing
    `T.if_then_else` reads (`if_then_else(3 <= v, A[v - 3], 0)`), which TVM's simplifier,
    knowing the condition, leaves as written."""

    def __init__(self) -> None:
        self.guarded: list[set[Var]] = []

    def index(self, index: PrimExpr, guarded: bool = True) -> PrimExpr:
        if not (isinstance(index, E.Sub) and isinstance(index.b, IntImm)):
            return index
        if guarded and isinstance(index.a, Var) and any(index.a in vs for vs in self.guarded):
            return index
        return E.Add(index.a, IntImm(-index.b.value, index.b.dtype))

    def visit_Call(self, node: E.Call) -> PrimExpr:
        if node.op != "if_then_else":
            return self.generic_visit(node)
        condition, then_value, else_value = node.args
        assert isinstance(condition, PrimExpr)
        self.guarded.append(_vars_of(condition))
        branches = (self.visit(then_value), self.visit(else_value))
        self.guarded.pop()
        return dataclasses.replace(node, args=(self.visit(condition), *branches))

    def visit_BufferLoad(self, node: E.BufferLoad) -> PrimExpr:
        return dataclasses.replace(node, indices=tuple(self.index(i) for i in node.indices))

    def visit_BufferStore(self, node: BufferStore) -> Stmt:
        indices = tuple(self.index(i) for i in node.indices)
        return dataclasses.replace(node, value=self.visit(node.value), indices=indices)

    def visit_SBlock(self, node: SBlock) -> Stmt:
        new = self.generic_visit(node)

        def region(item: BufferRegion) -> BufferRegion:
            ranges = tuple(Range(self.index(r.min, False), r.extent) for r in item.region)
            return BufferRegion(item.buffer, ranges)

        reads = tuple(region(item) for item in new.reads)
        writes = tuple(region(item) for item in new.writes)
        return dataclasses.replace(new, reads=reads, writes=writes)


def _vars_of(expr: PrimExpr) -> set[Var]:
    found: set[Var] = set()
    walk(expr, lambda node: found.add(node) if isinstance(node, Var) else None)
    return found


def _sum(terms: list[PrimExpr]) -> PrimExpr:
    result = terms[0]
    for term in terms[1:]:
        result = E.Add(result, term)
    return result


def _iter_type_of(expr: PrimExpr, types: dict[int, IterType]) -> IterType:
    """The kind of the block iterators `expr` reads, if they agree; else opaque."""
    found: set[IterType] = set()
    walk(expr, lambda item: found.add(types[id(item)]) if id(item) in types else None)
    return found.pop() if len(found) == 1 else IterType.OPAQUE


def _cast_like(extent: PrimExpr, var: Var) -> PrimExpr:
    if extent.dtype == var.dtype:
        return extent
    if isinstance(extent, IntImm):
        return IntImm(extent.value, var.dtype)

    return Cast(var.dtype, extent)


def _replace_realize(
    state: ScheduleState, block: SRef, realize: SBlockRealize, nest: Stmt, old: SBlock, new: SBlock
) -> None:
    """A block with no loops above: the new nest takes its realize's place in the parent."""

    parent = block.parent
    assert parent is not None and parent.is_block

    class _Swap(Mutator):
        def visit_SBlockRealize(self, item: SBlockRealize) -> Stmt:
            return nest if item is realize else item

    parent_block = parent.block
    body = _Swap().visit(parent_block.body)
    state.replace(parent, dataclasses.replace(parent_block, body=body), {old: new})


def _text(expr: PrimExpr) -> str:
    return script(expr)

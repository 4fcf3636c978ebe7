"""decompose_padding: split a padding block into a block that fills the whole output with the
pad value and a block that writes only the in-bound part, both under `loop`.

The block stores `T.if_then_else(in_bounds, value, pad)`, `in_bounds` a conjunction of bounds
on its iterators. The fill block (`<name>_pad_const`, returned) runs the original loops from
`loop` down; the in-bound block runs them narrowed to the in-bound box, its iterators shifted
to start at 0, with a `T.where` for the bounds of loops above `loop` (the in-bound tests
first, then the block's own predicate). Where a loop below `loop` holds other statements too,
the fill nest still goes before `loop` and the in-bound nest replaces only the loops under
the lowest such loop, which keeps its other statements. `loop` itself holding others is
refused: TVM replaces it whole and drops them.

    for i in range(140):                          for i in range(140):  # "block_pad_const"
        y[vi] = T.if_then_else(         →             y[vi] = 0
            6 <= vi and vi < 134, x[vi - 6], 0)   for i in range(128):  # "block"
                                                      y[vi + 6] = x[vi]
"""

from __future__ import annotations

import dataclasses
from typing import Any

from tirc.analysis.arith import Analyzer
from tirc.ir import expr as E
from tirc.ir.buffer import Range
from tirc.ir.expr import BufferLoad, Call, IntImm, PrimExpr, Var, are_exprs
from tirc.ir.functor import uses_var, walk
from tirc.ir.stmt import BufferStore, For, IterVar, SBlock, SBlockRealize, Stmt
from tirc.ir.substitute import substitute
from tirc.schedule.access_simplify import simplify_accesses
from tirc.schedule.errors import ScheduleError
from tirc.schedule.primitives import primitive
from tirc.schedule.properties import realize_of
from tirc.schedule.rebind import conjoin, const_value
from tirc.schedule.schedule import Schedule, describe
from tirc.schedule.signature import Kind, Param, Signature
from tirc.schedule.splice import replace_with_sequence
from tirc.schedule.sref import SRef
from tirc.schedule.state import with_child_replaced
from tirc.text import script

Bounds = dict[int, tuple[PrimExpr, PrimExpr]]  # id(iterator) -> [low, high)


@primitive(
    Signature(
        "decompose_padding",
        "DecomposePadding",
        inputs=(Param("block", Kind.BLOCK), Param("loop", Kind.LOOP)),
        outputs="one",
        doc="Split a padding block into a pad-value fill and an in-bound copy under a loop.",
    )
)
def decompose_padding(sch: Schedule, block: SRef, loop: SRef) -> SRef:
    state = sch.state_owning(block)
    node = block.block
    loops = Schedule.loops_above(block)
    if loop not in loops:
        raise ScheduleError(f"{describe(loop)} is not a loop above {describe(block)}", loop, block)
    store, condition, value, pad = _padding_parts(node, block)
    bounds = _in_bounds(condition, node, block)
    inner = loops[loops.index(loop) :]
    in_place = _in_bound_top(inner, block)
    realize = realize_of(block)
    outer = Analyzer()
    for sref in loops[: loops.index(loop)]:
        outer.bind(sref.loop.loop_var, Range(sref.loop.min, sref.loop.extent))
    fill = _fill_nest(inner, realize, node, store, pad, outer)
    for sref in inner[: inner.index(in_place)]:
        outer.bind(sref.loop.loop_var, Range(sref.loop.min, sref.loop.extent))
    in_inner = inner[inner.index(in_place) :]
    in_bound, in_block = _in_bound_nest(in_inner, realize, node, store, value, bounds, outer)
    rebuilt = _rebuilt(in_place, loop, in_bound)
    replace_with_sequence(state, loop, (fill, rebuilt), {node: in_block})
    return state.get_sref(_innermost_block(fill))


def _padding_parts(node: SBlock, block: SRef) -> tuple[BufferStore, PrimExpr, PrimExpr, PrimExpr]:
    store = node.body
    if (
        node.init is None
        and isinstance(store, BufferStore)
        and isinstance(store.value, Call)
        and store.value.op == "if_then_else"
        and are_exprs(store.value.args)
    ):
        condition, value, pad = store.value.args
        if not _reads_buffers(pad):
            return store, condition, value, pad
    raise ScheduleError(
        f"{describe(block)} is not a padding block: its body must be one store of "
        "T.if_then_else(in-bounds condition, value, pad value) with a pad value that reads "
        "no buffer",
        block,
    )


def _reads_buffers(expr: PrimExpr) -> bool:
    found: list[object] = []
    walk(expr, lambda item: found.append(item) if isinstance(item, BufferLoad) else None)
    return bool(found)


_FLIP = {E.GT: E.LT, E.GE: E.LE, E.LT: E.GT, E.LE: E.GE}


def _in_bounds(condition: PrimExpr, node: SBlock, block: SRef) -> Bounds:
    """Each iterator's in-bound interval, from `lo <= v`, `v < hi` and the like."""
    iterators = {id(iv.var): iv for iv in node.iter_vars}
    bounds: Bounds = {}
    for iv in node.iter_vars:
        assert iv.dom is not None
        bounds[id(iv.var)] = (iv.dom.min, E.Add(iv.dom.min, iv.dom.extent))
    pending = [condition]
    while pending:
        term = pending.pop()
        if isinstance(term, E.And):
            pending += [term.a, term.b]
            continue
        kind: type = type(term)
        a: Any = getattr(term, "a", None)
        b: Any = getattr(term, "b", None)
        if isinstance(b, Var) and id(b) in iterators and kind in _FLIP:
            kind, a, b = _FLIP[kind], b, a  # the iterator on the left
        if not (
            isinstance(a, Var)
            and id(a) in iterators
            and kind in _FLIP
            and not uses_var(b, {iv.var for iv in node.iter_vars})
        ):
            raise ScheduleError(
                f"the in-bounds condition of {describe(block)} must be a conjunction of bounds "
                f"on single iterators; {_text(term)} is not",
                block,
            )
        one = IntImm(1, a.dtype)
        low, high = bounds[id(a)]
        if kind is E.LT:
            high = b
        elif kind is E.LE:
            high = E.Add(b, one)
        elif kind is E.GE:
            low = b
        else:
            low = E.Add(b, one)
        bounds[id(a)] = (low, high)
    analyzer = Analyzer()
    return {key: (analyzer.simplify(lo), analyzer.simplify(hi)) for key, (lo, hi) in bounds.items()}


def _in_bound_top(inner: list[SRef], block: SRef) -> SRef:
    """Where the in-bound nest goes (TVM's rule): `loop` itself when no loop below it holds
    anything but the next loop down to the block; else the highest loop under the lowest
    one that holds more, whose other statements stay. `loop` holding more than that chain
    is refused: TVM would replace it whole, dropping the other statements."""
    top: SRef | None = None
    for sref in reversed(inner):
        if not isinstance(sref.loop.body, (For, SBlockRealize)):
            if sref is inner[0]:
                break  # the chain below is alone, `loop` is not: refused below
            if top is None:
                raise ScheduleError(
                    f"{describe(sref)} holds more than {describe(block)}: the block must be "
                    "alone under its innermost loop",
                    sref,
                    block,
                )
            return top
        top = sref
    if top is not inner[0]:
        raise ScheduleError(
            f"{describe(inner[0])} holds more than the loops and block below it: "
            f"{describe(block)} must be alone under the loop",
            inner[0],
        )
    return top


def _rebuilt(in_place: SRef, loop: SRef, in_bound: Stmt) -> Stmt:
    """`loop`'s statement with the subtree at `in_place` (`loop` or a loop below) replaced."""
    new, current = in_bound, in_place
    while current is not loop:
        parent = current.parent
        assert parent is not None and parent.is_loop  # the loops between are one chain
        new, current = with_child_replaced(parent.loop, current.loop, new), parent
    return new


def _fresh_loops(inner: list[SRef]) -> tuple[list[For], dict[Var, PrimExpr]]:
    fresh = [sref.loop for sref in inner]
    mapping: dict[Var, PrimExpr] = {}
    for node in fresh:
        mapping[node.loop_var] = Var(node.loop_var.name, node.loop_var.dtype)
    return fresh, mapping


def _wrap(
    loops: list[For], mapping: dict[Var, PrimExpr], extents: dict[Var, PrimExpr], body: Stmt
) -> Stmt:
    for node in reversed(loops):
        var = mapping[node.loop_var]
        assert isinstance(var, Var)
        extent = extents.get(node.loop_var, node.extent)
        body = dataclasses.replace(node, loop_var=var, extent=extent, body=body)
    return body


def _fill_nest(
    inner: list[SRef],
    realize: SBlockRealize,
    node: SBlock,
    store: BufferStore,
    pad: PrimExpr,
    outer: Analyzer,
) -> Stmt:
    loops, mapping = _fresh_loops(inner)
    values = tuple(outer.simplify(substitute(v, mapping)) for v in realize.iter_values)
    block = dataclasses.replace(
        node,
        name=f"{node.name}_pad_const",
        reads=(),
        body=dataclasses.replace(store, value=pad),
    )
    # Its own iterators: a variable is bound by one block only.
    renamed = {iv.var: Var(iv.var.name, iv.var.dtype) for iv in node.iter_vars}
    iter_vars = tuple(dataclasses.replace(iv, var=renamed[iv.var]) for iv in node.iter_vars)
    block = dataclasses.replace(substitute(block, renamed), iter_vars=iter_vars)
    fresh_realize = SBlockRealize(values, substitute(realize.predicate, mapping), block)
    return _wrap(loops, mapping, {}, fresh_realize)


def _in_bound_nest(
    inner: list[SRef],
    realize: SBlockRealize,
    node: SBlock,
    store: BufferStore,
    value: PrimExpr,
    bounds: Bounds,
    outer: Analyzer,
) -> tuple[Stmt, SBlock]:
    loops, mapping = _fresh_loops(inner)
    inner_loops = {id(item.loop_var): item for item in loops}
    extents: dict[Var, PrimExpr] = {}
    analyzer = Analyzer()
    shift: dict[Var, PrimExpr] = {}  # old iterator -> new iterator + low
    iter_vars: list[IterVar] = []
    values: list[PrimExpr] = []
    conditions: PrimExpr = IntImm(1, realize.predicate.dtype)  # the in-bound tests
    for iv, binding in zip(node.iter_vars, realize.iter_values, strict=True):
        assert iv.dom is not None
        low, high = bounds[id(iv.var)]
        extent = analyzer.simplify(E.Sub(high, low))
        narrowed = not (
            analyzer.can_prove_equal(low, iv.dom.min)
            and analyzer.can_prove_equal(extent, iv.dom.extent)
        )
        if not narrowed:
            iter_vars.append(iv)
            kept = substitute(binding, mapping)
            # TVM simplifies a kept binding over the new loops too (`i1 + ax1` over a unit ax1
            # is `i1`), but a lone variable only over the loops above `loop`
            within = outer if isinstance(kept, Var) else _within(loops, mapping, outer)
            values.append(within.simplify(kept))
            continue
        new_var = Var(iv.var.name, iv.var.dtype)
        iter_vars.append(IterVar(new_var, Range(IntImm(0, new_var.dtype), extent), iv.iter_type))
        shift[iv.var] = E.Add(new_var, low) if not _is_zero(low) else new_var
        loop = inner_loops.get(id(binding))
        if (
            loop is not None
            and _is_zero(loop.min)
            and analyzer.can_prove_equal(loop.extent, iv.dom.extent)
        ):
            # The loop runs exactly this iterator: narrow the loop itself.
            extents[loop.loop_var] = extent
            values.append(mapping[loop.loop_var])
            continue
        bound = outer.simplify(substitute(binding, mapping))
        values.append(outer.simplify(E.Sub(bound, low)) if not _is_zero(low) else bound)
        # The in-bound condition on the binding, as far as the loops do not ensure it.
        for test in (E.LE(low, bound), E.LT(bound, high)):
            if not _provable(test, loops, mapping, extents, outer):
                conditions = conjoin(conditions, _bound_test(test))
    body = dataclasses.replace(store, value=value)
    block = dataclasses.replace(node, iter_vars=tuple(iter_vars), body=body)
    block = substitute(block, shift)
    block = dataclasses.replace(block, iter_vars=tuple(iter_vars))
    block = simplify_accesses(block, Analyzer(), bind_iterators=False)
    # the in-bound tests first, then the block's own predicate, conjunct by conjunct, as TVM
    # writes them: `c1 and c2 and p1 and p2`
    predicate = conditions
    for conjunct in _conjuncts(realize.predicate):
        predicate = conjoin(predicate, conjunct)
    fresh_realize = SBlockRealize(tuple(values), substitute(predicate, mapping), block)
    return _wrap(loops, mapping, extents, fresh_realize), block


def _within(
    loops: list[For],
    mapping: dict[Var, PrimExpr],
    outer: Analyzer,
    extents: dict[Var, PrimExpr] | None = None,
) -> Analyzer:
    """An analyzer that knows the loops above `loop` and the new loops from it down."""
    analyzer = Analyzer()
    analyzer.ranges.update(outer.ranges)
    for node in loops:
        var = mapping[node.loop_var]
        assert isinstance(var, Var)
        extent = node.extent if extents is None else extents.get(node.loop_var, node.extent)
        analyzer.bind(var, Range(node.min, extent))
    return analyzer


def _provable(
    test: PrimExpr,
    loops: list[For],
    mapping: dict[Var, PrimExpr],
    extents: dict[Var, PrimExpr],
    outer: Analyzer,
) -> bool:
    return _within(loops, mapping, outer, extents).can_prove(test)


def _bound_test(test: E.LE | E.LT) -> PrimExpr:
    """A bound test `c <= x` or `x < c` with the constant moved through a division by a
    positive constant and an added constant, as TVM's simplifier writes it:
    `1 <= f // 10` is `10 <= f`, `f // 10 < 9` is `f < 90`, `1 <= i + 3` is `-2 <= i`."""
    while True:
        low = isinstance(test, E.LE)
        bound, side = (test.a, test.b) if low else (test.b, test.a)
        value = const_value(bound)
        if value is None:
            return test
        dtype = bound.dtype
        if isinstance(side, E.FloorDiv) and (divisor := const_value(side.b)) and divisor > 0:
            moved = value * divisor
            side = side.a
        elif isinstance(side, E.Add) and (offset := const_value(side.b)) is not None:
            moved = value - offset
            side = side.a
        else:
            return test
        test = E.LE(IntImm(moved, dtype), side) if low else E.LT(side, IntImm(moved, dtype))


def _conjuncts(expr: PrimExpr) -> list[PrimExpr]:
    if isinstance(expr, E.And):
        return _conjuncts(expr.a) + _conjuncts(expr.b)
    if isinstance(expr, IntImm) and expr.value:
        return []
    return [expr]


def _is_zero(expr: PrimExpr) -> bool:
    return isinstance(expr, IntImm) and expr.value == 0


def _innermost_block(stmt: Stmt) -> SBlock:
    while isinstance(stmt, For):
        stmt = stmt.body
    assert isinstance(stmt, SBlockRealize)
    return stmt.block


def _text(expr: PrimExpr) -> str:
    return script(expr)

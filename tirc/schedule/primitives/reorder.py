"""reorder: permute loops that lie on one line of nesting, each between them the only child
of the one above; loops not named keep their places.

Preconditions: every block below is data-parallel or a reduction whose binding is affine in
the loops from it up to the outermost reordered one (loops further out count as constants);
no loop among those has bounds that use another's variable (`for k in range(i)`), and in the
new order no loop's bounds use a loop now inside it. Under a block with T.init(), each
element's first iteration must stay the one where its reduction iterators start: swapped
loops that could break that (one feeding a data-parallel and a reduction iterator, or none,
against one feeding a reduction) are run when their bounds are constants and they are few,
and refused only if some element then meets another iteration first (TVM does not check).

    for i, j, k in T.grid(128, 128, 16):    →    for k, j, i in T.grid(16, 128, 128):
        B[vi, vj, vk] = ...     reorder(k, i)         B[vi, vj, vk] = ...
"""

from __future__ import annotations

import dataclasses
import itertools
import operator
from collections.abc import Callable

from tirc.analysis.well_formed.accesses import evaluate
from tirc.ir import expr as E
from tirc.ir.buffer import Range
from tirc.ir.expr import IntImm, PrimExpr, Var
from tirc.ir.functor import child_fields, uses_var
from tirc.ir.node import Node
from tirc.ir.stmt import IterType, SBlock, SBlockRealize, Stmt
from tirc.ir.substitute import substitute
from tirc.schedule.errors import ScheduleError
from tirc.schedule.primitives import primitive
from tirc.schedule.properties import is_affine_map
from tirc.schedule.rebind import outer_domains
from tirc.schedule.schedule import Schedule, describe
from tirc.schedule.signature import Kind, Param, Signature
from tirc.schedule.sref import SRef
from tirc.schedule.state import ScheduleState


@primitive(
    Signature(
        "reorder",
        "Reorder",
        inputs=(Param("ordered_loops", Kind.LOOPS, variadic=True),),
        doc="Put the loops, which lie on one line of nesting, in this order.",
    )
)
def reorder(sch: Schedule, ordered_loops: list[SRef]) -> None:
    if not ordered_loops:
        return
    state = sch.state_owning(ordered_loops[0])
    _check_distinct(ordered_loops)
    path = _chain(ordered_loops)
    _check_blocks(state, path)
    listed = {id(sref) for sref in ordered_loops}
    order = iter(ordered_loops)
    placed = [next(order) if id(sref) in listed else sref for sref in path]
    _check_no_outer_dependence(placed)
    _check_init_stays_first(state, path, placed)
    body: Stmt = path[-1].loop.body
    for sref in reversed(placed):
        body = dataclasses.replace(sref.loop, body=body)
    state.replace(path[0], body)


def _check_distinct(loops: list[SRef]) -> None:
    seen: set[int] = set()
    for sref in loops:
        if id(sref) in seen:
            raise ScheduleError(f"{describe(sref)} appears more than once in the new order", sref)
        seen.add(id(sref))


def _chain(loops: list[SRef]) -> list[SRef]:
    """The loops from the outermost to the innermost named one, checked to be one line of
    nesting with nothing but the next loop inside each."""
    scope = loops[0].enclosing_block()
    for sref in loops[1:]:
        if sref.enclosing_block() is not scope:
            raise ScheduleError(
                f"{describe(loops[0])} and {describe(sref)} are not in the same block scope",
                loops[0],
                sref,
            )
    depth = {id(sref): len(sref.ancestors()) for sref in loops}
    bottom = max(loops, key=lambda s: depth[id(s)])
    top = min(loops, key=lambda s: depth[id(s)])
    path = [bottom]
    while path[-1] is not top:
        parent = path[-1].parent
        if parent is None or not parent.is_loop:
            break
        path.append(parent)
    path.reverse()
    on_path = {id(sref) for sref in path}
    for sref in loops:
        if id(sref) not in on_path:
            raise ScheduleError(
                f"{describe(sref)} and {describe(bottom)} are not on one line of nesting: "
                "neither is inside the other",
                sref,
                bottom,
            )
    for outer, inner in zip(path, path[1:], strict=False):
        if outer.loop.body is not inner.stmt:
            raise ScheduleError(
                f"{describe(inner)} is not the only child of {describe(outer)}: "
                "reorder moves loops only across perfectly nested loops",
                outer,
                inner,
            )
    return path


def _check_blocks(state: ScheduleState, path: list[SRef]) -> None:
    """Reordering changes the iteration order of the blocks below: they must be data-parallel
    or reductions over affine bindings, so that every order computes the same. A loop of the
    range whose bounds use another loop of the range (`for k in range(i)`) makes every
    binding below it non-affine in the range's loops."""
    for realize in _realizes_below(path[-1].loop.body):
        block = state.get_sref(realize.block)
        dependent = _dependent_loop(block, path[0])
        if dependent is not None:
            inner, outer = dependent
            raise ScheduleError(
                f"cannot reorder around {describe(block)}: the bounds of {describe(inner)} "
                f"depend on {describe(outer)}, so its binding is not an affine function of "
                "the loops being reordered",
                inner,
                outer,
            )
        for iter_var in realize.block.iter_vars:
            if iter_var.iter_type not in (IterType.SPATIAL, IterType.REDUCE):
                raise ScheduleError(
                    f"cannot reorder around {describe(block)}: its iterator "
                    f"{iter_var.var.name} is neither data-parallel nor a reduction",
                    block,
                )
        if not _is_affine(realize, block, path[0]):
            raise ScheduleError(
                f"cannot reorder around {describe(block)}: its binding is not an affine "
                "function of the loops around it",
                block,
            )


def _dependent_loop(block: SRef, top: SRef) -> tuple[SRef, SRef] | None:
    """(inner, outer): among the loops from `block` up to `top`, one whose min or extent
    uses the variable of another."""
    loops = []
    node = block.parent
    while node is not None and node.is_loop:
        loops.append(node)
        if node is top:
            break
        node = node.parent
    for inner in loops:
        for outer in loops:
            if outer is not inner and uses_var(
                (inner.loop.min, inner.loop.extent), outer.loop.loop_var
            ):
                return inner, outer
    return None


def _check_no_outer_dependence(placed: list[SRef]) -> None:
    """In the new order no loop's bounds may use the variable of a loop now inside it."""
    for index, outer in enumerate(placed):
        for inner in placed[index + 1 :]:
            if uses_var((outer.loop.min, outer.loop.extent), inner.loop.loop_var):
                raise ScheduleError(
                    f"cannot put {describe(outer)} outside {describe(inner)}: its bounds "
                    f"use the variable of {describe(inner)}",
                    outer,
                    inner,
                )


_MOVES_INIT = "feeds both a data-parallel and a reduction iterator"
_REPEATS = "feeds none of the iterators"


def _role(realize: SBlockRealize, loop: SRef) -> str:
    """'S' / 'R' / 'M' (both) / '' for the iterator types `loop` feeds; '' also for a unit
    loop, which neither reorders nor repeats anything."""
    node = loop.loop
    if isinstance(node.extent, IntImm) and node.extent.value == 1:
        return ""
    types = {
        iter_var.iter_type
        for iter_var, value in zip(realize.block.iter_vars, realize.iter_values, strict=True)
        if uses_var(value, node.loop_var)
    }
    spatial, reduce = IterType.SPATIAL in types, IterType.REDUCE in types
    return "M" if spatial and reduce else "S" if spatial else "R" if reduce else "-"


def _check_init_stays_first(state: ScheduleState, path: list[SRef], placed: list[SRef]) -> None:
    """A block with T.init() runs its init in the iteration where its reduction iterators
    start, which must stay the first of the iterations that reduce into one element. Two
    swapped loops break that when both feed a reduction iterator and one of them a
    data-parallel iterator too (a fused `i * 512 + k` split in two: a row's k == 0 no longer
    comes first), or when one feeds a reduction iterator and the other feeds none (the block
    repeats its reduction in each iteration of that loop, init first; inside the reduction,
    the init would run again midway and the other iterations would add more than once)."""
    position = {id(sref): index for index, sref in enumerate(placed)}
    swapped = [
        (outer, inner)
        for index, outer in enumerate(path)
        for inner in path[index + 1 :]
        if position[id(outer)] > position[id(inner)]
    ]
    if not swapped:
        return
    for realize in _realizes_below(path[-1].loop.body):
        if realize.block.init is None:
            continue
        block = state.get_sref(realize.block)
        for outer, inner in swapped:
            roles = {outer: _role(realize, outer), inner: _role(realize, inner)}
            culprit = next(
                (
                    loop
                    for loop, other in ((outer, inner), (inner, outer))
                    if roles[loop] in {"M", "-"} and roles[other] in {"R", "M"}
                ),
                None,
            )
            if culprit is None:
                continue
            # running the loops shows where the init lands; a loop that feeds no iterator
            # repeats the block's updates, which no order of the reduction makes right (TVM
            # 0.27 swaps them and computes another sum: a deliberate difference)
            if roles[culprit] == "M" and _init_runs_first(realize, block, placed):
                continue
            other = inner if culprit is outer else outer
            why = _MOVES_INIT if roles[culprit] == "M" else _REPEATS
            raise ScheduleError(
                f"cannot swap {describe(outer)} and {describe(inner)}: {describe(culprit)} "
                f"{why} of {describe(block)}, and {describe(other)} feeds a reduction "
                "iterator; in the new order the iteration that runs T.init() would no "
                "longer come first among those that reduce into one element",
                culprit,
                block,
            )


_MOST_ITERATIONS = 1 << 16
_COMPARE: dict[type, Callable[[int, int], bool]] = {
    E.EQ: operator.eq,
    E.NE: operator.ne,
    E.LT: operator.lt,
    E.LE: operator.le,
    E.GT: operator.gt,
    E.GE: operator.ge,
}


def _init_runs_first(realize: SBlockRealize, block: SRef, placed: list[SRef]) -> bool:
    """Whether, in the new order, each element's first iteration is still the one whose
    reduction iterators all sit at their minimum (where T.init() runs), found by running
    the loops when their bounds are constants and they are few (a loop that feeds only
    data-parallel iterators, and not the predicate, run once: the element fixes it). The
    role test above is only sufficient: a fused `i * 32 + k` split by 4 and swapped still
    meets k == 0 first in each row (TVM reorders it), while a split by 48 does not."""
    reordered = {id(sref) for sref in placed}
    inner: list[SRef] = []
    node = block.parent
    while node is not None and node.is_loop and id(node) not in reordered:
        inner.append(node)
        node = node.parent
    loops = [*placed, *reversed(inner)]
    ranges = []
    total = 1
    for sref in loops:
        low, extent = sref.loop.min, sref.loop.extent
        if not isinstance(low, IntImm):
            return False
        if _role(realize, sref) == "S" and not uses_var(realize.predicate, sref.loop.loop_var):
            # a loop feeding only data-parallel iterators is fixed by the element: one of its
            # values shows the order of each element's iterations (a symbolic batch `b`)
            extent = IntImm(1, extent.dtype)
        if not isinstance(extent, IntImm):
            return False
        ranges.append(range(low.value, low.value + extent.value))
        total *= extent.value
        if total > _MOST_ITERATIONS:
            return False
    starts: list[int] = []
    for iter_var in realize.block.iter_vars:
        dom = iter_var.dom
        if dom is None or not isinstance(dom.min, IntImm):
            return False
        starts.append(dom.min.value)
    loop_vars = [sref.loop.loop_var for sref in loops]
    seen: set[tuple[int, ...]] = set()
    for point in itertools.product(*ranges):
        witness = dict(zip(loop_vars, point, strict=True))
        runs = _holds(realize.predicate, witness)
        if runs is None:
            return False
        if not runs:
            continue
        values: list[int] = []
        for binding in realize.iter_values:
            value = evaluate(binding, witness)
            if not isinstance(value, int):
                return False
            values.append(value)
        element = tuple(
            value
            for value, iter_var in zip(values, realize.block.iter_vars, strict=True)
            if iter_var.iter_type == IterType.SPATIAL
        )
        if element in seen:
            continue
        seen.add(element)
        if any(
            value != start
            for value, start, iter_var in zip(values, starts, realize.block.iter_vars, strict=True)
            if iter_var.iter_type == IterType.REDUCE
        ):
            return False
    return True


def _holds(predicate: PrimExpr, witness: dict[Var, int]) -> bool | None:
    """The value of a block predicate at `witness`, None where it is not comparisons of
    integer expressions joined by `and`."""
    if isinstance(predicate, IntImm):
        return bool(predicate.value)
    if isinstance(predicate, E.And):
        left, right = _holds(predicate.a, witness), _holds(predicate.b, witness)
        return None if left is None or right is None else left and right
    compare = _COMPARE.get(type(predicate))
    if compare is None or not isinstance(predicate, E.CompareOp):
        return None
    a, b = evaluate(predicate.a, witness), evaluate(predicate.b, witness)
    if not isinstance(a, int) or not isinstance(b, int):
        return None
    return compare(a, b)


def _is_affine(realize: SBlockRealize, block: SRef, top: SRef) -> bool:
    """The bindings, under the predicate, an affine map of the loops from the block up to
    `top`, the outermost reordered one (symbolic loops aside); loops above `top` keep their
    places and count as constants (`vi = v0 * v0 + v1` reorders below v0).

    Stricter than ignoring the predicate: a guard over a fused sum that no binding reads
    whole (`T.where(i * 128 + j < 100)` over `vi = i, vj = j`) ties the loops together,
    and reordering them would change which iterations run; a guard on one loop
    (`i0_0 + i0_1 < 2` with i0_1 a unit loop) does not, and is left out. A binding affine in all the
    loops around it counts too: an outer loop's part of a fused index (`(i0 * 12 + i1) // 8`)
    reads as an offset of the inner iterator in TVM, which our iterator maps do not model."""
    for domains in (outer_domains(block, top), outer_domains(block)):
        if any(
            not (isinstance(domain.min, IntImm) and isinstance(domain.extent, IntImm))
            for domain in domains.values()
        ):
            return True
        # a loop of one iteration ties nothing together: it reads as its start
        units = {
            var: domain.min
            for var, domain in domains.items()
            if isinstance(domain.extent, IntImm) and domain.extent.value == 1
        }
        values = [substitute(value, units) for value in realize.iter_values]
        predicate = _tying(substitute(realize.predicate, units), domains, units)
        if is_affine_map(values, domains, predicate):
            return True
    return False


def _tying(predicate: PrimExpr, domains: dict[Var, Range], units: dict[Var, PrimExpr]) -> PrimExpr:
    """The conjuncts of `predicate` that read two loops or more (of more than one iteration):
    a guard on one loop (`i0_0 < 2`) only narrows that loop, in any order."""
    if isinstance(predicate, E.And):
        left = _tying(predicate.a, domains, units)
        right = _tying(predicate.b, domains, units)
        if isinstance(left, IntImm):
            return right
        if isinstance(right, IntImm):
            return left
        return E.And(left, right)
    loops = [var for var in domains if var not in units and uses_var(predicate, var)]
    return predicate if len(loops) > 1 else IntImm(1, predicate.dtype)


def _realizes_below(stmt: Stmt) -> list[SBlockRealize]:
    """The realizes of the blocks directly below (not inside other blocks), in order."""

    found: list[SBlockRealize] = []
    pending: list[object] = [stmt]
    while pending:
        node = pending.pop()
        if isinstance(node, SBlockRealize):
            found.append(node)
        elif isinstance(node, tuple):
            pending.extend(reversed(node))
        elif isinstance(node, Node) and not isinstance(node, SBlock):
            pending.extend(
                getattr(node, name)
                for name in reversed(child_fields(type(node)))
                if isinstance(getattr(node, name), (Stmt, tuple))
            )
    return found

"""merge: loop nests of equal shape, at the same depth in one scope, become one nest whose
body runs each original body in turn; the given loops and those above them are merged.

    for i in range(8): C(i)         for i_m in range(8):
    for i in range(8): D(i)    →        C(i_m)
                                        D(i_m)
"""

from __future__ import annotations

from typing import Any

from tirc.ir.buffer import Range
from tirc.ir.expr import IntImm, PrimExpr, Var
from tirc.ir.functor import Mutator
from tirc.ir.stmt import For, SBlock, SeqStmt, Stmt, seq
from tirc.schedule.errors import ScheduleError
from tirc.schedule.primitives import primitive
from tirc.schedule.rebind import outer_domains, rebind, serial_loop
from tirc.schedule.schedule import Schedule, describe
from tirc.schedule.signature import Kind, Param, Signature
from tirc.schedule.sref import SRef
from tirc.schedule.state import ScheduleState


@primitive(
    Signature(
        "merge",
        "Merge",
        inputs=(Param("loops", Kind.LOOPS, variadic=True),),
        outputs="one",
        doc="Merge loop nests of the same shape into one nest running their bodies in turn.",
    )
)
def merge(sch: Schedule, loops: list[SRef]) -> SRef:
    if len(loops) < 2:
        raise ScheduleError("merge needs at least two loops", *loops)
    state = sch.state_owning(loops[0])
    chains = [_chain(sref) for sref in loops]
    _check(chains, loops)
    first = chains[0]
    new_vars = [Var(f"{sref.loop.loop_var.name}_m", sref.loop.loop_var.dtype) for sref in first]
    bodies: list[Stmt] = []
    reuse: dict[SBlock, SBlock] = {}
    for chain in chains:
        mapping: dict[Var, PrimExpr] = {
            sref.loop.loop_var: var for sref, var in zip(chain, new_vars, strict=False)
        }
        domains = outer_domains(chain[0])
        for sref, var in zip(first, new_vars, strict=False):
            domains[var] = Range(sref.loop.min, sref.loop.extent)
        body, renewed = rebind(chain[-1].loop.body, mapping, domains)
        bodies.append(body)
        reuse.update(renewed)
    nest: Stmt = seq(*bodies)
    for sref, var in reversed(list(zip(first, new_vars, strict=False))):
        nest = serial_loop(var, sref.loop.extent, nest)
    tops = [chain[0] for chain in chains]
    _replace_tops(state, tops, nest, reuse)
    current = nest
    for _ in range(len(first) - 1):
        assert isinstance(current, For)
        current = current.body
    assert isinstance(current, For)  # the innermost merged loop: the nest has len(first)
    return state.get_sref(current)


def _chain(loop: SRef) -> list[SRef]:
    """The loops from the top of the scope down to `loop`."""
    chain = [loop]
    while chain[-1].parent is not None and chain[-1].parent.is_loop:
        chain.append(chain[-1].parent)
    return list(reversed(chain))


def _check(chains: list[list[SRef]], loops: list[SRef]) -> None:
    if len({len(chain) for chain in chains}) > 1:
        raise ScheduleError("the loops to merge are not at the same nesting depth", *loops)
    scope = loops[0].enclosing_block()
    for sref in loops[1:]:
        if sref.enclosing_block() is not scope:
            raise ScheduleError("the loops to merge are not in the same block scope", *loops)
    if len({id(chain[0]) for chain in chains}) < len(chains):
        raise ScheduleError("the loops to merge share an outer loop: merge whole nests", *loops)
    for level in range(len(chains[0])):
        row = [chain[level] for chain in chains]
        for chain in chains:
            node = chain[level].loop
            if not (isinstance(node.min, IntImm) and node.min.value == 0):
                raise ScheduleError(
                    f"cannot merge {describe(chain[level])}: it does not start at 0", chain[level]
                )
            if level + 1 < len(chain) and node.body is not chain[level + 1].stmt:
                sref = chain[level]
                raise ScheduleError(
                    f"cannot merge: {describe(sref)} has more than the next loop inside it", sref
                )
        extents = [e for e in (sref.loop.extent for sref in row) if isinstance(e, IntImm)]
        if len(extents) < len(row):
            raise ScheduleError("cannot merge loops with symbolic extents", *row)
        if len({e.value for e in extents}) > 1:
            listed = ", ".join(str(e.value) for e in extents)
            raise ScheduleError(f"the loops to merge have different extents ({listed})", *row)


class _Splice(Mutator):
    """Puts the merged nest in place of the first top loop and drops the other tops; stays
    out of other loops and blocks."""

    def __init__(self, first: Stmt, others: set[int], nest: Stmt):
        self.first, self.others, self.nest = first, others, nest

    def visit(self, node: Any) -> Any:
        if node is self.first:
            return self.nest
        if isinstance(node, (For, SBlock)):
            return node
        if isinstance(node, SeqStmt):
            kept: list[Stmt] = [self.visit(s) for s in node.stmts if id(s) not in self.others]
            return seq(*kept)
        return super().visit(node)


def _replace_tops(
    state: ScheduleState, tops: list[SRef], nest: Stmt, reuse: dict[SBlock, SBlock]
) -> None:
    """The merged nest takes the first top loop's place; the other nests are removed."""
    parent = tops[0].parent
    assert parent is not None and parent.stmt is not None and tops[0].stmt is not None
    others = {id(sref.stmt) for sref in tops[1:]}
    new_parent = _Splice(tops[0].stmt, others, nest).generic_visit(parent.stmt)
    state.replace(parent, new_parent, reuse)

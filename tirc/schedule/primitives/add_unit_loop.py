"""add_unit_loop: a loop of extent 1 directly above a block or a loop (a place for later
primitives, such as bind, to act on).

    with T.sblock("C"): ...     →     for u in range(1):
                                          with T.sblock("C"): ...
"""

from __future__ import annotations

from tirc.ir.expr import IntImm, Var
from tirc.ir.functor import Mutator
from tirc.ir.stmt import For, SBlock, SBlockRealize
from tirc.schedule.errors import ScheduleError
from tirc.schedule.primitives import primitive
from tirc.schedule.rebind import serial_loop
from tirc.schedule.schedule import Schedule
from tirc.schedule.signature import Kind, Param, Signature
from tirc.schedule.sref import SRef


@primitive(
    Signature(
        "add_unit_loop",
        "AddUnitLoop",
        inputs=(Param("block_or_loop", Kind.BLOCK_OR_LOOP),),
        outputs="one",
        doc="Put a loop of extent 1 directly above a block or a loop.",
    )
)
def add_unit_loop(sch: Schedule, block_or_loop: SRef) -> SRef:
    state = sch.state_owning(block_or_loop)
    parent = block_or_loop.parent
    if parent is None:
        raise ScheduleError("cannot add a loop above the root block", block_or_loop)
    unit = Var("u")
    if block_or_loop.is_loop:
        new_loop = serial_loop(unit, IntImm(1, unit.dtype), block_or_loop.loop)
        state.replace(block_or_loop, new_loop)
        return state.get_sref(new_loop)
    wrapper = _WrapRealize(block_or_loop.block, unit)
    assert parent.stmt is not None  # the parent of a live sref is live
    new_parent = wrapper.generic_visit(parent.stmt)
    assert wrapper.loop is not None, "the block's realize is not in its parent"
    state.replace(parent, new_parent)
    return state.get_sref(wrapper.loop)


class _WrapRealize(Mutator):
    """Wraps the realize of `block` in a unit loop; stays out of other loops and blocks."""

    def __init__(self, block: SBlock, unit: Var):
        self.block, self.unit = block, unit
        self.loop: For | None = None

    def visit(self, node: object) -> object:
        if isinstance(node, SBlockRealize):
            if node.block is not self.block:
                return node
            self.loop = serial_loop(self.unit, IntImm(1, self.unit.dtype), node)
            return self.loop
        if isinstance(node, (For, SBlock)):
            return node
        return super().visit(node)

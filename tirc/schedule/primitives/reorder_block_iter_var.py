"""reorder_block_iter_var: permute a block's iteration variables (and their bindings);
`new_order[k]` is the old position of the variable that goes to position k.

    vi, vj, vk = T.axis.remap("SSS", [i, j, k])   →   vk, vi, vj = T.axis.remap("SSS", [k, i, j])
                      reorder_block_iter_var(B, [2, 0, 1])
"""

from __future__ import annotations

import dataclasses

from tirc.ir.functor import Mutator
from tirc.ir.stmt import For, SBlock, SBlockRealize
from tirc.schedule.errors import ScheduleError
from tirc.schedule.primitives import primitive
from tirc.schedule.rebind import const_value
from tirc.schedule.schedule import Schedule, describe
from tirc.schedule.signature import Kind, Param, Signature
from tirc.schedule.sref import SRef


@primitive(
    Signature(
        "reorder_block_iter_var",
        "ReorderBlockIterVar",
        inputs=(Param("block", Kind.BLOCK), Param("new_order", Kind.INTS)),
        doc="Permute the block's iteration variables: new_order[k] is the old position.",
    )
)
def reorder_block_iter_var(sch: Schedule, block: SRef, new_order: list[int]) -> None:
    state = sch.state_owning(block)
    node = block.block
    order = [const_value(item) for item in new_order]
    positions = [position for position in order if position is not None]
    count = len(node.iter_vars)
    if len(positions) != len(order) or sorted(positions) != list(range(count)):
        listed = ", ".join(str(item) for item in order)
        raise ScheduleError(
            f"the order ({listed}) is not a permutation of 0..{count - 1}, the positions of "
            f"the {count} iteration variables of {describe(block)}",
            block,
        )
    parent = block.parent
    if parent is None:
        raise ScheduleError("the root block has no iteration variables to reorder", block)
    new_block = dataclasses.replace(
        node,
        iter_vars=tuple(node.iter_vars[index] for index in positions),
    )
    rewriter = _Repermute(node, new_block, positions)
    new_parent = rewriter.generic_visit(parent.node)
    state.replace(parent, new_parent, {node: new_block})


class _Repermute(Mutator):
    """Puts the permuted block in its realize, with the bindings permuted alike."""

    def __init__(self, old: SBlock, new: SBlock, order: list[int]):
        self.old, self.new, self.order = old, new, order

    def visit(self, node: object) -> object:
        if isinstance(node, SBlockRealize):
            if node.block is not self.old:
                return node
            values = tuple(node.iter_values[index] for index in self.order)
            return dataclasses.replace(node, iter_values=values, block=self.new)
        if isinstance(node, (For, SBlock)):
            return node
        return super().visit(node)

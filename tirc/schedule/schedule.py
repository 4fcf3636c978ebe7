"""The Schedule: an IRModule under rewriting, one ScheduleState per function touched.

Primitives receive it; handles (SRefs) belong to the state of one function. The module
property assembles the current functions.
"""

from __future__ import annotations

from typing import Any

from tirc.ir.function import IRModule
from tirc.ir.stmt import For, SBlock
from tirc.schedule.errors import ScheduleError
from tirc.schedule.sref import SRef
from tirc.schedule.state import ScheduleState


class Schedule:
    def __init__(self, module: IRModule, func_name: str | None = None):
        self.base = module
        self.default_func = func_name or _default_function(module)
        self.states: dict[str, ScheduleState] = {}
        # what steps may look up beyond their arguments: "intrinsics", the user's tensor
        # intrinsics by name (tensorize)
        self.context: dict[str, Any] = {}

    @property
    def module(self) -> IRModule:
        module = self.base
        for name, state in self.states.items():
            module = module.with_function(name, state.func)
        return module

    def state_of(self, func_name: str | None = None) -> ScheduleState:
        name = func_name or self.default_func
        state = self.states.get(name)
        if state is None:
            if name not in self.base:
                raise ScheduleError(f"the module has no function named '{name}'")
            try:
                state = ScheduleState(self.base, name)
            except ValueError as error:
                raise ScheduleError(str(error)) from None
            self.states[name] = state
        return state

    @property
    def state(self) -> ScheduleState:
        return self.state_of()

    def state_owning(self, sref: SRef) -> ScheduleState:
        for state in self.states.values():
            if state.stmt2ref.get(id(sref.stmt)) is sref:
                return state
        raise ScheduleError("the handle does not belong to this schedule (was it removed?)")

    # -- queries shared by primitives --------------------------------------------------------

    def blocks_named(self, name: str, func_name: str | None = None) -> list[SRef]:
        state = self.state_of(func_name)
        return [
            sref
            for sref in state.stmt2ref.values()
            if isinstance(sref.stmt, SBlock) and sref.stmt.name == name
        ]

    @staticmethod
    def loops_above(block: SRef) -> list[SRef]:
        """Loops between `block` and its enclosing block, outermost first."""
        loops = []
        node = block.parent
        while node is not None and node.is_loop:
            loops.append(node)
            node = node.parent
        return list(reversed(loops))


def _default_function(module: IRModule) -> str:
    names = module.names()
    if "main" in names or not names:
        return "main"
    return names[0]


def describe(sref: SRef) -> str:
    """`block "C"` / `loop i_0`, for messages."""
    if isinstance(sref.stmt, SBlock):
        return f'block "{sref.stmt.name}"'
    if isinstance(sref.stmt, For):
        return f"loop {sref.stmt.loop_var.name}"
    return "a removed loop or block"

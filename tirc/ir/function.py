"""PrimFunc and IRModule: the units the parser reads and every later stage transforms."""

from __future__ import annotations

from dataclasses import dataclass

from tirc.ir.buffer import Buffer
from tirc.ir.dtype import DataType
from tirc.ir.expr import Var
from tirc.ir.node import IRError, Node
from tirc.ir.stmt import EMPTY_ATTRS, Attrs, Stmt


@dataclass(frozen=True, slots=True, eq=False)
class PrimFunc(Node):
    """A function over scalars and buffers.

    `params` are Vars (handles for buffer parameters, scalars otherwise); `buffer_map` gives the
    Buffer each handle parameter is viewed as. `is_s_tir` marks the schedulable dialect
    (`@T.prim_func(s_tir=True)`): its body is a root SBlockRealize.
    """

    params: tuple[Var, ...]
    buffer_map: tuple[tuple[Var, Buffer], ...]
    body: Stmt
    ret_type: DataType | None = None
    attrs: Attrs = EMPTY_ATTRS
    is_s_tir: bool = False
    is_private: bool = False

    def __post_init__(self) -> None:
        params = set(self.params)
        for var, buffer in self.buffer_map:
            if var not in params:
                raise IRError(
                    f"buffer {buffer.name} is bound to a variable that is not a parameter"
                )

    def buffer_of(self, param: Var) -> Buffer | None:
        for var, buffer in self.buffer_map:
            if var is param:
                return buffer
        return None


@dataclass(frozen=True, slots=True, eq=False)
class IRModule(Node):
    """Named functions, in the order they appear; `is_bare` marks a file that held one bare
    `@T.prim_func` rather than an `@I.ir_module` class, so that printing keeps its shape."""

    functions: tuple[tuple[str, PrimFunc], ...]
    attrs: Attrs = EMPTY_ATTRS
    is_bare: bool = False

    def __post_init__(self) -> None:
        names = [name for name, _ in self.functions]
        if len(set(names)) != len(names):
            raise IRError("two functions share a name")

    def __getitem__(self, name: str) -> PrimFunc:
        for key, func in self.functions:
            if key == name:
                return func
        raise KeyError(name)

    def __contains__(self, name: str) -> bool:
        return any(key == name for key, _ in self.functions)

    def names(self) -> list[str]:
        return [name for name, _ in self.functions]

    def with_function(self, name: str, func: PrimFunc) -> IRModule:
        """This module with `name` replaced (or appended) by `func`."""
        functions = []
        replaced = False
        for key, old in self.functions:
            if key == name:
                functions.append((key, func))
                replaced = True
            else:
                functions.append((key, old))
        if not replaced:
            functions.append((name, func))
        return IRModule(tuple(functions), self.attrs, self.is_bare)

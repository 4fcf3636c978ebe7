"""The function a run calls, made an entry point of its module."""

from __future__ import annotations

import dataclasses

from tirc.analysis.stored_types import refuse_stored_only
from tirc.ir.function import IRModule, PrimFunc


def entry_point(module: IRModule, name: str, function: PrimFunc) -> tuple[IRModule, PrimFunc]:
    """The module with the function to run made public: a private function (TVM prints
    `@T.prim_func(private=True)`) has no symbol a compiled module exports, and running it
    is what makes it an entry point. A function holding values of a type tirc only stores
    (int4, float4_e2m1fn, ...) is refused here, located, before arguments are made for it."""
    refuse_stored_only(function)
    if not function.is_private:
        return module, function
    public = dataclasses.replace(function, is_private=False)
    return module.with_function(name, public), public

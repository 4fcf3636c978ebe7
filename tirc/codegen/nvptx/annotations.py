"""`nvvm.annotations`: kernel facts that llvmlite cannot write as LLVM attributes (a grid
constant parameter, the most threads a block), which LLVM reads into those attributes.

    annotate(function, "maxntidx", 384)  ->  !{ptr @k, !"maxntidx", i32 384}
"""

from __future__ import annotations

import llvmlite.ir as ir

from tirc.codegen.nvptx import types


def annotate(function: ir.Function, key: str, value: int | list[int]) -> None:
    """One annotation of `function`: `key` with an i32, or with a list of them."""
    module = function.module
    if isinstance(value, list):
        operand: ir.Value = module.add_metadata([ir.Constant(types.I32, item) for item in value])
    else:
        operand = ir.Constant(types.I32, value)
    node = module.add_metadata([function, ir.MetaDataString(module, key), operand])
    module.add_named_metadata("nvvm.annotations", node)

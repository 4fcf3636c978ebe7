"""Casts between scalar dtypes to Python expressions (their meaning: semantics.cast).

A cast to a float skips its rounding where semantics.cast.is_exact says it changes nothing.
"""

from __future__ import annotations

from tirc.interp.semantics.cast import Cast, cast_kind, is_exact
from tirc.interp.threads.compilers import Exprs
from tirc.interp.threads.context import Code
from tirc.ir.dtype import DataType
from tirc.ir.expr import PrimExpr
from tirc.ir.integer import int_range


def compile_cast(
    compiler: Exprs, value: Code, source: DataType, target: DataType, node: PrimExpr
) -> Code:
    if source.is_handle or target.is_handle:
        return value
    kind = cast_kind(source, target)
    if kind is Cast.SAME:
        return value
    if kind is Cast.TO_BOOL:
        zero = "0.0" if source.is_float else "0"
        return Code(f"({value.text} != {zero})", 0, 1)
    if kind is Cast.WRAP:
        if source.is_bool:
            return Code(f"int({value.text})", 0, 1)
        return compiler.fit_int(value.text, (value.low, value.high), target)
    if kind is Cast.TRUNCATE:
        low, high = int_range(target)
        site = compiler.ctx.site(node, "cast")
        return Code(f"_f2i({value.text}, {low}, {high}, {str(target)!r}, {site})", low, high)
    text = value.text if source.is_float else f"float({value.text})"
    if is_exact(source, target, (value.low, value.high)):
        return Code(text)
    return compiler.round_float(text, target)

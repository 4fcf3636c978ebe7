"""Casts between scalar dtypes.

int -> int wraps modulo 2**bits; float -> int truncates toward zero, and a value outside the
target's range (or NaN, inf) is an error, as it is undefined in C and LLVM; int -> float and
float -> float round to nearest even; anything -> bool is `!= 0`.
"""

from __future__ import annotations

from tirc.interp.semantics import interval
from tirc.interp.threads.compilers import Exprs
from tirc.interp.threads.context import Code
from tirc.ir.dtype import DataType
from tirc.ir.expr import PrimExpr
from tirc.ir.integer import int_range

# float kind -> largest integer magnitude below which every integer is exact in it
_EXACT_INTEGERS = {
    "float64": 1 << 53,
    "float32": 1 << 24,
    "float16": 1 << 11,
    "bfloat16": 1 << 8,
    "float8_e4m3fn": 1 << 4,
    "float8_e5m2": 1 << 3,
}

# (from, to): float conversions that never change a value
_EXACT_WIDENINGS = {
    ("float16", "float32"),
    ("float16", "float64"),
    ("bfloat16", "float32"),
    ("bfloat16", "float64"),
    ("float32", "float64"),
    *(
        (f8, wide)
        for f8 in ("float8_e4m3fn", "float8_e5m2")
        for wide in ("float16", "bfloat16", "float32", "float64")
    ),
}


def compile_cast(
    compiler: Exprs, value: Code, source: DataType, target: DataType, node: PrimExpr
) -> Code:
    if source == target or source.is_handle or target.is_handle:
        return value
    if target.is_bool:
        zero = "0.0" if source.is_float else "0"
        return Code(f"({value.text} != {zero})", 0, 1)
    if target.is_integer:
        return _to_int(compiler, value, source, target, node)
    return _to_float(compiler, value, source, target)


def _to_int(
    compiler: Exprs, value: Code, source: DataType, target: DataType, node: PrimExpr
) -> Code:
    if source.is_bool:
        return Code(f"int({value.text})", 0, 1)
    if source.is_integer:
        return compiler.fit_int(value.text, (value.low, value.high), target)
    low, high = int_range(target)
    site = compiler.ctx.site(node, "cast")
    return Code(f"_f2i({value.text}, {low}, {high}, {str(target)!r}, {site})", low, high)


def _to_float(compiler: Exprs, value: Code, source: DataType, target: DataType) -> Code:
    name = str(target)
    if source.is_bool or source.is_integer:
        limit = _EXACT_INTEGERS[name]
        text = f"float({value.text})"
        if interval.within((value.low, value.high), -limit, limit):
            return Code(text)
        return compiler.round_float(text, target)
    if (str(source), name) in _EXACT_WIDENINGS:
        return Code(value.text)
    return compiler.round_float(value.text, target)

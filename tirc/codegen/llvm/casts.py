"""Conversions between dtypes: one rule per (source class, target class), where a class is
bool, signed, unsigned or float. Float-to-int conversion truncates toward zero, as C does."""

from __future__ import annotations

from collections.abc import Callable

from llvmlite import ir

from tirc.codegen.llvm import narrow_float
from tirc.codegen.llvm import types as T
from tirc.diagnostics import DiagnosticError
from tirc.ir import dtype as dt
from tirc.ir.dtype import DataType

CastRule = Callable[[ir.IRBuilder, ir.Value, DataType, DataType, ir.Type], ir.Value]


def _class(dtype: DataType) -> str:
    if dtype.is_bool:
        return "bool"
    if dtype.is_int:
        return "int"
    if dtype.is_uint:
        return "uint"
    if dtype.kind == "float":
        return "float"
    if dtype.is_handle:
        return "handle"
    return str(dtype.element)


def _resize_int(b: ir.IRBuilder, v: ir.Value, src: DataType, dst: DataType, t: ir.Type) -> ir.Value:
    if dst.bits < src.bits:
        return b.trunc(v, t)
    if dst.bits > src.bits:
        return b.sext(v, t) if src.is_int else b.zext(v, t)
    return v


def _to_bool(b: ir.IRBuilder, v: ir.Value, src: DataType, dst: DataType, t: ir.Type) -> ir.Value:
    zero = ir.Constant(v.type, None)
    if src.kind == "float":
        return b.fcmp_unordered("!=", v, zero)
    return b.icmp_unsigned("!=", v, zero)


def _from_bool(b: ir.IRBuilder, v: ir.Value, src: DataType, dst: DataType, t: ir.Type) -> ir.Value:
    return b.uitofp(v, t) if dst.kind == "float" else b.zext(v, t)


def _resize_float(
    b: ir.IRBuilder, v: ir.Value, src: DataType, dst: DataType, t: ir.Type
) -> ir.Value:
    if dst.bits < src.bits:
        return b.fptrunc(v, t)
    if dst.bits > src.bits:
        return b.fpext(v, t)
    return v


_RULES: dict[tuple[str, str], CastRule] = {
    ("int", "int"): _resize_int,
    ("int", "uint"): _resize_int,
    ("uint", "int"): _resize_int,
    ("uint", "uint"): _resize_int,
    ("int", "float"): lambda b, v, s, d, t: b.sitofp(v, t),
    ("uint", "float"): lambda b, v, s, d, t: b.uitofp(v, t),
    ("float", "int"): lambda b, v, s, d, t: b.fptosi(v, t),
    ("float", "uint"): lambda b, v, s, d, t: b.fptoui(v, t),
    ("float", "float"): _resize_float,
    ("int", "bool"): _to_bool,
    ("uint", "bool"): _to_bool,
    ("float", "bool"): _to_bool,
    ("bool", "int"): _from_bool,
    ("bool", "uint"): _from_bool,
    ("bool", "float"): _from_bool,
    ("bool", "bool"): lambda b, v, s, d, t: v,
    ("handle", "handle"): lambda b, v, s, d, t: v,
    ("handle", "int"): lambda b, v, s, d, t: b.ptrtoint(v, t),
    ("handle", "uint"): lambda b, v, s, d, t: b.ptrtoint(v, t),
    ("int", "handle"): lambda b, v, s, d, t: b.inttoptr(v, t),
    ("uint", "handle"): lambda b, v, s, d, t: b.inttoptr(v, t),
}


def emit_cast(
    builder: ir.IRBuilder, value: ir.Value, source: DataType, target: DataType
) -> ir.Value:
    if source == target:
        return value
    if narrow_float.is_narrow_float(source.element):  # its register holds the float32 value
        source = dt.FLOAT32.with_lanes(source.lanes)
    if narrow_float.is_narrow_float(target.element):
        wide = dt.FLOAT32.with_lanes(target.lanes)
        rounded = emit_cast(builder, value, source, wide)
        return narrow_float.round_value(builder, rounded, target.element)
    if source == target:
        return value
    rule = _RULES.get((_class(source), _class(target)))
    if rule is None:
        raise DiagnosticError.at(
            None, f"the CPU backend does not support casts from {source} to {target} yet"
        )
    return rule(builder, value, source.element, target.element, T.value_type(target))


def reinterpret(
    builder: ir.IRBuilder, value: ir.Value, source: DataType, target: DataType
) -> ir.Value:
    """The same bits read as `target` (`T.reinterpret`)."""
    if narrow_float.is_narrow_float(source.element):
        value = narrow_float.to_bits(builder, value, source.element)
    if narrow_float.is_narrow_float(target.element):
        bits = builder.bitcast(value, T.memory_type(target))
        return narrow_float.widen(builder, bits, target.element)
    return builder.bitcast(value, T.value_type(target))

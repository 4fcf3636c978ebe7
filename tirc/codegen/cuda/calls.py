"""Intrinsic calls as CUDA C: math functions, bit operations, builtins, extern calls.

Math uses CUDA's accurate functions (`expf`, not `__expf`): tirc's results must match the
interpreter. 16- and 8-bit floats compute in float and round back.
"""

from __future__ import annotations

from collections.abc import Callable

from tirc.codegen.cuda import types
from tirc.codegen.cuda.cluster import HANDLERS as CLUSTER_HANDLERS
from tirc.codegen.cuda.dp4a import print_dp4a
from tirc.codegen.cuda.expr import (
    BIT_AND,
    BIT_OR,
    BIT_XOR,
    CONDITIONAL,
    LOGIC_OR,
    PRIMARY,
    RULES,
    SHIFT,
    UNARY,
    Code,
    ExprPrinter,
    is_narrow_float,
)
from tirc.codegen.cuda.named_barrier import HANDLERS as NAMED_BARRIER_HANDLERS
from tirc.codegen.cuda.ptx import HANDLERS as PTX_HANDLERS
from tirc.codegen.cuda.tma import HANDLERS as TMA_HANDLERS
from tirc.codegen.cuda.wgmma_ptx import HANDLERS as WGMMA_HANDLERS
from tirc.codegen.cuda.wmma import print_wmma_call
from tirc.diagnostics import DiagnosticError
from tirc.ir import expr as E
from tirc.ir.dtype import DataType

CallHandler = Callable[[ExprPrinter, E.Call, "int | None"], Code]

# op -> (float function, double function)
_MATH: dict[str, tuple[str, str]] = {
    name: (f"{name}f", name)
    for name in (
        "exp exp2 exp10 log log2 log10 log1p expm1 sqrt rsqrt sin cos tan sinh cosh tanh asin "
        "acos atan asinh acosh atanh fabs floor ceil trunc erf atan2 pow fmod hypot copysign "
        "nextafter nearbyint"
    ).split()
}
_MATH["round"] = ("rintf", "rint")  # TVM's round is half to even, as the interpreter's
_MATH["ldexp"] = ("ldexpf", "ldexp")


def _math(p: ExprPrinter, call: E.Call, lane: int | None) -> Code:
    dtype = call.dtype.element
    single, double = _MATH[call.op]
    name = double if dtype.bits == 64 else single
    args = [_float_arg(p, _expr(arg, call), lane) for arg in call.args]
    if call.op == "ldexp":
        args[1] = f"(int){p.operand(call.args[1], lane, UNARY)}"
    text = f"{name}({', '.join(args)})"
    return _narrowed(text, dtype)


def _expr(value: object, call: E.Call) -> E.PrimExpr:
    """A call argument that must be an expression; a located error otherwise."""
    if not isinstance(value, E.PrimExpr):
        raise DiagnosticError.at(
            call.span, f"CUDA codegen: T.{call.op} takes expressions, not {type(value).__name__}"
        )
    return value


def _float_arg(p: ExprPrinter, arg: E.PrimExpr, lane: int | None) -> str:
    dtype = arg.dtype.element
    if is_narrow_float(dtype):
        return f"(float){p.operand(arg, lane, UNARY)}"
    return p(arg, lane)


def _narrowed(text: str, dtype: DataType) -> Code:
    if is_narrow_float(dtype):
        return f"({types.scalar_type(dtype)}){text}", UNARY
    return text, PRIMARY


def _sigmoid(p: ExprPrinter, call: E.Call, lane: int | None) -> Code:
    dtype = call.dtype.element
    x = _float_arg(p, _expr(call.args[0], call), lane)
    if dtype.bits == 64:
        return f"1.0 / (1.0 + exp(-{x}))", 13
    text = f"(1.0f / (1.0f + expf(-{x})))"
    return _narrowed(text, dtype)


def _classify(p: ExprPrinter, call: E.Call, lane: int | None) -> Code:
    arg = _expr(call.args[0], call)
    dtype = arg.dtype.element
    if dtype.is_integer:
        return ("false" if call.op != "isfinite" else "true"), PRIMARY
    return f"{call.op}({_float_arg(p, arg, lane)})", PRIMARY


def _bits(p: ExprPrinter, call: E.Call, lane: int | None) -> Code:
    dtype = call.dtype.element
    wide = dtype.bits == 64
    name = {"popcount": "__popcll" if wide else "__popc", "clz": "__clzll" if wide else "__clz"}
    cast = "(unsigned long long)" if wide else "(unsigned int)"
    text = f"{name[call.op]}({cast}{p.operand(call.args[0], lane, UNARY)})"
    return f"({types.scalar_type(dtype)}){text}", UNARY


_INFIX = {
    "shift_left": ("<<", SHIFT),
    "shift_right": (">>", SHIFT),
    "bitwise_and": ("&", BIT_AND),
    "bitwise_or": ("|", BIT_OR),
    "bitwise_xor": ("^", BIT_XOR),
}


def _infix(p: ExprPrinter, call: E.Call, lane: int | None) -> Code:
    symbol, precedence = _INFIX[call.op]
    left = p.operand(call.args[0], lane, precedence)
    right = p.operand(call.args[1], lane, precedence + 1)
    return f"{left} {symbol} {right}", precedence


def _bitwise_not(p: ExprPrinter, call: E.Call, lane: int | None) -> Code:
    return f"~{p.operand(call.args[0], lane, UNARY)}", UNARY


def _if_then_else(p: ExprPrinter, call: E.Call, lane: int | None) -> Code:
    condition = p.operand(call.args[0], lane, LOGIC_OR)
    then = p.operand(call.args[1], lane, LOGIC_OR)
    otherwise = p.operand(call.args[2], lane, CONDITIONAL)
    return f"{condition} ? {then} : {otherwise}", CONDITIONAL


def _first(p: ExprPrinter, call: E.Call, lane: int | None) -> Code:
    return p.code(call.args[0], lane)


# (source bits, target kind) -> CUDA's bit-cast function
_REINTERPRET = {
    ("int32", "float32"): "__int_as_float",
    ("uint32", "float32"): "__uint_as_float",
    ("float32", "int32"): "__float_as_int",
    ("float32", "uint32"): "__float_as_uint",
    ("int64", "float64"): "__longlong_as_double",
    ("uint64", "float64"): "__longlong_as_double",
    ("float64", "int64"): "__double_as_longlong",
    ("int16", "float16"): "__short_as_half",
    ("uint16", "float16"): "__ushort_as_half",
    ("float16", "int16"): "__half_as_short",
    ("float16", "uint16"): "__half_as_ushort",
    ("int16", "bfloat16"): "__short_as_bfloat16",
    ("uint16", "bfloat16"): "__ushort_as_bfloat16",
    ("bfloat16", "int16"): "__bfloat16_as_short",
    ("bfloat16", "uint16"): "__bfloat16_as_ushort",
}


def _reinterpret(p: ExprPrinter, call: E.Call, lane: int | None) -> Code:
    value = _expr(call.args[-1], call)
    source = str(value.dtype.element)
    target = str(call.dtype.element)
    if source == target:
        return p.code(value, lane)
    function = _REINTERPRET.get((source, target))
    if function is not None:
        return f"{function}({p(value, lane)})", PRIMARY
    if call.dtype.is_integer and value.dtype.is_integer:
        return f"({types.scalar_type(call.dtype)}){p.operand(value, lane, UNARY)}", UNARY
    raise DiagnosticError.at(call.span, f"CUDA codegen: cannot reinterpret {source} as {target}")


def _extern(p: ExprPrinter, call: E.Call, lane: int | None) -> Code:
    name = call.args[0]
    if not isinstance(name, E.StringImm):
        raise DiagnosticError.at(call.span, f"{call.op}: the function name must be a string")
    if name.value == "__dp4a":
        return print_dp4a(p, call, lane)
    args = ", ".join(p(arg, lane) for arg in call.args[1:])
    return f"{name.value}({args})", PRIMARY


def _access_ptr(p: ExprPrinter, call: E.Call, lane: int | None) -> Code:
    annotation, data, offset = call.args[0], call.args[1], call.args[2]
    element = _expr(annotation, call).dtype
    pointer = p.names(data) if isinstance(data, E.Var) else p(data)
    declared = p.pointer_types.get(data) if isinstance(data, E.Var) else None
    if declared != element:
        pointer = f"(({types.c_type(element)}*){pointer})"
    if E.is_const_int(offset, 0):
        return pointer, PRIMARY
    return f"{pointer} + {p.operand(offset, None, 12)}", 12


def _address_of(p: ExprPrinter, call: E.Call, lane: int | None) -> Code:
    return f"&{p.operand(call.args[0], lane, UNARY)}", UNARY


def _storage_sync(p: ExprPrinter, call: E.Call, lane: int | None) -> Code:
    scope = call.args[0]
    kind = scope.value if isinstance(scope, E.StringImm) else "shared"
    if kind in ("shared", "shared.dyn"):
        return "__syncthreads()", PRIMARY
    if kind == "warp":
        return "__syncwarp()", PRIMARY
    raise DiagnosticError.at(call.span, f"CUDA codegen: cannot synchronize '{kind}' memory")


def _warp_shuffle(p: ExprPrinter, call: E.Call, lane: int | None) -> Code:
    # tvm_warp_shuffle[_up|_down](mask, value, lane-or-delta, width, warp size)
    mask, value, offset, width = call.args[0], call.args[1], call.args[2], call.args[3]
    name = {
        "tvm_warp_shuffle": "__shfl_sync",
        "tvm_warp_shuffle_up": "__shfl_up_sync",
        "tvm_warp_shuffle_down": "__shfl_down_sync",
    }[call.op]
    return f"{name}({p(mask)}, {p(value, lane)}, {p(offset)}, {p(width)})", PRIMARY


def _active_mask(p: ExprPrinter, call: E.Call, lane: int | None) -> Code:
    return "__activemask()", PRIMARY


def _q_multiply_shift(p: ExprPrinter, call: E.Call, lane: int | None) -> Code:
    x, y, q, s = (p(arg, lane) for arg in call.args)
    return f"tirc_q_multiply_shift({x}, {y}, (int){q}, (int){s})", PRIMARY


def _q_multiply_shift_per_axis(p: ExprPrinter, call: E.Call, lane: int | None) -> Code:
    x, y, left, right, q, left_required, right_required = (p(arg, lane) for arg in call.args)
    return (
        f"tirc_q_multiply_shift_per_axis({x}, {y}, (int){left}, (int){right}, (int){q}, "
        f"(bool){left_required}, (bool){right_required})",
        PRIMARY,
    )


def _wmma(p: ExprPrinter, call: E.Call, lane: int | None) -> Code:
    return print_wmma_call(p, call)


_HANDLERS: dict[str, CallHandler] = {
    **{name: _math for name in _MATH},
    **{name: _infix for name in _INFIX},
    "sigmoid": _sigmoid,
    "isnan": _classify,
    "isinf": _classify,
    "isfinite": _classify,
    "popcount": _bits,
    "clz": _bits,
    "bitwise_not": _bitwise_not,
    "if_then_else": _if_then_else,
    "likely": _first,
    "assume": lambda p, call, lane: ("true", PRIMARY),
    "reinterpret": _reinterpret,
    "call_extern": _extern,
    "call_pure_extern": _extern,
    "tvm_access_ptr": _access_ptr,
    "address_of": _address_of,
    "tvm_storage_sync": _storage_sync,
    "tvm_warp_shuffle": _warp_shuffle,
    "tvm_warp_shuffle_up": _warp_shuffle,
    "tvm_warp_shuffle_down": _warp_shuffle,
    "tvm_warp_activemask": _active_mask,
    "q_multiply_shift": _q_multiply_shift,
    "q_multiply_shift_per_axis": _q_multiply_shift_per_axis,
    "tvm_fill_fragment": _wmma,
    "tvm_load_matrix_sync": _wmma,
    "tvm_store_matrix_sync": _wmma,
    "tvm_mma_sync": _wmma,
    **NAMED_BARRIER_HANDLERS,
}


@RULES.register(E.Call)
def print_call(p: ExprPrinter, call: E.Call, lane: int | None) -> Code:
    handler = _HANDLERS.get(call.op)
    if handler is None:
        handler = PTX_HANDLERS.get(call.op)
    if handler is None:
        handler = WGMMA_HANDLERS.get(call.op)
    if handler is None:
        handler = TMA_HANDLERS.get(call.op)
    if handler is None:
        handler = CLUSTER_HANDLERS.get(call.op)
    if handler is None:
        raise DiagnosticError.at(call.span, f"CUDA codegen: no CUDA spelling for T.{call.op}")
    return handler(p, call, lane)

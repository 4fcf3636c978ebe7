"""Intrinsic calls as LLVM IR for NVPTX: PTX instructions where one exists, libdevice otherwise.

Vector math runs lane by lane through the scalar function.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import llvmlite.ir as ir

from tirc.codegen.cuda.dp4a import dp4a_operands
from tirc.codegen.llvm.fixed_point import emit_q_multiply_shift, emit_q_multiply_shift_per_axis
from tirc.codegen.nvptx import types
from tirc.codegen.nvptx.cluster_ptx import LOWERINGS as CLUSTER_LOWERINGS
from tirc.codegen.nvptx.named_barrier import LOWERINGS as NAMED_BARRIER_LOWERINGS
from tirc.codegen.nvptx.ptx import LOWERINGS as PTX_LOWERINGS
from tirc.codegen.nvptx.tma_ptx import LOWERINGS as TMA_LOWERINGS
from tirc.codegen.nvptx.values import _INTRINSIC_MATH, _LIBDEVICE_MATH, RULES, ValueBuilder
from tirc.codegen.nvptx.wgmma_ptx import LOWERINGS as WGMMA_LOWERINGS
from tirc.codegen.nvptx.wmma import LOWERINGS as WMMA_LOWERINGS
from tirc.diagnostics import DiagnosticError
from tirc.ir import expr as E
from tirc.ir.dtype import DataType

CallLowering = Callable[[ValueBuilder, E.Call], ir.Value]


def _per_lane(
    v: ValueBuilder,
    dtype: DataType,
    args: list[ir.Value],
    scalar: Callable[[list[ir.Value]], ir.Value],
) -> ir.Value:
    if not dtype.is_vector:
        return scalar(args)
    result: ir.Value = ir.Constant(types.value_type(dtype), ir.Undefined)
    for lane in range(dtype.lanes):
        index = ir.Constant(types.I32, lane)
        lanes = [
            v.b.extract_element(a, index) if isinstance(a.type, ir.VectorType) else a for a in args
        ]
        result = v.b.insert_element(result, scalar(lanes), index)
    return result


def _instruction_math(v: ValueBuilder, call: E.Call) -> ir.Value:
    return v.intrinsic(_INTRINSIC_MATH[call.op], call.dtype, [v(a) for a in call.args])


def _libdevice(v: ValueBuilder, name: str, dtype: DataType, args: list[ir.Value]) -> ir.Value:
    """`__nv_<name>[f]` on float or double; half computes in float."""
    element = dtype.element
    if element.bits == 16:
        wide = [v.b.fpext(a, types.scalar_type(DataType("float", 32))) for a in args]
        result = _libdevice(v, name, DataType("float", 32), wide)
        return v.b.fptrunc(result, types.scalar_type(element))
    llvm_type = types.scalar_type(element)
    function = v.function(
        f"__nv_{name}{'f' if element.bits == 32 else ''}", llvm_type, [llvm_type] * len(args)
    )
    v.uses_libdevice = True
    return v.b.call(function, args)


def _library_math(v: ValueBuilder, call: E.Call) -> ir.Value:
    args = [v(a) for a in call.args]
    return _per_lane(v, call.dtype, args, lambda lanes: _libdevice(v, call.op, call.dtype, lanes))


def _sigmoid(v: ValueBuilder, call: E.Call) -> ir.Value:
    def scalar(lanes: list[ir.Value]) -> ir.Value:
        x = lanes[0]
        one = ir.Constant(x.type, 1.0)
        exponential = _libdevice(v, "exp", call.dtype, [v.b.fneg(x)])
        return v.b.fdiv(one, v.b.fadd(one, exponential))

    return _per_lane(v, call.dtype, [v(call.args[0])], scalar)


_BITWISE = {"bitwise_and": "and_", "bitwise_or": "or_", "bitwise_xor": "xor", "shift_left": "shl"}


def _bitwise(v: ValueBuilder, call: E.Call) -> ir.Value:
    a, b = v(call.args[0]), v(call.args[1])
    if call.op == "shift_right":
        return v.b.ashr(a, b) if call.dtype.is_int else v.b.lshr(a, b)
    return getattr(v.b, _BITWISE[call.op])(a, b)


def _bitwise_not(v: ValueBuilder, call: E.Call) -> ir.Value:
    return v.b.not_(v(call.args[0]))


def _bit_count(v: ValueBuilder, call: E.Call) -> ir.Value:
    value = v(call.args[0])
    bits = call.dtype.bits
    if call.op == "popcount":
        function = v.function(f"llvm.ctpop.i{bits}", value.type, [value.type])
        return v.b.call(function, [value])
    function = v.function(f"llvm.ctlz.i{bits}", value.type, [value.type, types.I1])
    return v.b.call(function, [value, ir.Constant(types.I1, 0)])


def _if_then_else(v: ValueBuilder, call: E.Call) -> ir.Value:
    condition = v(call.args[0])
    then_block = v.b.append_basic_block("if_then")
    else_block = v.b.append_basic_block("if_else")
    join = v.b.append_basic_block("if_join")
    v.b.cbranch(condition, then_block, else_block)
    v.b.position_at_end(then_block)
    then_value = v(call.args[1])
    then_end = v.b.block
    v.b.branch(join)
    v.b.position_at_end(else_block)
    else_value = v(call.args[2])
    else_end = v.b.block
    v.b.branch(join)
    v.b.position_at_end(join)
    phi = v.b.phi(then_value.type)
    phi.add_incoming(then_value, then_end)
    phi.add_incoming(else_value, else_end)
    return phi


def _first(v: ValueBuilder, call: E.Call) -> ir.Value:
    return v(call.args[0])


def _reinterpret(v: ValueBuilder, call: E.Call) -> ir.Value:
    return v.b.bitcast(v(call.args[-1]), types.value_type(call.dtype))


def _storage_sync(v: ValueBuilder, call: E.Call) -> ir.Value:
    scope = call.args[0]
    if isinstance(scope, E.StringImm) and scope.value == "warp":
        every_lane = ir.Constant(types.I32, 0xFFFFFFFF)
        v.b.call(v.function("llvm.nvvm.bar.warp.sync", ir.VoidType(), [types.I32]), [every_lane])
        return ir.Constant(types.I32, 0)
    if isinstance(scope, E.StringImm) and scope.value not in ("shared", "shared.dyn"):
        raise DiagnosticError.at(call.span, f"--ptx-via llvm: cannot synchronize '{scope.value}'")
    v.b.call(v.function("llvm.nvvm.barrier0", ir.VoidType(), []), [])
    return ir.Constant(types.I32, 0)


_SHUFFLE_MODES = {
    "tvm_warp_shuffle": "idx",
    "tvm_warp_shuffle_up": "up",
    "tvm_warp_shuffle_down": "down",
}


def _warp_shuffle(v: ValueBuilder, call: E.Call) -> ir.Value:
    """tvm_warp_shuffle[_up|_down](mask, value, lane-or-delta, width, warp size) as
    `llvm.nvvm.shfl.sync.<mode>.i32/f32`, with CUDA's segment operand for `width`; other
    scalar types travel as one or two 32-bit words."""
    mask, value, amount, width, warp = (v(a) for a in call.args)
    mode = _SHUFFLE_MODES[call.op]
    segment = v.b.shl(
        v.b.sub(
            v.b.trunc(warp, types.I32) if warp.type != types.I32 else warp,
            width if width.type == types.I32 else v.b.trunc(width, types.I32),
        ),
        ir.Constant(types.I32, 8),
    )
    clamp = segment if mode == "up" else v.b.or_(segment, ir.Constant(types.I32, 0x1F))
    amount = amount if amount.type == types.I32 else v.b.trunc(amount, types.I32)

    def shuffle(word: ir.Value) -> ir.Value:
        suffix = "f32" if isinstance(word.type, ir.FloatType) else "i32"
        function = v.function(
            f"llvm.nvvm.shfl.sync.{mode}.{suffix}",
            word.type,
            [types.I32, word.type, types.I32, types.I32],
        )
        return v.b.call(function, [mask, word, amount, clamp])

    kind = value.type
    if call.dtype.lanes != 1:
        raise DiagnosticError.at(call.span, f"--ptx-via llvm: cannot shuffle {call.dtype} vectors")
    if kind in (types.I32, ir.FloatType()):
        return shuffle(value)
    bits = call.dtype.bits
    if bits <= 32:
        word = v.b.bitcast(value, ir.IntType(bits)) if not isinstance(kind, ir.IntType) else value
        word = v.b.zext(word, types.I32) if bits < 32 else word
        result = v.b.trunc(shuffle(word), ir.IntType(bits)) if bits < 32 else shuffle(word)
        return result if isinstance(kind, ir.IntType) else v.b.bitcast(result, kind)
    word = v.b.bitcast(value, types.I64) if not isinstance(kind, ir.IntType) else value
    low = shuffle(v.b.trunc(word, types.I32))
    high = shuffle(v.b.trunc(v.b.lshr(word, ir.Constant(types.I64, 32)), types.I32))
    joined = v.b.or_(
        v.b.zext(low, types.I64), v.b.shl(v.b.zext(high, types.I64), ir.Constant(types.I64, 32))
    )
    return joined if isinstance(kind, ir.IntType) else v.b.bitcast(joined, kind)


def _active_mask(v: ValueBuilder, call: E.Call) -> ir.Value:
    return v.b.call(v.function("llvm.nvvm.activemask", types.I32, []), [])


def _access_ptr(v: ValueBuilder, call: E.Call) -> ir.Value:
    annotation, data, offset = call.args[0], call.args[1], call.args[2]
    if not isinstance(annotation, E.PrimExpr):
        raise DiagnosticError.at(call.span, "--ptx-via llvm: tvm_access_ptr needs a typed value")
    element = types.memory_type(annotation.dtype)
    return v.b.gep(v(data), [v(offset)], source_etype=element)


def _address_of(v: ValueBuilder, call: E.Call) -> ir.Value:
    load = call.args[0]
    if not isinstance(load, E.BufferLoad) or len(load.indices) != 1:
        raise DiagnosticError.at(call.span, "--ptx-via llvm: address_of needs a flat load")
    return v.element_pointer(load.buffer, v(load.indices[0]))


def _dp4a(v: ValueBuilder, call: E.Call) -> ir.Value:
    """CUDA's __dp4a(a, b, c) (see tirc/codegen/cuda/dp4a.py) as `llvm.nvvm.idp4a.{s,u}.{s,u}`,
    signed or not as each operand's type says; a vector operand travels as one 32-bit word."""
    dp4a = dp4a_operands(call)
    words = []
    for operand in (dp4a.a, dp4a.b):
        word = v(operand)
        words.append(v.b.bitcast(word, types.I32) if isinstance(word.type, ir.VectorType) else word)
    accumulator = _to_i32(v, v(dp4a.c), dp4a.c.type)
    signs = "".join(".s" if signed else ".u" for signed in (dp4a.signed_a, dp4a.signed_b))
    function = v.function(f"llvm.nvvm.idp4a{signs}", types.I32, [types.I32] * 3)
    result = v.b.call(function, [*words, accumulator])
    return _from_i32(v, result, dp4a.signed, call.dtype)


def _to_i32(v: ValueBuilder, value: ir.Value, dtype: DataType) -> ir.Value:
    """An integer of any width as the 32 bits dp4a accumulates in."""
    bits = dtype.bits
    if bits > 32:
        return v.b.trunc(value, types.I32)
    if bits < 32:
        return v.b.sext(value, types.I32) if dtype.is_int else v.b.zext(value, types.I32)
    return value


def _from_i32(v: ValueBuilder, value: ir.Value, signed: bool, dtype: DataType) -> ir.Value:
    """dp4a's 32-bit result (signed if either operand is) converted to `dtype`, as C would."""
    bits = dtype.bits
    if bits > 32:
        extend = v.b.sext if signed else v.b.zext
        return extend(value, ir.IntType(bits))
    if bits < 32:
        return v.b.trunc(value, ir.IntType(bits))
    return value


def _extern(v: ValueBuilder, call: E.Call) -> ir.Value:
    name = call.args[0]
    if not isinstance(name, E.StringImm):
        raise DiagnosticError.at(call.span, f"{call.op}: the function name must be a string")
    if name.value == "__dp4a":
        return _dp4a(v, call)
    args = [v(a) for a in call.args[1:]]
    result = ir.VoidType() if call.dtype.is_void else types.value_type(call.dtype)
    function = v.function(name.value, result, [a.type for a in args])
    value = v.b.call(function, args)
    return value if not call.dtype.is_void else ir.Constant(types.I32, 0)


@dataclass(frozen=True)
class _Shared:
    """This backend's lowering as the CPU backend's shared LLVM code reads one
    (codegen/llvm/fixed_point.Lowering)."""

    v: ValueBuilder

    @property
    def builder(self) -> ir.IRBuilder:
        return self.v.b

    def expr(self, expr: object) -> ir.Value:
        return self.v(expr)


def _q_multiply_shift(v: ValueBuilder, call: E.Call) -> ir.Value:
    return emit_q_multiply_shift(_Shared(v), call)


def _q_multiply_shift_per_axis(v: ValueBuilder, call: E.Call) -> ir.Value:
    return emit_q_multiply_shift_per_axis(_Shared(v), call)


_LOWERINGS: dict[str, CallLowering] = {
    **{name: _instruction_math for name in _INTRINSIC_MATH},
    **{name: _library_math for name in _LIBDEVICE_MATH},
    **{name: _bitwise for name in (*_BITWISE, "shift_right")},
    "bitwise_not": _bitwise_not,
    "popcount": _bit_count,
    "clz": _bit_count,
    "sigmoid": _sigmoid,
    "if_then_else": _if_then_else,
    "likely": _first,
    "reinterpret": _reinterpret,
    "tvm_storage_sync": _storage_sync,
    "tvm_warp_shuffle": _warp_shuffle,
    "tvm_warp_shuffle_up": _warp_shuffle,
    "tvm_warp_shuffle_down": _warp_shuffle,
    "tvm_warp_activemask": _active_mask,
    "tvm_access_ptr": _access_ptr,
    "address_of": _address_of,
    "call_extern": _extern,
    "call_pure_extern": _extern,
    "q_multiply_shift": _q_multiply_shift,
    "q_multiply_shift_per_axis": _q_multiply_shift_per_axis,
    **NAMED_BARRIER_LOWERINGS,
    **WMMA_LOWERINGS,
}


@RULES.register(E.Call)
def lower_call(v: ValueBuilder, call: E.Call) -> ir.Value:
    lowering = None
    for table in (_LOWERINGS, PTX_LOWERINGS, WGMMA_LOWERINGS, TMA_LOWERINGS, CLUSTER_LOWERINGS):
        lowering = lowering or table.get(call.op)
    if lowering is None:
        raise DiagnosticError.at(
            call.span, f"--ptx-via llvm does not support T.{call.op}; use --ptx-via nvrtc"
        )
    return lowering(v, call)

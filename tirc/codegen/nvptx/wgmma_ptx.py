"""Hopper warpgroup MMA for --ptx-via llvm: wgmma.mma_async, its fence, commit and wait, and
fence.proxy.async as LLVM inline asm (the same instructions as tirc/codegen/cuda/wgmma_ptx.py;
tirc.ir.wgmma says what the arguments mean).

The accumulator's N / 2 floats are loaded, passed tied to the asm's outputs and stored back;
each descriptor is an i64 packed from the operand's shared address, LBO, SBO and swizzle mode.
"""

from __future__ import annotations

import llvmlite.ir as ir

from tirc.codegen.nvptx import types
from tirc.codegen.nvptx.ptx import (
    _ZERO,
    _address,
    _asm,
    _operand_list,
    instruction,
    shared_address,
)
from tirc.codegen.nvptx.values import ValueBuilder
from tirc.diagnostics import DiagnosticError
from tirc.ir import expr as E
from tirc.ir.dtype import parse_dtype
from tirc.ir.ptx import ELEMENT_DTYPES
from tirc.ir.wgmma import (
    A_POINTER,
    B_POINTER,
    C_POINTER,
    SWIZZLE_MODES,
    setmaxnreg_operands,
    wgmma_shape,
)

_F32 = parse_dtype("float32")


def _field(v: ValueBuilder, value: ir.Value, shift: int) -> ir.Value:
    """((value & 0x3FFFF) >> 4) << shift, as i64."""
    wide = v.b.zext(value, types.I64) if value.type.width < 64 else value
    masked = v.b.and_(wide, ir.Constant(types.I64, 0x3FFFF))
    return v.b.shl(v.b.lshr(masked, ir.Constant(types.I64, 4)), ir.Constant(types.I64, shift))


def _descriptor(v: ValueBuilder, call: E.Call, first: int, element: str) -> ir.Value:
    pointer, offset, lbo, sbo, width = call.args[first : first + 5]
    assert isinstance(width, E.IntImm)
    address = shared_address(v, pointer, offset, parse_dtype(element))
    value = v.b.or_(_field(v, address, 0), _field(v, v(lbo), 16))
    value = v.b.or_(value, _field(v, v(sbo), 32))
    return v.b.or_(value, ir.Constant(types.I64, SWIZZLE_MODES[width.value] << 62))


def _flag(call: E.Call, index: int, what: str) -> int:
    arg = call.args[index]
    if not isinstance(arg, E.IntImm) or arg.value not in (0, 1):
        raise DiagnosticError.at(call.span, f"T.{call.op}: {what} must be a constant 0 or 1")
    return arg.value


def lower_wgmma(v: ValueBuilder, call: E.Call) -> ir.Value:
    shape = wgmma_shape(call)
    trans_a = _flag(call, A_POINTER + 5, "trans_a")
    trans_b = _flag(call, B_POINTER + 5, "trans_b")
    element = ELEMENT_DTYPES[shape.a_type]
    count = shape.registers
    base = _address(v, call.args[C_POINTER], call.args[C_POINTER + 1], _F32)
    memory = types.memory_type(_F32)
    pointers = [
        v.b.gep(base, [ir.Constant(types.I32, i)], source_etype=memory) for i in range(count)
    ]
    scale = v(call.args[C_POINTER + 2])
    if scale.type.width != 32:
        scale = v.b.zext(scale, types.I32) if scale.type.width < 32 else v.b.trunc(scale, types.I32)
    inputs = [
        _descriptor(v, call, A_POINTER, element),
        _descriptor(v, call, B_POINTER, element),
        scale,
        *[v.b.load(pointer, typ=memory) for pointer in pointers],
    ]
    instruction = f"wgmma.mma_async.sync.aligned.{shape.name}.f32.{shape.a_type}.{shape.b_type}"
    text = (
        f"{{ .reg .pred p; setp.ne.b32 p, ${count + 2}, 0; {instruction} "
        f"{_operand_list(0, count)}, ${count}, ${count + 1}, p, 1, 1, {trans_a}, {trans_b}; }}"
    )
    constraints = ",".join(
        ["=f"] * count + ["l", "l", "r"] + [str(i) for i in range(count)] + ["~{memory}"]
    )
    outputs = _asm(v, text, constraints, [memory] * count, inputs)
    for pointer, value in zip(pointers, outputs, strict=True):
        v.b.store(value, pointer)
    return _ZERO


def lower_wait_group(v: ValueBuilder, call: E.Call) -> ir.Value:
    count = call.args[0]
    if not isinstance(count, E.IntImm):
        raise DiagnosticError.at(
            call.span, "T.ptx_wgmma_wait_group: the group count must be a constant"
        )
    _asm(v, f"wgmma.wait_group.sync.aligned {count.value};", "~{memory}", [], [])
    return _ZERO


def lower_setmaxnreg(v: ValueBuilder, call: E.Call) -> ir.Value:
    direction, count = setmaxnreg_operands(call)
    _asm(v, f"setmaxnreg.{direction}.sync.aligned.u32 {count};", "~{memory}", [], [])
    return _ZERO


LOWERINGS = {
    "ptx_wgmma": lower_wgmma,
    "ptx_wgmma_fence": instruction("wgmma.fence.sync.aligned;"),
    "ptx_wgmma_commit_group": instruction("wgmma.commit_group.sync.aligned;"),
    "ptx_wgmma_wait_group": lower_wait_group,
    "ptx_fence_proxy_async": instruction("fence.proxy.async.shared::cta;"),
    "ptx_setmaxnreg": lower_setmaxnreg,
}

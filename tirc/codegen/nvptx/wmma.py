"""Tensor-core fragments (`wmma.*` scopes) and the `tvm_*_matrix_sync` calls for --ptx-via llvm,
as NVVM's `llvm.nvvm.wmma.*` intrinsics (what nvcuda::wmma compiles to in the CUDA C backend).

A fragment buffer is an alloca of its fragments' registers, fragment `index` at register
index * count, each register the word type the intrinsic takes (<2 x half> for f16 operands,
i32 for packed s8/u8/bf16 ones); with constant indices LLVM keeps them in registers. A call on
memory that is not a fragment is emitted as the interpreter defines it (tirc/codegen/nvptx/
wmma_memory.py). tirc/codegen/nvptx/fragment.py says which fragments LLVM has.

    T.tvm_load_matrix_sync(A_frag.data, 16, 16, 16, 1, ptr, 16, "row_major")
    -> %r = call {<2 x half> x 8} @llvm.nvvm.wmma.m16n16k16.load.a.row.stride.f16.p0(ptr, i32 16)
       store each register at A_frag[8 + i]
"""

from __future__ import annotations

from collections.abc import Callable

import llvmlite.ir as ir

from tirc.codegen.cuda.kernels import allocation_size
from tirc.codegen.nvptx import types, wmma_memory
from tirc.codegen.nvptx.fragment import ACCUMULATORS, Fragment, dimensions
from tirc.codegen.nvptx.values import ValueBuilder
from tirc.diagnostics import DiagnosticError
from tirc.ir import expr as E
from tirc.ir import stmt as S

SHARED = 3  # NVPTX's shared-memory address space


def allocate_fragments(
    v: ValueBuilder, allocas: ir.IRBuilder, node: S.AllocBuffer, fragment: Fragment
) -> None:
    """An alloca of every register of the fragments `node` allocates, bound to its data."""
    buffer = node.buffer
    size = allocation_size(buffer)
    if not isinstance(size, E.IntImm):
        raise DiagnosticError.at(node.span, f"fragment {buffer.name} needs a constant size")
    m, n, k = dimensions(fragment.geometry)
    elements = {"a": m * k, "b": k * n, "c": m * n}[fragment.role]
    fragments = max(1, size.value // elements)
    total = ir.Constant(types.I64, fragments * fragment.registers)
    slot = allocas.alloca(fragment.word, size=total, name=buffer.name)
    slot.align = 16
    v.values[buffer.data] = slot
    v.fragments[buffer.data] = fragment


def _fragment(v: ValueBuilder, call: E.Call, arg: object) -> Fragment:
    fragment = v.fragments.get(arg) if isinstance(arg, E.Var) else None
    if fragment is None:
        what = arg.name if isinstance(arg, E.Var) else "an operand"
        raise DiagnosticError.at(
            call.span,
            f"T.{call.op}: {what} is not a wmma fragment, and the call's first operand is",
        )
    return fragment


def _registers(v: ValueBuilder, data: object, fragment: Fragment, index: object) -> list[ir.Value]:
    """Pointers to the registers of fragment `index` of the buffer `data`."""
    first = v.b.mul(_as_i64(v, v(index)), ir.Constant(types.I64, fragment.registers))
    base = v.b.gep(v(data), [first], source_etype=fragment.word)
    return [
        v.b.gep(base, [ir.Constant(types.I32, i)], source_etype=fragment.word)
        for i in range(fragment.registers)
    ]


def _as_i64(v: ValueBuilder, value: ir.Value) -> ir.Value:
    if value.type.width < 64:
        return v.b.sext(value, types.I64)
    return value


def _as_i32(v: ValueBuilder, value: ir.Value) -> ir.Value:
    if value.type.width > 32:
        return v.b.trunc(value, types.I32)
    if value.type.width < 32:
        return v.b.sext(value, types.I32)
    return value


def _result_type(fragment: Fragment) -> ir.Type:
    """What an intrinsic returns for a fragment: one register, or a struct of them."""
    if fragment.registers == 1:
        return fragment.word
    return ir.LiteralStructType([fragment.word] * fragment.registers)


def _unpack(v: ValueBuilder, value: ir.Value, fragment: Fragment) -> list[ir.Value]:
    if fragment.registers == 1:
        return [value]
    return [v.b.extract_value(value, i) for i in range(fragment.registers)]


def _layout(call: E.Call) -> str:
    arg = call.args[7]
    if not isinstance(arg, E.StringImm) or arg.value not in ("row_major", "col_major"):
        raise DiagnosticError.at(
            call.span, f'T.{call.op}: the layout must be "row_major" or "col_major"'
        )
    return "row" if arg.value == "row_major" else "col"


def _check_shape(call: E.Call, fragment: Fragment) -> None:
    m, n, k = (arg.value if isinstance(arg, E.IntImm) else "?" for arg in call.args[1:4])
    geometry = f"m{m}n{n}k{k}"
    if geometry != fragment.geometry:
        raise DiagnosticError.at(
            call.span,
            f"T.{call.op}: {geometry} on a {fragment.geometry} fragment (wmma fragments have "
            "one shape)",
        )


def fill_fragment(v: ValueBuilder, call: E.Call) -> ir.Value:
    """Every register of the fragment set to the value (packed words repeat its bits)."""
    data, index, value = call.args[0], call.args[4], call.expr_arg(5)
    fragment = _fragment(v, call, data)
    _check_shape(call, fragment)
    element = v.cast(v(value), value.dtype, fragment.dtype)
    word: ir.Value
    if fragment.ptx == "f16":
        word = v.broadcast(element, 2)
    elif fragment.word == types.I32 and fragment.ptx != "s32":
        bits = fragment.dtype.bits
        word = v.b.zext(v.b.bitcast(element, ir.IntType(bits)), types.I32)
        for shift in range(bits, 32, bits):
            word = v.b.or_(word, v.b.shl(word, ir.Constant(types.I32, shift)))
    else:
        word = element
    for pointer in _registers(v, data, fragment, index):
        v.b.store(word, pointer)
    return ir.Constant(types.I32, 0)


def _tile(v: ValueBuilder, call: E.Call) -> tuple[Fragment, object, object, ir.Value, ir.Value]:
    """(fragment, its data, the fragment index, memory pointer, i32 stride) of a load or store
    `(fragment, m, n, k, index, pointer, stride, layout)`."""
    data, index = call.args[0], call.args[4]
    fragment = _fragment(v, call, data)
    _check_shape(call, fragment)
    return fragment, data, index, _memory(v, v(call.args[5])), _as_i32(v, v(call.args[6]))


def _memory(v: ValueBuilder, pointer: ir.Value) -> ir.Value:
    """The pointer in shared memory's address space where it points into a shared buffer
    (the `.shared` form of the instruction, with 32-bit addresses, as nvcc emits it), else
    the generic pointer."""
    base = pointer
    while isinstance(base, ir.GEPInstr):
        base = base.pointer
    if (
        isinstance(base, ir.CastInstr)
        and base.opname == "addrspacecast"
        and getattr(base.operands[0].type, "addrspace", 0) == SHARED
    ):
        return v.b.addrspacecast(pointer, ir.PointerType(addrspace=SHARED))
    return pointer


def _space(pointer: ir.Value) -> str:
    """The intrinsic name's pointer suffix: p3 for shared memory, p0 for generic."""
    return f"p{getattr(pointer.type, 'addrspace', 0)}"


def load_matrix_sync(v: ValueBuilder, call: E.Call) -> ir.Value:
    fragment, data, index, pointer, stride = _tile(v, call)
    layout = _layout(call)
    if fragment.role != "c" and layout != fragment.layout:
        raise DiagnosticError.at(
            call.span,
            f"T.tvm_load_matrix_sync: a {layout}-major load of a fragment first loaded "
            f"{fragment.layout}-major (the layout is part of a matrix_a/b fragment's type)",
        )
    name = (
        f"llvm.nvvm.wmma.{fragment.geometry}.load.{fragment.role}.{layout}.stride.{fragment.ptx}."
        f"{_space(pointer)}"
    )
    function = v.function(name, _result_type(fragment), [pointer.type, types.I32])
    loaded = v.b.call(function, [pointer, stride])
    registers = _unpack(v, loaded, fragment)
    for target, register in zip(_registers(v, data, fragment, index), registers, strict=True):
        v.b.store(register, target)
    return ir.Constant(types.I32, 0)


def store_matrix_sync(v: ValueBuilder, call: E.Call) -> ir.Value:
    fragment, data, index, pointer, stride = _tile(v, call)
    if fragment.role != "c":
        raise DiagnosticError.at(call.span, "T.tvm_store_matrix_sync stores accumulator fragments")
    name = (
        f"llvm.nvvm.wmma.{fragment.geometry}.store.d.{_layout(call)}.stride.{fragment.ptx}."
        f"{_space(pointer)}"
    )
    words = [fragment.word] * fragment.registers
    function = v.function(name, ir.VoidType(), [pointer.type, *words, types.I32])
    registers = [v.b.load(p, typ=fragment.word) for p in _registers(v, data, fragment, index)]
    v.b.call(function, [pointer, *registers, stride])
    return ir.Constant(types.I32, 0)


def mma_sync(v: ValueBuilder, call: E.Call) -> ir.Value:
    """D = A x B + C: `llvm.nvvm.wmma.<geometry>.mma.<a layout>.<b layout>.<types>`, the types
    D's and C's for f16 inputs, else the inputs' one (the fragments' one geometry:
    analysis.wmma_fragments checked that they agree)."""
    d, di, a, ai, b, bi, c, ci = call.args
    fd, fa, fb, fc = (_fragment(v, call, x) for x in (d, a, b, c))
    roles = (fd.role, fa.role, fb.role, fc.role)
    if roles != ("c", "a", "b", "c"):
        raise DiagnosticError.at(
            call.span, "T.tvm_mma_sync takes accumulator, matrix_a, matrix_b, accumulator fragments"
        )
    if fa.ptx != fb.ptx or {fd.ptx, fc.ptx} - set(ACCUMULATORS[fa.ptx]):
        raise DiagnosticError.at(
            call.span,
            f"T.tvm_mma_sync: no wmma of {fa.dtype} x {fb.dtype} + {fc.dtype} into {fd.dtype}",
        )
    signature = f"{fd.ptx}.{fc.ptx}" if fa.ptx == "f16" else fa.ptx
    name = f"llvm.nvvm.wmma.{fa.geometry}.mma.{fa.layout}.{fb.layout}.{signature}"
    inputs = []
    argument_types = []
    for data, index, fragment in ((a, ai, fa), (b, bi, fb), (c, ci, fc)):
        for pointer in _registers(v, data, fragment, index):
            inputs.append(v.b.load(pointer, typ=fragment.word))
            argument_types.append(fragment.word)
    function = v.function(name, _result_type(fd), argument_types)
    result = _unpack(v, v.b.call(function, inputs), fd)
    for target, register in zip(_registers(v, d, fd, di), result, strict=True):
        v.b.store(register, target)
    return ir.Constant(types.I32, 0)


Lowering = Callable[[ValueBuilder, E.Call], ir.Value]


def _on_fragments(fragments: Lowering, memory: Lowering) -> Lowering:
    """The call on fragments where its first operand is one, else on plain memory."""

    def lower(v: ValueBuilder, call: E.Call) -> ir.Value:
        target = call.args[0]
        if isinstance(target, E.Var) and target in v.fragments:
            return fragments(v, call)
        return memory(v, call)

    return lower


LOWERINGS: dict[str, Lowering] = {
    "tvm_fill_fragment": _on_fragments(fill_fragment, wmma_memory.fill),
    "tvm_load_matrix_sync": _on_fragments(load_matrix_sync, wmma_memory.load),
    "tvm_store_matrix_sync": _on_fragments(store_matrix_sync, wmma_memory.store),
    "tvm_mma_sync": _on_fragments(mma_sync, wmma_memory.mma),
}

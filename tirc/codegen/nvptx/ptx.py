"""Warp-level tensor-core PTX for --ptx-via llvm: mma.sync, ldmatrix, cp.async as inline asm.

The same instructions as the CUDA C backend (tirc/codegen/cuda/ptx.py), as LLVM inline asm:
register arrays are loaded as i32 words, the asm returns its outputs as a struct, and the
accumulator inputs are tied to the outputs ("=f,...,0,1,2,3"). Shared addresses are
addrspace(3) pointers converted to 32-bit integers (what `__cvta_generic_to_shared` gives).

    T.ptx_ldmatrix("float16", False, 4, ".b16", A.data, 0, shared, off)
    -> %r = call {i32, i32, i32, i32} asm sideeffect "ldmatrix.sync.aligned.m8n8.x4...",
            "=r,=r,=r,=r,r"(i32 %address)
"""

from __future__ import annotations

from collections.abc import Callable

import llvmlite.ir as ir

from tirc.codegen.cuda.ptx import shared_terms
from tirc.codegen.nvptx import types
from tirc.codegen.nvptx.values import ValueBuilder
from tirc.diagnostics import DiagnosticError
from tirc.ir import expr as E
from tirc.ir.dtype import DataType, parse_dtype
from tirc.ir.ptx import ELEMENT_DTYPES, mma_shape

SHARED = 3
_ZERO = ir.Constant(types.I32, 0)


def _int(call: E.Call, index: int, what: str) -> int:
    arg = call.args[index]
    if not isinstance(arg, E.IntImm):
        raise DiagnosticError.at(call.span, f"T.{call.op}: the {what} must be a constant")
    return arg.value


def _string(call: E.Call, index: int, what: str) -> str:
    arg = call.args[index]
    if not isinstance(arg, E.StringImm):
        raise DiagnosticError.at(call.span, f"T.{call.op}: the {what} must be a string")
    return arg.value


def _address(v: ValueBuilder, pointer: object, offset: object, element: DataType) -> ir.Value:
    return v.b.gep(v(pointer), [v(offset)], source_etype=types.memory_type(element))


def _word_pointers(
    v: ValueBuilder, pointer: object, offset: object, element: DataType, word: ir.Type, count: int
) -> list[ir.Value]:
    base = v.b.bitcast(_address(v, pointer, offset, element), word.as_pointer())
    return [v.b.gep(base, [ir.Constant(types.I32, i)], source_etype=word) for i in range(count)]


def _shared_word(v: ValueBuilder, pointer: ir.Value) -> ir.Value:
    shared = v.b.addrspacecast(pointer, ir.PointerType(addrspace=SHARED))
    return v.b.ptrtoint(shared, types.I32)


def shared_address(v: ValueBuilder, pointer: object, offset: object, element: DataType) -> ir.Value:
    """The 32-bit shared-window address of element `offset` from `pointer`, as the CUDA C
    backend writes it (tirc/codegen/cuda/ptx.py `shared_address`): the buffer's base converted
    once, plus each summand of the offsets scaled to bytes, in i32. The same value modulo 2^32
    as the generic pointer's 64-bit sum converted whole, but a sum LLVM can regroup, so the
    base and a loop's invariant terms are added outside the loop."""
    base, terms = shared_terms(pointer, offset, element)
    address = _shared_word(v, v(base))
    for term, size in terms:
        value = v(term)
        width = value.type.width
        if width > 32:
            value = v.b.trunc(value, types.I32)
        elif width < 32:
            value = v.b.sext(value, types.I32)
        if size != 1:
            value = v.b.mul(value, ir.Constant(types.I32, size))
        address = v.b.add(address, value)
    return address


def _asm(
    v: ValueBuilder, text: str, constraints: str, results: list[ir.Type], args: list[ir.Value]
) -> list[ir.Value]:
    if not results:
        result: ir.Type = ir.VoidType()
    elif len(results) == 1:
        result = results[0]
    else:
        result = ir.LiteralStructType(results)
    function = ir.FunctionType(result, [a.type for a in args])
    value = v.b.asm(function, text, constraints, args, side_effect=True)
    if len(results) == 1:
        return [value]
    return [v.b.extract_value(value, i) for i in range(len(results))]


def instruction(text: str) -> Callable[[ValueBuilder, E.Call], ir.Value]:
    """The lowering of a call that is one fixed instruction, ordered with memory."""

    def lower(v: ValueBuilder, call: E.Call) -> ir.Value:
        _asm(v, text, "~{memory}", [], [])
        return _ZERO

    return lower


def _operand_list(first: int, count: int) -> str:
    """`{$0, $1}`: NVPTX has one asm dialect, so braces are literal."""
    return "{" + ", ".join(f"${first + i}" for i in range(count)) + "}"


_WORDS = {"f32": (ir.FloatType(), "f"), "f64": (ir.DoubleType(), "d")}


def lower_mma(v: ValueBuilder, call: E.Call) -> ir.Value:
    shape = mma_shape(call)
    a_layout, b_layout = _string(call, 1, "A layout"), _string(call, 2, "B layout")
    a, a_off, b, b_off, c, c_off, saturate = call.args[6:13]
    a_word, a_code = _WORDS.get(shape.a_type, (types.I32, "r"))
    c_word, c_code = _WORDS.get(shape.c_type, (types.I32, "r"))
    a_element = parse_dtype(ELEMENT_DTYPES[shape.a_type])
    c_element = parse_dtype(ELEMENT_DTYPES[shape.c_type])
    a_ptrs = _word_pointers(v, a, a_off, a_element, a_word, shape.a_words)
    b_ptrs = _word_pointers(v, b, b_off, a_element, a_word, shape.b_words)
    c_ptrs = _word_pointers(v, c, c_off, c_element, c_word, shape.c_words)
    inputs = [v.b.load(p, typ=a_word) for p in a_ptrs + b_ptrs]
    inputs += [v.b.load(p, typ=c_word) for p in c_ptrs]
    nc, na, nb = shape.c_words, shape.a_words, shape.b_words
    satfinite = ".satfinite" if isinstance(saturate, E.IntImm) and saturate.value else ""
    text = (
        f"mma.sync.aligned.{shape.name}.{a_layout}.{b_layout}{satfinite}.{shape.c_type}."
        f"{shape.a_type}.{shape.b_type}.{shape.c_type} {_operand_list(0, nc)}, "
        f"{_operand_list(nc, na)}, {_operand_list(nc + na, nb)}, "
        f"{_operand_list(nc + na + nb, nc)};"
    )
    constraints = ",".join([f"={c_code}"] * nc + [a_code] * (na + nb) + [str(i) for i in range(nc)])
    outputs = _asm(v, text, constraints, [c_word] * nc, inputs)
    for pointer, value in zip(c_ptrs, outputs, strict=True):
        v.b.store(value, pointer)
    return _ZERO


def lower_ldmatrix(v: ValueBuilder, call: E.Call) -> ir.Value:
    trans, num, kind = call.args[0], _int(call, 1, "matrix count"), call.args[2]
    if num not in (1, 2, 4) or not (isinstance(kind, E.StringImm) and kind.value == ".b16"):
        raise DiagnosticError.at(call.span, "T.ptx_ldmatrix loads .x1, .x2 or .x4 of .b16")
    local, local_off, shared, shared_off = call.args[3:7]
    element = call.dtype.element
    targets = _word_pointers(v, local, local_off, element, types.I32, num)
    address = shared_address(v, shared, shared_off, element)
    transposed = ".trans" if isinstance(trans, E.IntImm) and trans.value else ""
    text = (
        f"ldmatrix.sync.aligned.m8n8.x{num}{transposed}.shared.b16 "
        f"{_operand_list(0, num)}, [${num}];"
    )
    words = _asm(v, text, ",".join(["=r"] * num + ["r"]), [types.I32] * num, [address])
    for pointer, value in zip(targets, words, strict=True):
        v.b.store(value, pointer)
    return _ZERO


def lower_cp_async(v: ValueBuilder, call: E.Call) -> ir.Value:
    shared, shared_off, source, source_off = call.args[:4]
    size = _int(call, 4, "byte count")
    if size not in (4, 8, 16):
        raise DiagnosticError.at(call.span, f"T.ptx_cp_async copies 4, 8 or 16 bytes, not {size}")
    element = call.dtype.element
    destination = shared_address(v, shared, shared_off, element)
    global_address = v.b.ptrtoint(_address(v, source, source_off, element), types.I64)
    cache = "cg" if size == 16 else "ca"
    if len(call.args) > 5:
        predicate = v(call.args[5])
        source_size = v.b.select(predicate, ir.Constant(types.I32, size), ir.Constant(types.I32, 0))
        text = f"cp.async.{cache}.shared.global [$0], [$1], {size}, $2;"
        _asm(v, text, "r,l,r", [], [destination, global_address, source_size])
    else:
        text = f"cp.async.{cache}.shared.global [$0], [$1], {size};"
        _asm(v, text, "r,l", [], [destination, global_address])
    return _ZERO


def lower_commit_group(v: ValueBuilder, call: E.Call) -> ir.Value:
    _asm(v, "cp.async.commit_group;", "", [], [])
    return _ZERO


def lower_wait_group(v: ValueBuilder, call: E.Call) -> ir.Value:
    _asm(v, f"cp.async.wait_group {_int(call, 0, 'group count')};", "", [], [])
    return _ZERO


def lower_mma_fill(v: ValueBuilder, call: E.Call) -> ir.Value:
    size = _int(call, 0, "register count")
    element = call.dtype.element
    base = _address(v, call.args[1], call.args[2], element)
    memory = types.memory_type(element)
    zero = ir.Constant(memory, 0.0 if element.is_float else 0)
    for i in range(size):
        pointer = v.b.gep(base, [ir.Constant(types.I32, i)], source_etype=memory)
        v.b.store(zero, pointer)
    return _ZERO


def lower_mma_store(v: ValueBuilder, call: E.Call) -> ir.Value:
    """Lane l stores element e of tile t at row l / 4 + 8(e / 2), column 8t + 2(l % 4) + e % 2."""
    m, n = _int(call, 0, "row count"), _int(call, 1, "column count")
    if m != 16 or n % 8:
        raise DiagnosticError.at(
            call.span, f"T.mma_store stores 16 x 8k accumulator tiles, not {m} x {n}"
        )
    dst, local, offset, stride = call.args[2:6]
    element = call.dtype.element
    memory = types.memory_type(element)
    base = _address(v, local, offset, element)
    laneid = v.function("llvm.nvvm.read.ptx.sreg.laneid", types.I32, [])
    lane = v.b.call(laneid, [])
    group = v.b.udiv(lane, ir.Constant(types.I32, 4))
    pair = v.b.mul(v.b.urem(lane, ir.Constant(types.I32, 4)), ir.Constant(types.I32, 2))
    row_stride = v(stride)
    if row_stride.type.width < 64:
        row_stride = v.b.sext(row_stride, types.I64)
    target = v(dst)
    for i in range(4 * (n // 8)):
        e = i % 4
        row = v.b.add(group, ir.Constant(types.I32, 8 * (e // 2)))
        col = v.b.add(pair, ir.Constant(types.I32, 8 * (i // 4) + e % 2))
        index = v.b.add(v.b.mul(v.b.zext(row, types.I64), row_stride), v.b.zext(col, types.I64))
        source = v.b.gep(base, [ir.Constant(types.I32, i)], source_etype=memory)
        value = v.b.load(source, typ=memory)
        v.b.store(value, v.b.gep(target, [index], source_etype=memory))
    return _ZERO


LOWERINGS = {
    "ptx_mma": lower_mma,
    "ptx_ldmatrix": lower_ldmatrix,
    "ptx_cp_async": lower_cp_async,
    "ptx_commit_group": lower_commit_group,
    "ptx_wait_group": lower_wait_group,
    "mma_fill": lower_mma_fill,
    "mma_store": lower_mma_store,
}

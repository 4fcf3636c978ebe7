"""`--target cuda --abi tvm-ffi`: beside each launcher `f_launch`, a packed function
`__tvm_ffi_f` in tvm-ffi's safe-call convention that checks its arguments as
tirc.codegen.ffi_signature describes (the tensors on one CUDA device), binds the shape
variables from the tensors, and launches on the stream tvm-ffi holds for that device
(`TVMFFIEnvGetStream`: the caller's framework sets it, torch its current stream). The code
declares the few tvm-ffi types and functions it uses itself, so nvcc needs no tvm-ffi headers;
libtvm_ffi, which `tvm_ffi.load_module` has loaded, defines the functions.
"""

from __future__ import annotations

import json

from tirc.codegen import ffi_signature as ffi
from tirc.codegen.abi import ParamKind
from tirc.codegen.cuda import types
from tirc.codegen.cuda.expr import ExprPrinter
from tirc.codegen.cuda.host import launcher_name
from tirc.codegen.cuda.kernels import DeviceProgram
from tirc.codegen.cuda.names import NameTable
from tirc.codegen.cuda.writer import Writer
from tirc.codegen.ffi_signature import FfiSignature, TensorParam, ffi_signature
from tirc.ir.expr import IntImm, Var


def _c_string(text: str) -> str:
    """A C string literal; JSON's escapes are C's for the characters tirc's messages hold."""
    return json.dumps(text)


def _names_function(name: str, names: dict[int, str], other: str) -> str:
    cases = "".join(
        f"    case {number}: return {_c_string(text)};\n" for number, text in names.items()
    )
    return (
        f"static const char* {name}(int value) {{\n  switch (value) {{\n{cases}"
        f"    default: return {_c_string(other)};\n  }}\n}}\n"
    )


PRELUDE = (
    f"""
// tvm-ffi's packed calls (--abi tvm-ffi; tirc's docs/python.md)
#include <cstdarg>
#include <cstdio>
extern "C" void TVMFFIErrorSetRaisedFromCStr(const char* kind, const char* message);
extern "C" void* TVMFFIEnvGetStream(int32_t device_type, int32_t device_id);

namespace tirc_ffi {{
struct Any {{
  int32_t type_index;
  uint32_t zero_padding;
  union {{
    int64_t v_int64;
    double v_float64;
    void* v_ptr;
  }};
}};
struct DLTensor {{
  void* data;
  int32_t device_type;
  int32_t device_id;
  int32_t ndim;
  uint8_t code;
  uint8_t bits;
  uint16_t lanes;
  int64_t* shape;
  int64_t* strides;
  uint64_t byte_offset;
}};
static int fail(const char* kind, const char* format, ...) {{
  char message[1024];
  va_list values;
  va_start(values, format);
  vsnprintf(message, sizeof message, format, values);
  va_end(values);
  TVMFFIErrorSetRaisedFromCStr(kind, message);
  return -1;
}}
static DLTensor* tensor(const Any* value) {{
  if (value->type_index == {ffi.TYPE_TENSOR})
    return (DLTensor*)((char*)value->v_ptr + {ffi.OBJECT_HEADER_BYTES});
  return value->type_index == {ffi.TYPE_DLTENSOR_PTR} ? (DLTensor*)value->v_ptr : nullptr;
}}
static bool is_int(const Any* value) {{
  return value->type_index == {ffi.TYPE_INT} || value->type_index == {ffi.TYPE_BOOL};
}}
static void* data(const DLTensor* t) {{ return (char*)t->data + t->byte_offset; }}
static int64_t stride(const DLTensor* t, int i, int64_t compact) {{
  return t->strides ? t->strides[i] : compact;
}}
"""
    + _names_function("type_name", ffi.TYPE_NAMES, "an object")
    + _names_function("device_name", ffi.DEVICE_NAMES, "another device")
    + _names_function("code_name", dict(enumerate(ffi.DL_CODE_NAMES)), "code")
    + "}  // namespace tirc_ffi\n"
)


def tvm_ffi_text(programs: list[tuple[str, DeviceProgram]]) -> str:
    """The packed functions of a module's exported host functions, with what they share."""
    wrappers = [
        _wrapper(ffi_signature(name, program.func))
        for name, program in programs
        if not program.func.is_private
    ]
    return PRELUDE + "".join("\n" + text for text in wrappers)


def _wrapper(sig: FfiSignature) -> str:
    names = NameTable(frozenset({"self", "args", "num_args", "result", "full"}))
    printer = ExprPrinter(names)
    out = Writer()
    head = (
        f'extern "C" int {sig.packed_name}(void* self, const tirc_ffi::Any* args, '
        "int32_t num_args, tirc_ffi::Any* result)"
    )
    with out.block(head):
        out.line("using namespace tirc_ffi;")
        out.line(f"bool full = num_args == {sig.full_count};")
        count_ok = "full"
        if sig.short_form and sig.short_count != sig.full_count:
            count_ok = f"full || num_args == {sig.short_count}"
        _fail(out, count_ok, ffi.TYPE_ERROR, sig.count_message(), "num_args")
        call: list[str] = []
        tensors: dict[int, str] = {}
        first: tuple[TensorParam, str] | None = None
        for index, param in enumerate(sig.params):
            if param.kind is ParamKind.SHAPE:
                call.append(names(param.var))
                continue
            short = sig.short_position(index)
            at = f"&args[{index}]" if short == index else f"&args[full ? {index} : {short}]"
            value = names.fresh(f"{param.name}_arg")
            out.line(f"const Any* {value} = {at};")
            if param.kind is ParamKind.BUFFER:
                tensor = sig.tensors[index]
                pointer = names.fresh(f"{param.name}_tensor")
                tensors[index] = pointer
                out.line(f"DLTensor* {pointer} = tensor({value});")
                _fail(
                    out,
                    pointer,
                    ffi.TYPE_ERROR,
                    ffi.argument_message(sig, index, param, "a tensor"),
                    f"type_name({value}->type_index)",
                )
                _inspect(out, sig, tensor, pointer, first)
                first = first or (tensor, pointer)
                assert param.buffer is not None
                element = types.c_type(param.buffer.dtype)
                call.append(f"({element}*){_data(tensor, pointer)}")
            elif param.kind is ParamKind.HANDLE:
                kinds = (ffi.TYPE_NONE, ffi.TYPE_OPAQUE_PTR, ffi.TYPE_DLTENSOR_PTR, ffi.TYPE_TENSOR)
                _fail(
                    out,
                    " || ".join(f"{value}->type_index == {k}" for k in kinds),
                    ffi.TYPE_ERROR,
                    ffi.argument_message(sig, index, param, "a pointer or a tensor"),
                    f"type_name({value}->type_index)",
                )
                call.append(f"(tensor({value}) ? data(tensor({value})) : {value}->v_ptr)")
            elif param.abi_dtype.is_float:
                _fail(
                    out,
                    f"is_int({value}) || {value}->type_index == {ffi.TYPE_FLOAT}",
                    ffi.TYPE_ERROR,
                    ffi.argument_message(sig, index, param, "a number"),
                    f"type_name({value}->type_index)",
                )
                c_type = types.c_type(param.abi_dtype)
                call.append(
                    f"({c_type})({value}->type_index == {ffi.TYPE_FLOAT} ? {value}->v_float64 "
                    f": (double){value}->v_int64)"
                )
            else:
                _fail(
                    out,
                    f"is_int({value})",
                    ffi.TYPE_ERROR,
                    ffi.argument_message(sig, index, param, "an int"),
                    f"type_name({value}->type_index)",
                )
                call.append(f"{value}->v_int64")
        told = _bind(out, sig, tensors, names)
        for index, pointer in tensors.items():
            _check(out, sig, sig.tensors[index], pointer, told, printer)
        device = f"{first[1]}->device_id" if first is not None else "0"
        out.line("int previous_device = 0;")
        out.line("cudaGetDevice(&previous_device);")
        out.line(f"if (previous_device != {device}) cudaSetDevice({device});")
        stream = f"(cudaStream_t)TVMFFIEnvGetStream({ffi.DL_CUDA}, {device})"
        out.line(f"int status = {launcher_name(sig.name)}({', '.join([*call, stream])});")
        out.line(f"if (previous_device != {device}) cudaSetDevice(previous_device);")
        _fail(
            out,
            "status == 0",
            ffi.RUNTIME_ERROR,
            f"{sig.name}: the launch failed: %s",
            "cudaGetErrorString((cudaError_t)status)",
        )
        out.line("return 0;")
    return out.text()


def _inspect(
    out: Writer,
    sig: FfiSignature,
    tensor: TensorParam,
    pointer: str,
    first: tuple[TensorParam, str] | None,
) -> None:
    device = f"{pointer}->device_type"
    _fail(
        out,
        f"{device} == {ffi.DL_CUDA} || {device} == {ffi.DL_CUDA_MANAGED}",
        ffi.VALUE_ERROR,
        ffi.device_message(sig, tensor, "a CUDA device"),
        f"device_name({device})",
    )
    if first is not None:
        _fail(
            out,
            f"{pointer}->device_id == {first[1]}->device_id",
            ffi.VALUE_ERROR,
            ffi.same_device_message(sig, tensor, first[0]),
            f"{pointer}->device_id",
            f"{first[1]}->device_id",
        )
    rank = len(tensor.shape)
    _fail(
        out,
        f"{pointer}->ndim == {rank}",
        ffi.VALUE_ERROR,
        ffi.rank_message(sig, tensor),
        f"{pointer}->ndim",
    )
    dtype_ok = (
        f"{pointer}->code == {tensor.dl_code} && {pointer}->bits == {tensor.bits} && "
        f"{pointer}->lanes == {tensor.lanes}"
    )
    with out.block(f"if (!({dtype_ok}))"):
        arguments = f"code_name({pointer}->code), (int){pointer}->bits, (int){pointer}->lanes"
        single = _c_string(ffi.dtype_message(sig, tensor, lanes=False))
        several = _c_string(ffi.dtype_message(sig, tensor, lanes=True))
        out.line(
            f'return fail("{ffi.TYPE_ERROR}", {pointer}->lanes == 1 ? {single} : {several}, '
            f"{arguments});"
        )


def _bind(
    out: Writer, sig: FfiSignature, tensors: dict[int, str], names: NameTable
) -> dict[Var, str]:
    """Declares each shape variable, told by the argument passed for it in a full call, else
    by the extent, stride or offset it is first read from; the C of each of those."""
    told: dict[Var, str] = {}
    for index, pointer in tensors.items():
        tensor = sig.tensors[index]
        for i, dimension in enumerate(tensor.shape):
            if dimension.binds is not None:
                told[dimension.binds] = f"{pointer}->shape[{i}]"
        for i, dimension in enumerate(tensor.strides):
            if dimension.binds is not None:
                told[dimension.binds] = f"stride({pointer}, {i}, {_compact(pointer, i, tensor)})"
        if tensor.offset is not None:
            offset = f"(int64_t){pointer}->byte_offset"
            _fail(
                out,
                f"{offset} % {tensor.element_bytes} == 0",
                ffi.VALUE_ERROR,
                ffi.offset_message(sig, tensor),
                offset,
            )
            told[tensor.offset] = f"{offset} / {tensor.element_bytes}"
    for index, param in enumerate(sig.params):
        if param.kind is ParamKind.SHAPE:
            argument = f"args[{index}]"
            _fail(
                out,
                f"!full || is_int(&{argument})",
                ffi.TYPE_ERROR,
                ffi.argument_message(sig, index, param, "an int"),
                f"type_name({argument}.type_index)",
            )
            fallback = told.get(param.var, "0")
            told[param.var] = f"(full ? {argument}.v_int64 : {fallback})"
    for var, value in told.items():
        out.line(f"{types.c_type(var.dtype)} {names(var)} = ({types.c_type(var.dtype)})({value});")
    return told


def _check(
    out: Writer,
    sig: FfiSignature,
    tensor: TensorParam,
    pointer: str,
    told: dict[Var, str],
    printer: ExprPrinter,
) -> None:
    for i, dimension in enumerate((*tensor.shape, *tensor.strides)):
        rank = len(tensor.shape)
        if i < rank:
            actual = f"{pointer}->shape[{i}]"
        else:
            actual = f"stride({pointer}, {i - rank}, {_compact(pointer, i - rank, tensor)})"
        expected = dimension.expected
        if expected is None:
            dense = _compact(pointer, i - rank, tensor)
            _fail(
                out,
                f"{actual} == {dense} || {pointer}->shape[{i - rank}] == 1",
                ffi.VALUE_ERROR,
                ffi.compact_message(sig, tensor, dimension),
                f"(long long){actual}",
                f"(long long){dense}",
            )
            continue
        message = ffi.dimension_message(sig, dimension)
        if isinstance(expected, IntImm):
            _fail(
                out,
                f"{actual} == {expected.value}",
                ffi.VALUE_ERROR,
                message,
                f"(long long){actual}",
            )
            continue
        want = f"(long long)({printer(expected)})"
        values = [f"(long long){actual}", want]
        if isinstance(expected, Var):
            how = _c_string(ffi.origin(sig, expected))
            if ffi.is_shape_argument(sig, expected):
                how = f'(full ? "as passed" : {how})'
            values.append(how)
        _fail(out, f"{actual} == {want}", ffi.VALUE_ERROR, message, *values)
    if tensor.alignment > tensor.element_bytes:
        data = _data(tensor, pointer)
        _fail(
            out,
            f"(uintptr_t){data} % {tensor.alignment} == 0",
            ffi.VALUE_ERROR,
            ffi.alignment_message(sig, tensor),
            data,
        )


def _compact(pointer: str, i: int, tensor: TensorParam) -> str:
    """The stride of dimension i of a dense row-major tensor."""
    later = [f"{pointer}->shape[{j}]" for j in range(i + 1, len(tensor.shape))]
    return f"({' * '.join(later)})" if later else "(int64_t)1"


def _data(tensor: TensorParam, pointer: str) -> str:
    # with an element offset of its own, the launcher adds it to the tensor's data
    return f"{pointer}->data" if tensor.offset is not None else f"data({pointer})"


def _fail(out: Writer, ok: str, kind: str, message: str, *values: str) -> None:
    arguments = "".join(f", {value}" for value in values)
    out.line(f'if (!({ok})) return fail("{kind}", {_c_string(message)}{arguments});')

"""The tvm-ffi ABI of a compiled function (docs/python.md), read off its C ABI
(tirc.codegen.abi): what a packed call `__tvm_ffi_f(self, args, num_args, result)` takes and
checks before it calls the C function `f`. Both wrappers (LLVM for the CPU, C++ for CUDA
launchers) render this one description, so that they take and refuse the same calls.

A call passes the C ABI's parameters in order, a tensor (DLTensor) for each buffer; the shape
parameters may be left out all together, and are then told from the tensors' shapes.
"""

from __future__ import annotations

from dataclasses import dataclass

from tirc.codegen.abi import AbiParam, ParamKind, function_abi
from tirc.diagnostics import DiagnosticError
from tirc.ir.expr import IntImm, PrimExpr, Var
from tirc.ir.function import PrimFunc
from tirc.text import script

# tvm-ffi's type indices (tvm/ffi/c_api.h) and DLPack's codes (dlpack/dlpack.h)
TYPE_NONE, TYPE_INT, TYPE_BOOL, TYPE_FLOAT, TYPE_OPAQUE_PTR = 0, 1, 2, 3, 4
TYPE_DLTENSOR_PTR, TYPE_TENSOR = 7, 70
OBJECT_HEADER_BYTES = 24  # a TVMFFIObject; a Tensor's DLTensor follows it
TYPE_NAMES = {
    0: "None",
    1: "int",
    2: "bool",
    3: "float",
    4: "an opaque pointer",
    5: "a dtype",
    6: "a device",
    7: "a DLTensor pointer",
    8: "str",
    9: "bytes",
    11: "str",
    12: "bytes",
    65: "str",
    66: "bytes",
    68: "a function",
    69: "a shape",
    70: "a tensor",
    71: "an array",
    72: "a map",
}
DL_CODES = {"int": 0, "uint": 1, "float": 2, "bfloat": 4, "bool": 6}
DL_CODE_NAMES = ("int", "uint", "float", "handle", "bfloat", "complex", "bool")
DL_CPU, DL_CUDA, DL_CUDA_MANAGED = 1, 2, 13
DEVICE_NAMES = {1: "cpu", 2: "cuda", 3: "cuda_host", 4: "opencl", 7: "vulkan", 8: "metal"}
DEVICE_NAMES |= {10: "rocm", 13: "cuda_managed", 14: "oneapi"}

# error kinds, raised as the Python exceptions of the same name
TYPE_ERROR, VALUE_ERROR, RUNTIME_ERROR = "TypeError", "ValueError", "RuntimeError"


@dataclass(frozen=True)
class Dimension:
    """One extent or stride of a tensor argument: its label (`A.shape[0]`) and what the
    program declares it to be. `binds` is the shape variable it tells, at its first
    appearance as a whole extent or stride."""

    label: str
    expected: PrimExpr | None  # None: a compact stride, the product of the later extents
    binds: Var | None = None


@dataclass(frozen=True)
class TensorParam:
    param: AbiParam
    dl_code: int
    bits: int
    lanes: int
    shape: tuple[Dimension, ...]
    strides: tuple[Dimension, ...]
    offset: Var | None  # the element offset the tensor's byte_offset tells, else none
    alignment: int  # checked where it is more than the element's own

    @property
    def name(self) -> str:
        assert self.param.buffer is not None
        return self.param.buffer.name

    @property
    def element_bytes(self) -> int:
        return max(1, self.bits // 8) * self.lanes


@dataclass(frozen=True)
class FfiSignature:
    name: str  # the exported C symbol; the packed function is `__tvm_ffi_<name>`
    params: tuple[AbiParam, ...]
    tensors: dict[int, TensorParam]  # by position among params
    sources: dict[Var, Dimension]  # where each shape variable is told from, when it is
    short_form: bool  # whether a call may leave the shape parameters out

    @property
    def packed_name(self) -> str:
        return f"__tvm_ffi_{self.name}"

    @property
    def full_count(self) -> int:
        return len(self.params)

    @property
    def short_count(self) -> int:
        return sum(p.kind is not ParamKind.SHAPE for p in self.params)

    def short_position(self, index: int) -> int:
        """The position of params[index] in a call that leaves the shape parameters out."""
        return sum(p.kind is not ParamKind.SHAPE for p in self.params[:index])

    def describe(self) -> str:
        """`f(A: Tensor[(n,), float32], n: int32)`, for messages."""
        return f"{self.name}({', '.join(_describe(p) for p in self.params)})"

    def count_message(self) -> str:
        if not self.short_form or self.short_count == self.full_count:
            return f"{self.describe()} takes {self.full_count} arguments, got %d"
        shapes = ", ".join(p.name for p in self.params if p.kind is ParamKind.SHAPE)
        return (
            f"{self.describe()} takes {self.short_count} arguments, or {self.full_count} "
            f"with the shape arguments ({shapes}), got %d"
        )


def ffi_signature(symbol: str, func: PrimFunc, device: str = "cpu") -> FfiSignature:
    """The packed signature of `func`, exported as `symbol`."""
    params = tuple(function_abi(func))
    tensors: dict[int, TensorParam] = {}
    sources: dict[Var, Dimension] = {}
    for index, param in enumerate(params):
        if param.kind is ParamKind.BUFFER:
            tensors[index] = _tensor(param, sources)
    shapes = [p.var for p in params if p.kind is ParamKind.SHAPE]
    return FfiSignature(symbol, params, tensors, sources, all(v in sources for v in shapes))


def _tensor(param: AbiParam, sources: dict[Var, Dimension]) -> TensorParam:
    buffer = param.buffer
    assert buffer is not None
    dtype = buffer.dtype
    code = DL_CODES.get(dtype.kind)
    if code is None:
        raise DiagnosticError.at(
            param.var.span, f"the tvm-ffi ABI cannot pass a {dtype} tensor ({param.name})"
        )

    def dimension(label: str, expected: PrimExpr | None) -> Dimension:
        if isinstance(expected, Var) and expected not in sources:
            sources[expected] = Dimension(label, expected, expected)
            return sources[expected]
        return Dimension(label, expected)

    shape = tuple(dimension(f"{buffer.name}.shape[{i}]", e) for i, e in enumerate(buffer.shape))
    strides = tuple(
        dimension(f"{buffer.name}.strides[{i}]", buffer.strides[i] if buffer.strides else None)
        for i in range(len(buffer.shape))
    )
    offset = buffer.elem_offset
    if offset is not None and not (isinstance(offset, IntImm) and offset.value == 0):
        if not isinstance(offset, Var) or offset in sources:
            raise DiagnosticError.at(
                param.var.span,
                f"the tvm-ffi ABI cannot pass {buffer.name}: its element offset {offset} is "
                "not a variable of its own",
            )
        sources[offset] = Dimension(f"{buffer.name}.byte_offset", offset, offset)
    bits = 8 if dtype.is_bool else dtype.bits
    return TensorParam(
        param,
        code,
        bits,
        dtype.lanes,
        shape,
        strides,
        offset if isinstance(offset, Var) else None,
        buffer.data_alignment,
    )


def _describe(param: AbiParam) -> str:
    if param.kind is ParamKind.BUFFER:
        assert param.buffer is not None
        shape = ", ".join(str(_extent(e)) for e in param.buffer.shape)
        comma = "," if len(param.buffer.shape) == 1 else ""
        return f"{param.buffer.name}: Tensor[({shape}{comma}), {param.dtype}]"
    if param.kind is ParamKind.HANDLE:
        return f"{param.name}: handle"
    return f"{param.name}: {param.dtype}"


def _extent(expr: PrimExpr) -> object:
    if isinstance(expr, IntImm):
        return expr.value
    if isinstance(expr, Var):
        return expr.name
    return script(expr)


# The messages both wrappers raise: printf formats, so that the two say the same.


def argument_message(sig: FfiSignature, index: int, param: AbiParam, what: str) -> str:
    label = param.buffer.name if param.buffer is not None else f"{param.name}: {param.dtype}"
    return f"{sig.name}: argument #{index} ({label}) must be {what}, got %s"


def device_message(sig: FfiSignature, tensor: TensorParam, device: str) -> str:
    return f"{sig.name}: {tensor.name} must be on {device}, got a tensor on %s"


def same_device_message(sig: FfiSignature, tensor: TensorParam, first: TensorParam) -> str:
    return f"{sig.name}: {tensor.name} is on device %d, but {first.name} on device %d"


def rank_message(sig: FfiSignature, tensor: TensorParam) -> str:
    rank = len(tensor.shape)
    return f"{sig.name}: {tensor.name} must have {rank} dimension{'s' * (rank != 1)}, got %d"


def dtype_message(sig: FfiSignature, tensor: TensorParam, lanes: bool) -> str:
    """Formats the kind's name and the bits (and the lanes, with `lanes`)."""
    got = "%s%dx%d" if lanes else "%s%d"
    return f"{sig.name}: {tensor.name} must have dtype {tensor.param.dtype}, got {got}"


def compact_message(sig: FfiSignature, tensor: TensorParam, dimension: Dimension) -> str:
    return (
        f"{sig.name}: {tensor.name} must be compact (row-major, contiguous), but "
        f"{dimension.label} is %lld where %lld was expected"
    )


def alignment_message(sig: FfiSignature, tensor: TensorParam) -> str:
    return (
        f"{sig.name}: {tensor.name} must be aligned to {tensor.alignment} bytes, but its data "
        "is at %p (allocate it aligned, or copy it to aligned memory)"
    )


def offset_message(sig: FfiSignature, tensor: TensorParam) -> str:
    return (
        f"{sig.name}: {tensor.name}'s byte_offset %lld is not a multiple of its element size "
        f"({tensor.element_bytes})"
    )


def dimension_message(sig: FfiSignature, dimension: Dimension) -> str:
    """Formats the actual value, then (for a non-constant) the expected one, then (for a
    variable) where its value came from."""
    expected = dimension.expected
    head = f"{sig.name}: {dimension.label} is %lld"
    if isinstance(expected, IntImm):
        return f"{head}, but must be {expected.value}"
    if isinstance(expected, Var):
        return f"{head}, but must equal {expected.name} = %lld (%s)"
    assert expected is not None
    return f"{head}, but must be {_extent(expected)} = %lld"


def origin(sig: FfiSignature, var: Var) -> str:
    """Where the value of a shape variable came from, in a call that leaves it out."""
    source = sig.sources.get(var)
    return f"as {source.label} is" if source is not None else "as passed"


def is_shape_argument(sig: FfiSignature, var: Var) -> bool:
    return any(p.var is var for p in sig.params if p.kind is ParamKind.SHAPE)


def assertion_message(sig: FfiSignature) -> str:
    return f"{sig.name}: an assertion of the program failed"

"""The C ABI of a compiled function (docs/abi.md), read off the signature that make-c-abi
writes out: one pointer per typed handle parameter (a buffer the body declares over it), one
value per scalar parameter (int64 for integers and bools, float or double for floats), `void *`
for an untyped handle; the result is an int32 status, 0 on success. A scalar parameter that a
parameter buffer's shape, strides or offset use is a shape: a caller with arrays can tell it.

The function must have been through make-c-abi (no buffer_map): codegen reads what the
pipeline left and runs no pass.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from tirc.diagnostics import DiagnosticError
from tirc.ir import dtype as dt
from tirc.ir.abi import layout_vars, parameter_buffers
from tirc.ir.buffer import Buffer
from tirc.ir.dtype import DataType
from tirc.ir.expr import Var
from tirc.ir.function import PrimFunc


class ParamKind(enum.Enum):
    BUFFER = "buffer"  # a pointer to the buffer's first element
    HANDLE = "handle"  # an opaque pointer
    SCALAR = "scalar"  # a scalar parameter, passed as `abi_dtype`
    SHAPE = "shape"  # a shape variable no parameter gives, as int64


@dataclass(frozen=True)
class AbiParam:
    name: str
    kind: ParamKind
    var: Var  # the parameter, or the shape variable
    dtype: DataType  # the buffer's element type, or the scalar's own type
    buffer: Buffer | None = None

    @property
    def abi_dtype(self) -> DataType:
        """The type the C caller passes."""
        if self.kind in (ParamKind.BUFFER, ParamKind.HANDLE):
            return dt.HANDLE
        if self.dtype.kind == "float" and self.dtype.bits in (32, 64):
            return self.dtype
        if self.dtype.is_integer or self.dtype.is_bool:
            return dt.INT64
        raise DiagnosticError.at(
            self.var.span, f"the C ABI has no way to pass a {self.dtype} scalar ({self.name})"
        )


def function_abi(func: PrimFunc) -> list[AbiParam]:
    """The C parameters of `func`, which make-c-abi has given its C signature; a located error
    for a function that still binds buffers to its parameters."""
    if func.buffer_map:
        raise DiagnosticError.at(
            func.span,
            "a function that binds buffers to its parameters has no C signature yet: lower it "
            "with a pipeline that ends with make-c-abi",
        )
    buffers = parameter_buffers(func)
    shapes = {var for buffer in buffers.values() for var in layout_vars(buffer)}
    params: list[AbiParam] = []
    for param in func.params:
        buffer = buffers.get(param)
        if buffer is not None:
            params.append(AbiParam(param.name, ParamKind.BUFFER, param, buffer.dtype, buffer))
        elif param.dtype.is_handle:
            params.append(AbiParam(param.name, ParamKind.HANDLE, param, param.dtype))
        else:
            kind = ParamKind.SHAPE if param in shapes else ParamKind.SCALAR
            params.append(AbiParam(param.name, kind, param, param.dtype))
    return params

"""The C ABI of a compiled function (docs/abi.md): one pointer per buffer parameter, one
value per scalar parameter (int64 for integers and bools, float or double for floats), then
one int64 per shape variable that no parameter gives (`n` in `T.match_buffer(a, (n,))`), in
order of first appearance; the result is an int32 status, 0 on success.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from tirc.diagnostics import DiagnosticError
from tirc.ir import dtype as dt
from tirc.ir.buffer import Buffer
from tirc.ir.dtype import DataType
from tirc.ir.expr import Var
from tirc.ir.function import PrimFunc
from tirc.ir.functor import walk
from tirc.ir.node import Node


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
    params: list[AbiParam] = []
    given: set[Var] = set(func.params)
    for param in func.params:
        buffer = func.buffer_of(param)
        if buffer is not None:
            params.append(AbiParam(param.name, ParamKind.BUFFER, param, buffer.dtype, buffer))
        elif param.dtype.is_handle:
            params.append(AbiParam(param.name, ParamKind.HANDLE, param, param.dtype))
        else:
            params.append(AbiParam(param.name, ParamKind.SCALAR, param, param.dtype))
    names = {param.name for param in params}
    for _, buffer in func.buffer_map:
        given.add(buffer.data)
        for var in _free_shape_vars(buffer):
            if var in given:
                continue
            given.add(var)
            name = var.name if var.name not in names else f"{buffer.name}_{var.name}"
            names.add(name)
            params.append(AbiParam(name, ParamKind.SHAPE, var, var.dtype))
    return params


def _free_shape_vars(buffer: Buffer) -> list[Var]:
    found: dict[Var, None] = {}

    def visit(node: Node) -> None:
        if isinstance(node, Var):
            found.setdefault(node, None)

    for part in (*buffer.shape, *buffer.strides, buffer.elem_offset):
        if part is not None:
            walk(part, visit)
    return list(found)

"""Kernel and C-ABI facts of a lowered function, shared by the passes that make them and the
backends, interpreter and runtime that read them: which functions are kernels
(split-host-device's `tirc.kernel` attribute), how a host spells a launch
(`T.call_extern("int32", "f_kernel", args...)`), which scalar types C can pass, the variables
of a buffer's layout, the buffer over each pointer parameter, and the type a function returns
with `T.ret` (docs/abi.md).
"""

from __future__ import annotations

from collections.abc import Container

from tirc.ir import expr as E
from tirc.ir import stmt as S
from tirc.ir.buffer import Buffer
from tirc.ir.dtype import DataType
from tirc.ir.expr import Var
from tirc.ir.function import PrimFunc
from tirc.ir.functor import walk
from tirc.ir.node import Node

KERNEL_ATTR = "tirc.kernel"
LAUNCH_KEYS = ("thread_extent", "virtual_thread")
EXTERN_CALL = "call_extern"
EXTERN_CALLS = (EXTERN_CALL, "call_pure_extern")  # a call of a C function by name
RETURN_CALL = "ret"


def is_kernel(func: PrimFunc) -> bool:
    return bool(func.attrs.get(KERNEL_ATTR, False))


def launched_kernel(stmt: S.Stmt, kernels: Container[str]) -> E.Call | None:
    """The call of `T.call_extern("int32", "k", ...)` when `stmt` is one and k a kernel."""
    if not isinstance(stmt, S.Evaluate):
        return None
    call = stmt.value
    if not (isinstance(call, E.Call) and call.op == EXTERN_CALL and call.args):
        return None
    name = call.args[0]
    return call if isinstance(name, E.StringImm) and name.value in kernels else None


def has_c_type(dtype: DataType) -> bool:
    """Whether a scalar parameter of this type can be passed from C."""
    if dtype.is_vector:
        return False
    return dtype.is_integer or dtype.is_bool or (dtype.is_float and dtype.bits in (32, 64))


def returned_type(func: PrimFunc) -> DataType | None:
    """The type of the value the function returns (`-> T.float32`, `return x`): its declared
    return type, else that of its first `T.ret`; None for a function that returns no value
    (its C result is a status)."""
    if func.ret_type is not None and not func.ret_type.is_void:
        return func.ret_type
    found: list[DataType] = []

    def visit(node: Node) -> None:
        if isinstance(node, E.Call) and node.op == RETURN_CALL and not found:
            found.append(node.dtype)

    walk(func.body, visit)
    return found[0] if found else None


def layout_vars(buffer: Buffer) -> list[E.Var]:
    """The variables of a buffer's shape, strides and offset, in order of appearance."""
    found: dict[E.Var, None] = {}

    def visit(node: Node) -> None:
        if isinstance(node, E.Var):
            found.setdefault(node, None)

    for part in (*buffer.shape, *buffer.strides, buffer.elem_offset):
        if part is not None:
            walk(part, visit)
    return list(found)


def parameter_buffers(func: PrimFunc) -> dict[Var, Buffer]:
    """The buffer over each pointer parameter: the first the function's leading declarations
    declare over it (make-c-abi's), or its buffer_map entry before make-c-abi."""
    if func.buffer_map:
        return {param: buffer for param, buffer in func.buffer_map}
    params = {param for param in func.params if param.dtype.is_handle}
    found: dict[Var, Buffer] = {}
    stmt: S.Stmt | None = func.body
    while stmt is not None:
        first = stmt.stmts[0] if isinstance(stmt, S.SeqStmt) else stmt
        if not isinstance(first, S.DeclBuffer):
            break
        data = first.buffer.data
        if data in params and first.data in (None, data):
            found.setdefault(data, first.buffer)
        if not isinstance(stmt, S.SeqStmt):
            break
        stmt = S.seq(*stmt.stmts[1:]) if len(stmt.stmts) > 1 else None
    return found

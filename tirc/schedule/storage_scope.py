"""A schedule primitive's storage scope argument checked, and a buffer moved to another scope
or dtype; what the scopes mean is analysis/storage_scope.py.
"""

from __future__ import annotations

import dataclasses

from tirc.analysis.storage_scope import scope_rank
from tirc.ir.buffer import Buffer
from tirc.ir.dtype import DataType
from tirc.ir.expr import PointerType, Var
from tirc.schedule.errors import ScheduleError
from tirc.schedule.sref import SRef


def check_storage_scope(scope: object, *subjects: SRef) -> str:
    if not isinstance(scope, str) or scope_rank(scope) is None:
        raise ScheduleError(
            f"the storage scope {scope!r} is not valid (scopes are global, shared, warp, "
            "local, wmma.matrix_a, wmma.matrix_b, wmma.accumulator, texture or "
            "metal.simdgroup, optionally with a tag such as shared.dyn)",
            *subjects,
        )
    return scope


def with_scope(buffer: Buffer, scope: str) -> Buffer:
    """A new buffer like `buffer` in `scope`, named `<name>_<scope>`."""
    data = buffer.data
    pointer = PointerType(buffer.dtype, scope)
    new_data = Var(f"{data.name}_{scope}", data.dtype, pointer)
    return dataclasses.replace(buffer, name=f"{buffer.name}_{scope}", data=new_data)


def with_dtype(buffer: Buffer, dtype: DataType) -> Buffer:
    """A new buffer like `buffer` holding `dtype` elements (same name)."""
    data = buffer.data
    pointer = PointerType(dtype, buffer.scope)
    new_data = Var(data.name, data.dtype, pointer)
    return dataclasses.replace(buffer, data=new_data, dtype=dtype)

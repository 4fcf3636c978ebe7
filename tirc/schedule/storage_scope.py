"""Storage scopes: which scope names are valid, and a buffer moved to another scope.

A scope is a memory level (`global`, `shared`, `warp`, `local`, the wmma fragments, ...)
optionally followed by a tag (`shared.dyn`, `global.texture`); the level decides which
thread loops a cache in that scope is shared across (`can_relax_under_thread`).
"""

from __future__ import annotations

import dataclasses

from tirc.ir.buffer import Buffer
from tirc.ir.dtype import DataType
from tirc.ir.expr import PointerType, Var
from tirc.schedule.errors import ScheduleError
from tirc.schedule.sref import SRef

# Memory levels by rank, as prefixes of a scope name; a longer prefix takes precedence.
_LEVELS: tuple[tuple[str, int], ...] = (
    ("global", 0),
    ("shared", 1),
    ("warp", 2),
    ("local", 3),
    ("wmma.matrix_a", 4),
    ("wmma.matrix_b", 5),
    ("wmma.accumulator", 6),
    ("texture", 7),
    ("metal.simdgroup", 8),
)
GLOBAL, SHARED, WARP, LOCAL = 0, 1, 2, 3


def scope_rank(scope: str) -> int | None:
    """The memory level of `scope` (an empty name is global), or None if it names none."""
    if scope == "":
        return GLOBAL
    for prefix, rank in _LEVELS:
        if scope.startswith(prefix):
            return rank
    return None


def check_storage_scope(scope: object, *subjects: SRef) -> str:
    if not isinstance(scope, str) or scope_rank(scope) is None:
        raise ScheduleError(
            f"the storage scope {scope!r} is not valid (scopes are global, shared, warp, "
            "local, wmma.matrix_a, wmma.matrix_b, wmma.accumulator, texture or "
            "metal.simdgroup, optionally with a tag such as shared.dyn)",
            *subjects,
        )
    return scope


def thread_rank(tag: str) -> tuple[int, int]:
    """(rank, dimension) of a thread tag: blocks are rank 0, threads and vthreads rank 1."""
    if tag.startswith("blockIdx."):
        return 0, ord(tag[9]) - ord("x")
    if tag.startswith("threadIdx."):
        return 1, ord(tag[10]) - ord("x")
    return 1, -1  # vthread, cthread


def can_relax_under_thread(scope: str, tag: str) -> bool:
    """Whether one buffer of `scope` is shared by the iterations of a loop bound to `tag`
    (by rank: a shared buffer across threads and virtual threads, not across blocks)."""
    storage = scope_rank(scope)
    rank, dimension = thread_rank(tag)
    if storage == WARP:  # warp memory is shared along threadIdx.x only
        return rank == 1 and dimension == 0
    return storage is not None and storage <= rank


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

"""Storage scopes: which scope names are valid, and which thread loops share a buffer.

A scope is a memory level (`global`, `shared`, `warp`, `local`, the wmma fragments, ...)
optionally followed by a tag (`shared.dyn`, `global.texture`); the level decides which
thread loops a buffer in that scope is shared across (`can_relax_under_thread`).
"""

from __future__ import annotations

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

"""Compaction under thread loops, in the interpreter's thread model: lowered for cuda (where
lift-thread-binding puts the thread loops around the allocations before compaction), a shared
tile that threads exchange keeps every thread's element, and the kernel computes what the
program does without a shared-memory race; a local buffer shrinks to one thread's part."""

from __future__ import annotations

from pathlib import Path

from tests.transform.helpers import lowered_computes_the_same
from tirc.ir import stmt as S
from tirc.ir.functor import walk

PROGRAM = Path(__file__).parent / "programs" / "shared_transpose.tir"


def test_shared_tile_spans_the_threads_and_computes_the_same() -> None:
    lowered, _, _ = lowered_computes_the_same(PROGRAM, 5)  # a race would be an error
    shapes: dict[str, tuple[int, ...]] = {}

    def record(node: object) -> None:
        if isinstance(node, S.AllocBuffer):
            shapes[node.buffer.name] = tuple(int(e.value) for e in node.buffer.shape)  # type: ignore[attr-defined]

    walk(lowered, record)  # the host function and its kernel
    assert shapes == {"A_shared": (256,), "T_local": (1,)}

"""Extension points: Python implementations of intrinsics and extern functions.

Code outside the interpreter adds entries here (the wmma intrinsics do, in interp/wmma.py).
An implementation receives the call's evaluated arguments: ints, floats, bools, tuples for
vectors, strings, and Storage or Pointer objects for handles; it returns the call's value.
"""

from __future__ import annotations

from collections.abc import Callable

# intrinsic name (Call.op) -> implementation
INTRINSICS: dict[str, Callable[..., object]] = {}

# extern function name (the first argument of T.call_extern / T.call_pure_extern) -> implementation
EXTERNS: dict[str, Callable[..., object]] = {}


def _dp4a(a: tuple[int, ...] | int, b: tuple[int, ...] | int, c: int) -> int:
    """CUDA's __dp4a: the dot product of four packed 8-bit lanes, plus c (int32 wrap)."""
    left = a if isinstance(a, tuple) else _bytes(a)
    right = b if isinstance(b, tuple) else _bytes(b)
    total = sum(x * y for x, y in zip(left, right, strict=True)) + c
    return ((total + (1 << 31)) & 0xFFFFFFFF) - (1 << 31)


def _bytes(packed: int) -> tuple[int, ...]:
    raw = [(packed >> (8 * lane)) & 0xFF for lane in range(4)]
    return tuple(v - 256 if v >= 128 else v for v in raw)


EXTERNS.setdefault("__dp4a", _dp4a)

"""Threads and warp collectives: how a thread's (or block's) linear number splits into (x, y,
z), the warp's size, and which lane a shuffle reads (for one lane or numpy lanes alike)."""

from __future__ import annotations

from typing import Any

import numpy as np

WARP_SIZE = 32
SHUFFLE_INDEX, SHUFFLE_UP, SHUFFLE_DOWN = 0, 1, 2  # tvm_warp_shuffle, _up, _down
SHUFFLES = {"tvm_warp_shuffle": SHUFFLE_INDEX, "tvm_warp_shuffle_up": SHUFFLE_UP}
SHUFFLES["tvm_warp_shuffle_down"] = SHUFFLE_DOWN


def split_linear(linear: Any, dims: tuple[int, int, int]) -> tuple[Any, Any, Any]:
    """(x, y, z) of a linear thread number in a block of dims (or block number in a grid), x
    fastest, as both models number threads."""
    return linear % dims[0], linear // dims[0] % dims[1], linear // (dims[0] * dims[1])


def shuffle_source(kind: int, lane: Any, amount: Any, width: Any) -> Any:
    """The lane of the warp that `lane` reads in CUDA's __shfl*_sync over segments of `width`
    lanes: up and down keep their own lane where the source would leave the segment. The
    caller gives a lane its own value where the source is absent or not executing (the
    hardware's value there is undefined)."""
    base = lane - lane % width
    if kind == SHUFFLE_INDEX:
        return base + amount % width
    if kind == SHUFFLE_UP:
        return _pick(lane - amount >= base, lane - amount, lane)
    return _pick(lane + amount < base + width, lane + amount, lane)


def _pick(condition: Any, chosen: Any, other: Any) -> Any:
    if isinstance(condition, np.ndarray):
        return np.where(condition, chosen, other)
    return chosen if condition else other

"""What the wmma intrinsics (tensor-core fragments) compute, for both models.

A fragment buffer holds fragments of m x n (or m x k, k x n) elements, row-major, fragment
`index` at element index * size. Each thread computes the whole fragment (fragments are its
own memory), which gives the warp's result without modelling lane ownership. Tiles of memory
are read and written row by row; mma computes in float64.
"""

from __future__ import annotations

import numpy as np

# The m, n, k of an mma are not arguments; the common wmma shape is assumed unless the
# fragments' scopes say otherwise (a registered replacement can do better).
MMA_SHAPE = (16, 16, 16)


def fragment_shape(scope: str | None, m: int, n: int, k: int) -> tuple[int, int]:
    """(rows, cols) of one fragment of an m x n x k mma in a buffer of this scope."""
    if scope == "wmma.matrix_a":
        return m, k
    if scope == "wmma.matrix_b":
        return k, n
    return m, n


def tile(rows: int, cols: int, row_major: bool) -> tuple[np.ndarray, np.ndarray]:
    """(major, minor) parts of the offsets of a (rows, cols) tile of memory, row by row: the
    element (r, c) lies at major * stride + minor (any layout but row_major is column-major)."""
    r, c = np.meshgrid(np.arange(rows), np.arange(cols), indexing="ij")
    if row_major:
        return r.ravel(), c.ravel()
    return c.ravel(), r.ravel()


def multiply_accumulate(left: np.ndarray, right: np.ndarray, accumulator: np.ndarray) -> np.ndarray:
    """A @ B + C for rows of lanes' fragments ((count or 1, m * k), (., k * n), (., m * n))
    in float64, as (count, m * n)."""
    m, n, k = MMA_SHAPE
    count = max(left.shape[0], right.shape[0], accumulator.shape[0])
    product = np.matmul(
        np.broadcast_to(left, (count, m * k)).reshape(count, m, k),
        np.broadcast_to(right, (count, k * n)).reshape(count, k, n),
    ).reshape(count, m * n)
    return product + accumulator

"""What the wmma intrinsics (tensor-core fragments) compute, for both models.

A fragment buffer holds fragments of m x n (or m x k, k x n) elements, row-major, fragment
`index` at element index * size; an mma's (m, n, k) is its fragments' shape
(analysis.wmma_fragments.mma_shape). Each thread computes the whole fragment (fragments are its
own memory), which gives the warp's result without modelling lane ownership. Tiles of memory
are read and written row by row; mma computes in float64.
"""

from __future__ import annotations

import numpy as np

from tirc.interp.memory.storage import access_type
from tirc.interp.semantics import arith
from tirc.interp.semantics.values import encode
from tirc.ir.dtype import DataType
from tirc.ir.integer import int_range


def tile(rows: int, cols: int, row_major: bool) -> tuple[np.ndarray, np.ndarray]:
    """(major, minor) parts of the offsets of a (rows, cols) tile of memory, row by row: the
    element (r, c) lies at major * stride + minor (any layout but row_major is column-major)."""
    r, c = np.meshgrid(np.arange(rows), np.arange(cols), indexing="ij")
    if row_major:
        return r.ravel(), c.ravel()
    return c.ravel(), r.ravel()


def multiply_accumulate(
    left: np.ndarray, right: np.ndarray, accumulator: np.ndarray, shape: tuple[int, int, int]
) -> np.ndarray:
    """A @ B + C for rows of lanes' fragments ((count or 1, m * k), (., k * n), (., m * n))
    of an mma of this (m, n, k), in float64, as (count, m * n)."""
    m, n, k = shape
    count = max(left.shape[0], right.shape[0], accumulator.shape[0])
    product = np.matmul(
        np.broadcast_to(left, (count, m * k)).reshape(count, m, k),
        np.broadcast_to(right, (count, k * n)).reshape(count, k, n),
    ).reshape(count, m * n)
    return product + accumulator


def to_memory(values: np.ndarray, dtype: DataType) -> tuple[np.ndarray, np.ndarray | None]:
    """Memory's representation of tile values (float64, or integers) stored as `dtype`
    elements, and where a value does not fit an integer dtype (None for a float dtype, which
    rounds): a float truncates toward zero, as C's conversion does."""
    if dtype.is_float:
        return encode(values.astype(np.float64, copy=False), dtype), None
    low, high = int_range(dtype)
    if values.dtype.kind == "f":
        return arith.lanes_float_to_int(values, low, high, access_type(dtype))
    return values.astype(access_type(dtype)), (values < low) | (values > high)


def outside_tile(verb: str, name: str, element: int, limit: int) -> str:
    """The fault of a tile's element outside its memory, in both models."""
    return f"{verb} {name} at element {element}, outside [0, {limit}) (memory access out of bounds)"


def does_not_fit(verb: str, name: str, value: object, dtype: DataType) -> str:
    """The fault of a stored value that does not fit an integer dtype, in both models."""
    return f"{verb} {name}: {value!r} does not fit {dtype}"

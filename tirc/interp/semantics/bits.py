"""Bit-level intrinsics: reinterpret (a bit cast between equal-width types, on lanes; one lane
is one row) and the fixed-point multiplies of quantized kernels (q_multiply_shift), computed on
exact integers."""

from __future__ import annotations

import numpy as np

from tirc.interp.memory.storage import access_type
from tirc.interp.semantics.values import decode, encode, value_type
from tirc.ir.dtype import DataType, make
from tirc.ir.integer import wrap


def reinterpret(value: object, source: DataType, target: DataType) -> object:
    """value's bits (of dtype source) seen as target: numpy lanes (rows, vector lanes) give
    numpy lanes; one lane (a scalar, or a tuple for a vector) is one row and gives one lane."""
    if isinstance(value, np.ndarray):
        return decode(reinterpret_bits(encode(value, source), target), target)
    row = np.array([value if isinstance(value, tuple) else (value,)], dtype=value_type(source))
    result = reinterpret(row, source, target)
    assert isinstance(result, np.ndarray)
    lanes = result[0].tolist()
    return lanes[0] if target.lanes == 1 else tuple(lanes)


def reinterpret_bits(raw: np.ndarray, target: DataType) -> np.ndarray:
    """Memory's representation of `target` lanes whose bits are those of `raw` (rows of
    memory's representation of the source lanes; lanes regroup within each row's bytes)."""
    rows = raw.shape[0]
    return np.ascontiguousarray(raw).view(np.uint8).reshape(rows, -1).view(access_type(target))


def q_multiply_shift(x: int, y: int, q: int, s: int, bits: int) -> int:
    """round(x * y * 2**(s - q)), rounding half up: Q-number multiply then shift by s."""
    left = max(s, 0)
    right = max(-s, 0) + q
    product = (x << left) * y
    if right > 0:
        product = (product + (1 << (right - 1))) >> right
    return wrap(product, make("int", bits))


def q_multiply_shift_per_axis(
    x: int,
    y: int,
    left: int,
    right: int,
    q: int,
    left_required: bool,
    right_required: bool,
    bits: int,
) -> int:
    """As q_multiply_shift with separate left and right shifts (per-channel requantization)."""
    product = (x << left if left_required else x) * y
    total = q + (right if right_required else 0)
    if total > 0:
        product = (product + (1 << (total - 1))) >> total
    return wrap(product, make("int", bits))

"""Bit-level intrinsics: reinterpret (a bit cast between equal-width types) and the fixed-point
multiplies of quantized kernels (q_multiply_shift), computed on exact integers."""

from __future__ import annotations

import numpy as np

from tirc.interp.memory.storage import access_type
from tirc.interp.semantics.values import NARROW
from tirc.ir.dtype import make, parse_dtype
from tirc.ir.integer import wrap


def reinterpret(value: object, source: str, target: str) -> object:
    """The value of `target` whose bits are those of `value` (scalars or tuples of lanes)."""
    if isinstance(value, tuple):
        source_type, target_type = parse_dtype(source), parse_dtype(target)
        if source_type.lanes != target_type.lanes:
            # lanes regroup: go through the raw bytes
            raw = _to_array(value, str(source_type.element)).tobytes()
            return tuple(_from_bytes(raw, str(target_type.element)))
        return tuple(
            reinterpret(v, str(source_type.element), str(target_type.element)) for v in value
        )
    raw = _to_array((value,), source).tobytes()
    result = _from_bytes(raw, target)
    return result[0] if len(result) == 1 else tuple(result)


def _to_array(values: tuple, kind: str) -> np.ndarray:
    narrow = NARROW.get(kind)
    if narrow is not None:
        return np.array([narrow.encode(v) for v in values], dtype=access_type(parse_dtype(kind)))
    return np.array(values, dtype=access_type(parse_dtype(kind)))


def _from_bytes(raw: bytes, kind: str) -> list:
    items = np.frombuffer(raw, dtype=access_type(parse_dtype(kind))).tolist()
    narrow = NARROW.get(kind)
    if narrow is not None:
        return [narrow.values[v] for v in items]
    return items


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

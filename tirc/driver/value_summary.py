"""A buffer's contents in one short line for `tirc run`'s summary: mean, least and greatest
value (and how many are not finite), and a CRC-32 of its bytes to tell two runs apart."""

from __future__ import annotations

import zlib

import numpy as np


def describe_values(array: np.ndarray) -> str:
    """`mean 0.4981  min 0.0003  max 0.9998  crc32 1a2b3c4d`; `empty` for no elements."""
    if array.size == 0:
        return "empty"
    checksum = f"crc32 {zlib.crc32(np.ascontiguousarray(array).tobytes()):08x}"
    try:
        values = array.astype(np.float64)
    except (TypeError, ValueError):  # a dtype numpy cannot widen: the checksum alone
        return checksum
    finite = np.isfinite(values)
    parts = []
    if finite.any():
        kept = values[finite]
        parts += [f"mean {kept.mean():.4g}", f"min {kept.min():.4g}", f"max {kept.max():.4g}"]
    if not finite.all():
        parts.append(f"{int((~finite).sum())} not finite")
    return "  ".join([*parts, checksum])

"""Buffers and the regions of them that blocks read and write.

A Buffer is a typed, shaped view of memory at its `data` handle. Buffers compare by identity;
two buffers may share `data` only through `match_buffer` or `T.decl_buffer(data=...)`. The
class lives in `tirc.ir.expr` beside `BufferLoad`, which holds one; it is imported from here.
"""

from __future__ import annotations

from dataclasses import dataclass

from tirc.ir import dtype as dt
from tirc.ir.dtype import DataType
from tirc.ir.expr import Buffer, IntImm, PointerType, PrimExpr, Var
from tirc.ir.node import IRError, Node

__all__ = ["Buffer", "BufferRegion", "MatchBufferRegion", "Range", "make_buffer"]


@dataclass(frozen=True, slots=True, eq=False)
class Range(Node):
    """The half-open interval [min, min + extent)."""

    min: PrimExpr
    extent: PrimExpr

    @staticmethod
    def from_min_extent(min_value: PrimExpr, extent: PrimExpr) -> Range:
        return Range(min_value, extent)


@dataclass(frozen=True, slots=True, eq=False)
class BufferRegion(Node):
    """`buffer[m0 : m0 + e0, ...]`: a rectangular region, one Range per dimension."""

    buffer: Buffer
    region: tuple[Range, ...]

    def __post_init__(self) -> None:
        if len(self.region) != self.buffer.ndim:
            raise IRError(
                f"region of {self.buffer.name} has {len(self.region)} dimensions, "
                f"the buffer has {self.buffer.ndim}"
            )

    @staticmethod
    def full(buffer: Buffer) -> BufferRegion:
        zero = [IntImm(0, extent.dtype) for extent in buffer.shape]
        return BufferRegion(
            buffer, tuple(Range(z, e) for z, e in zip(zero, buffer.shape, strict=True))
        )


@dataclass(frozen=True, slots=True, eq=False)
class MatchBufferRegion(Node):
    """`buffer = T.match_buffer(source[...], ...)` inside a block: a view of a region."""

    buffer: Buffer
    source: BufferRegion


def make_buffer(
    name: str,
    shape: tuple[PrimExpr, ...],
    dtype: DataType = dt.FLOAT32,
    scope: str = "global",
    *,
    strides: tuple[PrimExpr, ...] = (),
    elem_offset: PrimExpr | None = None,
    data_alignment: int = 64,
    offset_factor: int = 1,
    axis_separators: tuple[int, ...] = (),
    buffer_type: str = "default",
) -> Buffer:
    """A buffer with a fresh data handle named after it; the keywords are Buffer's fields."""
    data = Var(name, dt.HANDLE, PointerType(dtype, scope))
    return Buffer(
        name,
        data,
        dtype,
        tuple(shape),
        strides=strides,
        elem_offset=elem_offset,
        data_alignment=data_alignment,
        offset_factor=offset_factor,
        axis_separators=axis_separators,
        buffer_type=buffer_type,
    )

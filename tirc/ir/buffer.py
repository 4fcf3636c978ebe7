"""Buffers and the regions of them that blocks read and write.

A Buffer is a typed, shaped view of memory at its `data` handle. Buffers compare by identity;
two buffers may share `data` only through `match_buffer` or `T.decl_buffer(data=...)`.
"""

from __future__ import annotations

from dataclasses import dataclass

from tirc.ir import dtype as dt
from tirc.ir.dtype import DataType
from tirc.ir.expr import IntImm, PrimExpr, Var
from tirc.ir.node import IRError, Node


@dataclass(frozen=True, slots=True, eq=False)
class Buffer(Node):
    name: str
    data: Var  # a handle; its pointer type names the element type and storage scope
    dtype: DataType
    shape: tuple[PrimExpr, ...]
    strides: tuple[PrimExpr, ...] = ()  # empty: compact row-major
    elem_offset: PrimExpr | None = None  # None: zero
    data_alignment: int = 64
    offset_factor: int = 1
    axis_separators: tuple[int, ...] = ()
    buffer_type: str = "default"  # or "auto_broadcast"

    def __post_init__(self) -> None:
        if self.strides and len(self.strides) != len(self.shape):
            raise IRError(
                f"buffer {self.name} has {len(self.shape)} dimensions "
                f"but {len(self.strides)} strides"
            )

    @property
    def scope(self) -> str:
        return self.data.pointer.scope if self.data.pointer is not None else "global"

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def index_dtype(self) -> DataType:
        """The dtype of this buffer's index arithmetic: that of its shape, the widest of its
        extents' when they differ (TVM builds `T.Buffer((T.int64(16), 16))`)."""
        widest: DataType | None = None
        for extent in self.shape:
            if widest is None or extent.dtype.bits > widest.bits:
                widest = extent.dtype
        return widest if widest is not None else dt.INT32


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
    **fields: object,
) -> Buffer:
    """A buffer with a fresh data handle named after it."""
    from tirc.ir.expr import PointerType

    data = Var(name, dt.HANDLE, PointerType(dtype, scope))
    return Buffer(name, data, dtype, tuple(shape), **fields)  # type: ignore[arg-type]

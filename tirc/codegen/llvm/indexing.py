"""The flat element index of a buffer access, as an IR expression: the backend's memory
rules address a buffer through it, and `streaming` asks it whether a store covers whole cache
lines."""

from __future__ import annotations

from tirc.ir import expr as E
from tirc.ir.buffer import Buffer


def flat_index(buffer: Buffer, indices: tuple[E.PrimExpr, ...]) -> E.PrimExpr:
    """One index for a multi-dimensional access (lowered programs are already flat)."""
    if len(indices) == 1:
        return indices[0]
    strides = list(buffer.strides)
    if not strides:
        running: E.PrimExpr = E.IntImm(1, indices[-1].dtype.element)
        for extent in reversed(buffer.shape):
            strides.insert(0, running)
            running = E.Mul(running, _as(extent, running))
    total: E.PrimExpr | None = None
    for index, stride in zip(indices, strides, strict=True):
        term = _scaled(index, stride)
        total = term if total is None else _add(total, term)
    assert total is not None
    return total


def _as(expr: E.PrimExpr, like: E.PrimExpr) -> E.PrimExpr:
    want = like.dtype.element
    return expr if expr.dtype == want else E.Cast(want, expr)


def _scaled(index: E.PrimExpr, stride: E.PrimExpr) -> E.PrimExpr:
    lanes = index.dtype.lanes
    stride = _as(stride, index)
    return E.Mul(index, E.Broadcast(stride, lanes) if lanes > 1 else stride)


def _add(a: E.PrimExpr, b: E.PrimExpr) -> E.PrimExpr:
    lanes_a, lanes_b = a.dtype.lanes, b.dtype.lanes
    if lanes_a != lanes_b:
        a = E.Broadcast(a, lanes_b) if lanes_a == 1 else a
        b = E.Broadcast(b, lanes_a) if lanes_b == 1 else b
    if a.dtype != b.dtype:
        b = E.Cast(a.dtype, b)
    return E.Add(a, b)

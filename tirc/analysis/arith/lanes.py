"""Integer vector arithmetic of ramps and broadcasts, lane by lane: what lets a vector index
built in pieces (a ramp over the last axis, offsets of the others added as broadcasts)
become one ramp again, so that backends see a contiguous access they can issue as one
vector load or store.

Lane i of Ramp(b, s, n) is b + i * s and of Broadcast(x, n) is x, so

    Ramp(b, s) + Broadcast(x)  = Ramp(b + x, s)
    Ramp(b, s) - Broadcast(x)  = Ramp(b - x, s)
    Broadcast(x) - Ramp(b, s)  = Ramp(x - b, -s)
    Ramp(b, s) + Ramp(c, t)    = Ramp(b + c, s + t)
    Ramp(b, s) * Broadcast(x)  = Ramp(b * x, s * x)
    Broadcast(x) + Broadcast(y) = Broadcast(x + y)

lane for lane, in any integer type (they hold under wrapping too: each lane's sum is the same
sum of the same values). Scalable vectors and floats are left alone."""

from __future__ import annotations

from tirc.ir import expr as E
from tirc.ir.expr import PrimExpr


def fold_lanes(node: E.BinaryOp) -> PrimExpr | None:
    """`node` (an integer vector Add, Sub or Mul) as one Ramp or Broadcast, or None."""
    a, b = node.a, node.b
    if not node.dtype.is_integer or _scalable(a) or _scalable(b):
        return None
    if isinstance(node, E.Add):
        return _add(a, b)
    if isinstance(node, E.Sub):
        return _sub(a, b)
    if isinstance(node, E.Mul):
        return _mul(a, b) or _mul(b, a)
    return None


def _scalable(expr: PrimExpr) -> bool:
    return isinstance(expr, (E.Ramp, E.Broadcast)) and expr.scalable


def _add(a: PrimExpr, b: PrimExpr) -> PrimExpr | None:
    if isinstance(a, E.Broadcast) and isinstance(b, E.Broadcast):
        return E.Broadcast(E.Add(a.value, b.value), a.lanes)
    if isinstance(a, E.Ramp) and isinstance(b, E.Broadcast):
        return E.Ramp(E.Add(a.base, b.value), a.stride, a.lanes)
    if isinstance(a, E.Broadcast) and isinstance(b, E.Ramp):
        return E.Ramp(E.Add(a.value, b.base), b.stride, b.lanes)
    if isinstance(a, E.Ramp) and isinstance(b, E.Ramp):
        return E.Ramp(E.Add(a.base, b.base), E.Add(a.stride, b.stride), a.lanes)
    return None


def _sub(a: PrimExpr, b: PrimExpr) -> PrimExpr | None:
    if isinstance(a, E.Broadcast) and isinstance(b, E.Broadcast):
        return E.Broadcast(E.Sub(a.value, b.value), a.lanes)
    if isinstance(a, E.Ramp) and isinstance(b, E.Broadcast):
        return E.Ramp(E.Sub(a.base, b.value), a.stride, a.lanes)
    if isinstance(a, E.Broadcast) and isinstance(b, E.Ramp):
        negated = E.Sub(E.IntImm(0, b.stride.dtype), b.stride)
        return E.Ramp(E.Sub(a.value, b.base), negated, b.lanes)
    if isinstance(a, E.Ramp) and isinstance(b, E.Ramp):
        return E.Ramp(E.Sub(a.base, b.base), E.Sub(a.stride, b.stride), a.lanes)
    return None


def _mul(a: PrimExpr, b: PrimExpr) -> PrimExpr | None:
    if isinstance(a, E.Broadcast) and isinstance(b, E.Broadcast):
        return E.Broadcast(E.Mul(a.value, b.value), a.lanes)
    if isinstance(a, E.Ramp) and isinstance(b, E.Broadcast):
        return E.Ramp(E.Mul(a.base, b.value), E.Mul(a.stride, b.value), a.lanes)
    return None

"""narrow-datatype: int64 loops and index arithmetic become int32 where their bounds fit.

A loop whose int64 variable ranges within `target_bits` gets a narrow variable; index
expressions (buffer indices, loop bounds, the operands of comparisons, integer casts) that
only involve such variables and constants, and whose bounds fit, are rebuilt in the narrow
type; elsewhere a narrowed variable reads as `T.Cast("int64", v)`. Buffer shapes are left as
they are (TVM 0.27 also narrows constant `T.decl_buffer` shapes; tirc does not yet).

Expects tir; leaves tir:

    for i in range(T.int64(16)):                  for i in range(16):
        B[i * T.int64(4)] = A[i * T.int64(4)]  ->     B[i * 4] = A[i * 4]
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from tirc.analysis.arith.bound import Bound, const_bound
from tirc.ir import dtype as dt
from tirc.ir import expr as E
from tirc.ir import stmt as S
from tirc.ir.function import PrimFunc
from tirc.ir.functor import Mutator
from tirc.transform.pass_base import Dialect, FunctionPass

_ARITHMETIC = (E.Add, E.Sub, E.Mul, E.FloorDiv, E.FloorMod, E.Div, E.Mod, E.Min, E.Max)


class _Narrower(Mutator):
    def __init__(self, bits: int):
        self.wide = dt.INT64
        self.narrow = dt.make("int", bits)
        self.low, self.high = -(2 ** (bits - 1)), 2 ** (bits - 1) - 1
        self.ranges: dict[E.Var, Bound] = {}
        self.vars: dict[E.Var, E.Var] = {}

    # -- narrow forms ------------------------------------------------------------------------

    def narrowed(self, expr: E.PrimExpr) -> E.PrimExpr | None:
        """`expr` in the narrow type, or None when it has no narrow form that fits."""
        if expr.dtype is not self.wide:
            return None
        if not const_bound(expr, self.ranges).is_within(self.low, self.high):
            return None
        return self._rebuild(expr)

    def _rebuild(self, expr: E.PrimExpr) -> E.PrimExpr | None:
        if isinstance(expr, E.IntImm):
            return E.IntImm(expr.value, self.narrow)
        if isinstance(expr, E.Var):
            return self.vars.get(expr)
        if isinstance(expr, E.Cast) and expr.value.dtype is self.narrow:
            return self.visit(expr.value)
        if isinstance(expr, _ARITHMETIC):
            a, b = self._rebuild(expr.a), self._rebuild(expr.b)
            if a is None or b is None:
                return None
            return type(expr)(a, b)
        return None

    def index(self, expr: E.PrimExpr) -> E.PrimExpr:
        found = self.narrowed(expr)
        return found if found is not None else self.visit(expr)

    # -- expressions -------------------------------------------------------------------------

    def visit_Var(self, node: E.Var) -> E.PrimExpr:
        new = self.vars.get(node)
        return node if new is None else E.Cast(self.wide, new)

    def visit_Cast(self, node: E.Cast) -> E.PrimExpr:
        found = self.narrowed(node.value)
        if found is None:
            return self.generic_visit(node)
        if node.dtype is self.narrow:
            return found
        return E.Cast(node.dtype, found)

    def visit_CompareOp(self, node: E.CompareOp) -> E.PrimExpr:
        a, b = self.narrowed(node.a), self.narrowed(node.b)
        if a is None or b is None:
            return self.generic_visit(node)
        return type(node)(a, b)

    def visit_BufferLoad(self, node: E.BufferLoad) -> E.PrimExpr:
        indices = tuple(self.index(i) for i in node.indices)
        predicate = None if node.predicate is None else self.visit(node.predicate)
        unchanged = all(a is b for a, b in zip(indices, node.indices, strict=True))
        if predicate is node.predicate and unchanged:
            return node
        return dataclasses.replace(node, indices=indices, predicate=predicate)

    # -- statements --------------------------------------------------------------------------

    def visit_BufferStore(self, node: S.BufferStore) -> S.Stmt:
        indices = tuple(self.index(i) for i in node.indices)
        value = self.visit(node.value)
        predicate = None if node.predicate is None else self.visit(node.predicate)
        if (
            value is node.value
            and predicate is node.predicate
            and all(a is b for a, b in zip(indices, node.indices, strict=True))
        ):
            return node
        return dataclasses.replace(node, indices=indices, value=value, predicate=predicate)

    def visit_For(self, node: S.For) -> S.Stmt:
        var = node.loop_var
        start, extent = self.index(node.min), self.index(node.extent)
        if var.dtype is self.wide and start.dtype is self.narrow and extent.dtype is self.narrow:
            low = const_bound(node.min, self.ranges)
            high = const_bound(E.Add(node.min, node.extent), self.ranges)
            if low.min is not None and high.max is not None:
                self.ranges[var] = Bound(low.min, max(low.min, high.max - 1))
                self.vars[var] = E.Var(var.name, self.narrow, span=var.span)
        body = self.visit(node.body)
        new_var = self.vars.get(var, var)
        if new_var is var and (start.dtype is not var.dtype or extent.dtype is not var.dtype):
            start, extent = self.visit(node.min), self.visit(node.extent)  # the loop stays wide
        unchanged = new_var is var and start is node.min and extent is node.extent
        if unchanged and body is node.body:
            return node
        return dataclasses.replace(node, loop_var=new_var, min=start, extent=extent, body=body)


@dataclass(frozen=True)
class NarrowDatatype(FunctionPass):
    name = "narrow-datatype"
    expects = Dialect.TIR
    leaves = Dialect.TIR
    target_bits: int = 32

    def __post_init__(self) -> None:
        if self.target_bits not in (8, 16, 32):
            raise ValueError("target_bits must be 8, 16 or 32")

    def run_function(self, func: PrimFunc) -> PrimFunc:
        body = _Narrower(self.target_bits).visit(func.body)
        return func if body is func.body else dataclasses.replace(func, body=body)

"""narrow-datatype: int64 loops and index arithmetic become int32 where their bounds fit.

A loop whose int64 variable ranges within `target_bits`, and whose every use lies only
inside integer expressions that fit too (as TVM 0.27 decides: `i` of
`B[i * T.int64(65536) + j]` past 2**31 stays int64, with no casts), gets a narrow variable; index
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
from tirc.ir.functor import Mutator, Visitor
from tirc.transform.pass_base import Dialect, FunctionPass

_ARITHMETIC = (E.Add, E.Sub, E.Mul, E.FloorDiv, E.FloorMod, E.Div, E.Mod, E.Min, E.Max)


class _WideUses(Visitor):
    """The int64 loop variables used inside an integer expression whose bounds do not fit
    `bits`: an index past 2**31 keeps every loop variable in it wide."""

    def __init__(self, bits: int):
        self.low, self.high = -(2 ** (bits - 1)), 2 ** (bits - 1) - 1
        self.ranges: dict[E.Var, Bound] = {}
        self.loops: set[E.Var] = set()
        self.wide: set[E.Var] = set()
        self.fits = True  # every integer expression from the statement down to here fits

    def visit_For(self, node: S.For) -> None:
        self.visit(node.min)
        self.visit(node.extent)
        low = const_bound(node.min, self.ranges)
        high = const_bound(E.Add(node.min, node.extent), self.ranges)
        if low.min is not None and high.max is not None:
            self.ranges[node.loop_var] = Bound(low.min, max(low.min, high.max - 1))
        self.loops.add(node.loop_var)
        self.visit(node.body)

    def visit_AttrStmt(self, node: S.AttrStmt) -> None:
        self.visit(node.value)
        thread = _thread_var(node)
        if thread is not None:
            bound = const_bound(node.value, self.ranges)
            if bound.max is not None:
                self.ranges[thread] = Bound(0, max(0, bound.max - 1))
            self.loops.add(thread)
        self.visit(node.body)

    def visit_PrimExpr(self, node: E.PrimExpr) -> None:
        outer = self.fits
        dtype = node.dtype
        if dtype.is_integer and dtype.is_scalar and dtype.bits > 32:
            if not const_bound(node, self.ranges).is_within(self.low, self.high):
                self.fits = False
        if isinstance(node, E.Var):
            if not self.fits and node in self.loops:
                self.wide.add(node)
        else:
            self.generic_visit(node)
        self.fits = outer


def _thread_var(node: S.AttrStmt) -> E.Var | None:
    """The variable a thread extent (or virtual thread) binds, if any."""
    if node.key in ("thread_extent", "virtual_thread") and isinstance(node.node, S.IterVar):
        return node.node.var
    return None


class _Narrower(Mutator):
    def __init__(self, bits: int, wide: set[E.Var]):
        self.wide_uses = wide
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

    def visit_Call(self, node: E.Call) -> E.PrimExpr:
        rebuilt = self.generic_visit(node)
        if node.op != "tvm_thread_allreduce" or not isinstance(rebuilt, E.Call):
            return rebuilt
        # an all-reduce names its threads by their variables (its last arguments): a narrowed
        # thread variable goes in itself, not read as a wider value
        args = tuple(
            self.vars.get(old, new) if isinstance(old, E.Var) else new
            for old, new in zip(node.args, rebuilt.args, strict=True)
        )
        return dataclasses.replace(rebuilt, args=args)

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

    def visit_AttrStmt(self, node: S.AttrStmt) -> S.Stmt:
        var = _thread_var(node)
        value = self.index(node.value)
        if var is None or var.dtype is not self.wide or value.dtype is not self.narrow:
            return self.generic_visit(node)
        if var in self.wide_uses:
            return self.generic_visit(node)
        bound = const_bound(node.value, self.ranges)
        assert bound.max is not None  # the value fits the narrow type
        self.ranges[var] = Bound(0, max(0, bound.max - 1))
        new = E.Var(var.name, self.narrow, span=var.span)
        self.vars[var] = new
        thread = node.node
        assert isinstance(thread, S.IterVar)
        dom = thread.dom
        if dom is not None:
            dom = dataclasses.replace(dom, min=E.IntImm(0, self.narrow), extent=value)
        thread = dataclasses.replace(thread, var=new, dom=dom)
        return dataclasses.replace(node, node=thread, value=value, body=self.visit(node.body))

    def visit_For(self, node: S.For) -> S.Stmt:
        var = node.loop_var
        start, extent = self.index(node.min), self.index(node.extent)
        if (
            var.dtype is self.wide
            and start.dtype is self.narrow
            and extent.dtype is self.narrow
            and var not in self.wide_uses
        ):
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
        uses = _WideUses(self.target_bits)
        uses.visit(func.body)
        body = _Narrower(self.target_bits, uses.wide).visit(func.body)
        return func if body is func.body else dataclasses.replace(func, body=body)

"""Widening a function's index arithmetic to a wider integer type (int32 → int64).

Tensorize applies it to an intrinsic's implementation when the program indexes with int64:
buffer shapes, strides and offsets, loop and block iterators become int64, and integer
constants next to them follow, so the views and the arithmetic on them type-check.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from tirc.ir import dtype as dt
from tirc.ir import expr as E
from tirc.ir.buffer import Buffer, Range
from tirc.ir.dtype import DataType
from tirc.ir.expr import IntImm, PrimExpr, Var
from tirc.ir.function import PrimFunc
from tirc.ir.functor import Mutator
from tirc.ir.stmt import For, IterVar


def _is_narrow_index(dtype: DataType, bits: int) -> bool:
    return dtype.is_integer and not dtype.is_vector and dtype.bits < bits and dtype.bits >= 32


class _Widen(Mutator):
    def __init__(self, bits: int):
        self.dtype = dt.parse_dtype(f"int{bits}")
        self.bits = bits
        self.vars: dict[Var, Var] = {}
        self.buffers: dict[Buffer, Buffer] = {}

    def widen(self, expr: Any) -> Any:
        """`expr` visited, and a narrow integer constant widened."""
        expr = self.visit(expr)
        if isinstance(expr, IntImm) and _is_narrow_index(expr.dtype, self.bits):
            return IntImm(expr.value, self.dtype)
        return expr

    def visit_Var(self, node: Var) -> Var:
        if not _is_narrow_index(node.dtype, self.bits):
            return node
        wide = self.vars.get(node)
        if wide is None:
            wide = self.vars[node] = dataclasses.replace(node, dtype=self.dtype)
        return wide

    def visit_Buffer(self, node: Buffer) -> Buffer:
        done = self.buffers.get(node)
        if done is None:
            done = self.buffers[node] = dataclasses.replace(
                node,
                shape=tuple(self.widen(extent) for extent in node.shape),
                strides=tuple(self.widen(stride) for stride in node.strides),
                elem_offset=None if node.elem_offset is None else self.widen(node.elem_offset),
            )
        return done

    def visit_Range(self, node: Range) -> Range:
        return Range(self.widen(node.min), self.widen(node.extent), span=node.span)

    def visit_For(self, node: For) -> For:
        result: For = self.generic_visit(node)
        if result.loop_var.dtype == self.dtype:
            result = dataclasses.replace(
                result, min=self.widen(result.min), extent=self.widen(result.extent)
            )
        return result

    def visit_IterVar(self, node: IterVar) -> IterVar:
        return self.generic_visit(node)

    def visit_BinaryOp(self, node: E.BinaryOp) -> PrimExpr:
        return self._promoted(node, self.visit(node.a), self.visit(node.b))

    def visit_CompareOp(self, node: E.CompareOp) -> PrimExpr:
        return self._promoted(node, self.visit(node.a), self.visit(node.b))

    def _promoted(self, node: Any, a: PrimExpr, b: PrimExpr) -> PrimExpr:
        if a is node.a and b is node.b:
            return node
        if a.dtype != b.dtype:
            a, b = self.widen(a), self.widen(b)
            if a.dtype != b.dtype:
                a = E.Cast(self.dtype, a) if a.dtype != self.dtype else a
                b = E.Cast(self.dtype, b) if b.dtype != self.dtype else b
        return type(node)(a, b, span=node.span)


def widen_index_dtype(func: PrimFunc, bits: int) -> PrimFunc:
    """`func` with its index arithmetic in `int{bits}`."""
    result: PrimFunc = _Widen(bits).visit(func)
    return result

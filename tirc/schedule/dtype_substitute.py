"""Substitution that may change a variable's dtype: operands that no longer agree are
converted to their common dtype (TVM's promotion), as when an int64 index map is applied to
int32 block iterators.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, TypeVar

from tirc.ir import expr as E
from tirc.ir.arith import match_types
from tirc.ir.expr import PrimExpr, Var
from tirc.ir.substitute import Substituter

T = TypeVar("T")


class _Legalizer(Substituter):
    def _pair(self, node: Any) -> Any:
        a, b = self.visit(node.a), self.visit(node.b)
        if a is node.a and b is node.b:
            return node
        if a.dtype != b.dtype:
            a, b = match_types(a, b)
        return dataclasses.replace(node, a=a, b=b)

    visit_BinaryOp = _pair
    visit_CompareOp = _pair

    def visit_Select(self, node: E.Select) -> PrimExpr:
        condition = self.visit(node.condition)
        true_value, false_value = self.visit(node.true_value), self.visit(node.false_value)
        if (condition, true_value, false_value) == (
            node.condition,
            node.true_value,
            node.false_value,
        ):
            return node
        if true_value.dtype != false_value.dtype:
            true_value, false_value = match_types(true_value, false_value)
        return E.Select(condition, true_value, false_value, span=node.span)


def substitute_legalized(node: T, mapping: Mapping[Var, PrimExpr]) -> T:
    """`node` with `mapping` substituted, operand dtypes reconciled where they now differ."""
    if not mapping:
        return node
    result: T = _Legalizer(mapping).visit(node)
    return result

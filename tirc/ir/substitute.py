"""Substitution of variables by expressions, through expressions, statements and buffers.

A buffer whose shape, strides or offset mention a substituted variable is rebuilt once and
the new buffer used everywhere the old one was: buffers keep their identity per rewrite.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, TypeVar

from tirc.ir.buffer import Buffer
from tirc.ir.expr import PrimExpr, Var
from tirc.ir.functor import Mutator

T = TypeVar("T")


class Substituter(Mutator):
    def __init__(self, mapping: Mapping[Var, PrimExpr]):
        self.mapping = mapping
        self.buffers: dict[int, Buffer] = {}

    def visit_Var(self, node: Var) -> PrimExpr:
        return self.mapping.get(node, node)

    def visit_Buffer(self, node: Buffer) -> Buffer:
        done = self.buffers.get(id(node))
        if done is not None:
            return done
        changes: dict[str, Any] = {}
        for name in ("shape", "strides", "elem_offset"):
            value = getattr(node, name)
            new = self.visit(value)
            if new is not value:
                changes[name] = new
        result = dataclasses.replace(node, **changes) if changes else node
        self.buffers[id(node)] = result
        return result


def substitute(node: T, mapping: Mapping[Var, PrimExpr]) -> T:
    """`node` with each variable in `mapping` replaced; the same object if none occurs."""
    if not mapping:
        return node
    result: T = Substituter(mapping).visit(node)
    return result


class _Rebinder(Substituter):
    """A Substituter that also gives buffers over a renamed handle the new handle."""

    def visit_Buffer(self, node: Buffer) -> Buffer:
        done = self.buffers.get(id(node))
        if done is not None:
            return done
        result = super().visit_Buffer(node)
        data = self.mapping.get(node.data)
        if isinstance(data, Var) and data is not node.data:
            result = dataclasses.replace(result, data=data)
            self.buffers[id(node)] = result
        return result


def rebind(node: T, mapping: Mapping[Var, Var]) -> T:
    """`node` with each variable in `mapping` replaced by another variable, data handles of
    buffers included (a function's parameters renamed, say); the same object if none occurs."""
    if not mapping:
        return node
    result: T = _Rebinder(mapping).visit(node)
    return result

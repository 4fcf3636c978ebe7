"""A copy of a statement with fresh variables and buffers for everything it defines, so that
replicas (unrolled iterations) never define one variable or allocation twice.

An expression object met twice is copied once (one that holds a `Let` excepted: each place
defines its own variable): an unrolled body shares the subtrees its inner unrolled loops left
unchanged, and copying each once keeps nested unrolling linear in what it makes."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, TypeVar

from tirc.ir import expr as E
from tirc.ir import stmt as S
from tirc.ir.buffer import Buffer
from tirc.ir.functor import Mutator

StmtT = TypeVar("StmtT", bound=S.Stmt)


def _renamed(var: E.Var) -> E.Var:
    return E.Var(var.name, var.dtype, var.pointer, var.is_size_var, span=var.span)


class _Copier(Mutator):
    def __init__(self, mapping: Mapping[E.Var, E.PrimExpr]):
        self.vars: dict[E.Var, E.PrimExpr] = dict(mapping)
        self.buffers: dict[int, Buffer] = {}
        self.copies: dict[int, E.PrimExpr] = {}  # expressions copied so far, by identity
        self.lets = 0  # Let expressions copied so far

    def visit(self, node: Any) -> Any:
        if not isinstance(node, E.PrimExpr):
            return super().visit(node)
        copied = self.copies.get(id(node))
        if copied is not None:
            return copied
        lets = self.lets
        result = super().visit(node)
        if self.lets == lets:
            self.copies[id(node)] = result
        return result

    def define(self, var: E.Var, fresh: E.Var) -> None:
        if var in self.vars:  # defined again: copies made under the first definition are stale
            self.copies.clear()
        self.vars[var] = fresh

    def visit_Var(self, node: E.Var) -> E.PrimExpr:
        return self.vars.get(node, node)

    def visit_Buffer(self, node: Buffer) -> Buffer:
        return self.buffers.get(id(node), node)

    def define_buffer(self, buffer: Buffer) -> Buffer:
        data = _renamed(buffer.data)
        self.define(buffer.data, data)
        fresh = dataclasses.replace(
            buffer,
            data=data,
            shape=self.visit(buffer.shape),
            strides=self.visit(buffer.strides),
            elem_offset=self.visit(buffer.elem_offset),
        )
        self.buffers[id(buffer)] = fresh
        return fresh

    def visit_AllocBuffer(self, node: S.AllocBuffer) -> S.Stmt:
        return dataclasses.replace(node, buffer=self.define_buffer(node.buffer))

    def visit_DeclBuffer(self, node: S.DeclBuffer) -> S.Stmt:
        data = self.visit(node.data)
        buffer = node.buffer
        if buffer.data is node.data or node.data is None:
            fresh = self.define_buffer(buffer)
            return dataclasses.replace(
                node, buffer=fresh, data=fresh.data if node.data is not None else None
            )
        fresh = dataclasses.replace(buffer, data=self.visit(buffer.data))
        if id(buffer) in self.buffers:  # declared again: as `define`
            self.copies.clear()
        self.buffers[id(buffer)] = fresh
        return dataclasses.replace(node, buffer=fresh, data=data)

    def visit_SBlock(self, node: S.SBlock) -> S.Stmt:
        for iter_var in node.iter_vars:
            self.define(iter_var.var, _renamed(iter_var.var))
        for buffer in node.alloc_buffers:
            self.define_buffer(buffer)
        for match in node.match_buffers:
            self.define_buffer(match.buffer)
        return self.generic_visit(node)

    def visit_For(self, node: S.For) -> S.Stmt:
        self.define(node.loop_var, _renamed(node.loop_var))
        return self.generic_visit(node)

    def visit_Bind(self, node: S.Bind) -> S.Stmt:
        value = self.visit(node.value)
        var = _renamed(node.var)
        self.define(node.var, var)
        return S.Bind(var, value, span=node.span)

    def visit_Let(self, node: E.Let) -> E.PrimExpr:
        self.lets += 1
        value = self.visit(node.value)
        var = _renamed(node.var)
        self.define(node.var, var)
        return E.Let(var, value, self.visit(node.body), span=node.span)


def fresh_copy(stmt: StmtT, mapping: Mapping[E.Var, E.PrimExpr]) -> StmtT:
    """`stmt` with `mapping` applied and every variable and buffer it defines made new (a
    statement of the same class: only expressions are replaced)."""
    result: StmtT = _Copier(mapping).visit(stmt)
    return result

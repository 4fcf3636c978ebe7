"""lower-match-buffer: accesses through a block's `T.match_buffer` view become accesses to the
source buffer, and the view's symbolic shape, strides and offset become their values. A field
the view declares otherwise (a constant, a variable bound elsewhere, or one a field before it
bound) must be provably the source's, else a located error, as TVM 0.27 requires.

Expects opaque blocks; leaves them without match_buffers:

    with T.sblock(""):                                     with T.sblock(""):
        Asub = T.match_buffer(A[i, 0:8], (8,))      ->         A[i, 0 + j] = 1.0
        Asub[j] = 1.0
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from tirc.analysis.arith.analyzer import Analyzer
from tirc.diagnostics import DiagnosticError
from tirc.ir import expr as E
from tirc.ir import stmt as S
from tirc.ir.buffer import Buffer, BufferRegion, MatchBufferRegion, Range
from tirc.ir.function import PrimFunc
from tirc.ir.functor import Mutator, walk
from tirc.ir.substitute import substitute
from tirc.text import script
from tirc.transform.pass_base import Dialect, FunctionPass


def strides_of(buffer: Buffer) -> list[E.PrimExpr]:
    """The strides of each dimension: the declared ones, or row-major from the shape."""
    if buffer.strides:
        return list(buffer.strides)
    out: list[E.PrimExpr] = []
    running: E.PrimExpr = E.IntImm(1, buffer.index_dtype)
    for extent in reversed(buffer.shape):
        out.append(running)
        extent = _as(extent, running)  # one index type, though the shape may mix them
        running = extent if E.is_const_int(running, 1) else E.Mul(running, extent)
    return list(reversed(out))


def _as(expr: E.PrimExpr, like: E.PrimExpr) -> E.PrimExpr:
    return expr if expr.dtype == like.dtype else E.Cast(like.dtype, expr)


@dataclass
class _View:
    source: BufferRegion
    mapping: dict[E.Var, E.PrimExpr]


class _Lowerer(Mutator):
    def __init__(self, defined: set[E.Var]) -> None:
        self.views: dict[int, _View] = {}
        self.vars: dict[E.Var, E.PrimExpr] = {}
        self.defined = defined  # variables bound elsewhere: a view's field must equal them
        self.analyzer = Analyzer()

    def visit_For(self, node: S.For) -> S.Stmt:
        self.analyzer.bind(node.loop_var, Range(node.min, node.extent))
        return self.generic_visit(node)

    def visit_SBlock(self, node: S.SBlock) -> S.SBlock:
        if not node.match_buffers:
            return self.generic_visit(node)
        for match in node.match_buffers:
            self.bind(match)
        block = dataclasses.replace(node, match_buffers=())
        return self.generic_visit(block)

    def bind(self, match: MatchBufferRegion) -> None:
        view, source = match.buffer, self.visit(match.source)
        if view.ndim > source.buffer.ndim:
            raise DiagnosticError.at(
                match.span, f"match_buffer {view.name} has more dimensions than its source"
            )
        self.views[id(view)] = _View(source, {})
        self.vars[view.data] = source.buffer.data
        fields: list[tuple[str, E.PrimExpr, E.PrimExpr]] = []  # in TVM's order of binding
        source_strides = strides_of(source.buffer)
        if view.elem_offset is not None:
            offset: E.PrimExpr = source.buffer.elem_offset or E.IntImm(0, source.buffer.index_dtype)
            for r, stride in zip(source.region, source_strides, strict=False):
                term = E.Mul(_as(r.min, stride), stride)
                offset = E.Add(_as(offset, term), term)
            fields.append(("elem_offset", view.elem_offset, self.analyzer.simplify(offset)))
        if view.strides:
            tail = source_strides[len(source_strides) - view.ndim :]
            pairs = list(enumerate(zip(view.strides, tail, strict=True)))
            fields += [(f"stride {axis}", stride, actual) for axis, (stride, actual) in pairs[::-1]]
        trailing = source.region[len(source.region) - view.ndim :]
        fields += [
            (f"extent {axis}", extent, r.extent)
            for axis, (extent, r) in enumerate(zip(view.shape, trailing, strict=False))
        ]
        for what, symbol, value in fields:
            if isinstance(symbol, E.Var) and symbol not in self.vars and symbol not in self.defined:
                self.vars[symbol] = value  # a variable the view declares takes the source's value
                continue
            declared = substitute(symbol, self.vars)
            if not self.analyzer.can_prove(E.EQ(_as(declared, value), value)):
                raise DiagnosticError.at(
                    match.span,
                    f"match_buffer {view.name} declares its {what} as {script(declared)}, but "
                    f"its source region {source.buffer.name}[...] has {script(value)}",
                )

    def visit_Var(self, node: E.Var) -> E.PrimExpr:
        return self.vars.get(node, node)

    def indices(
        self, buffer: Buffer, indices: tuple[E.PrimExpr, ...]
    ) -> tuple[Buffer, tuple[E.PrimExpr, ...]]:
        view = self.views[id(buffer)]
        region = view.source.region
        lead = len(region) - len(indices)
        out = [r.min for r in region[:lead]]
        for r, index in zip(region[lead:], indices, strict=False):
            out.append(_offset(r.min, index))
        return view.source.buffer, tuple(out)

    def visit_BufferLoad(self, node: E.BufferLoad) -> E.PrimExpr:
        node = self.generic_visit(node)
        if id(node.buffer) not in self.views:
            return node
        buffer, indices = self.indices(node.buffer, node.indices)
        return E.BufferLoad(buffer, indices, node.predicate, span=node.span)

    def visit_BufferStore(self, node: S.BufferStore) -> S.Stmt:
        node = self.generic_visit(node)
        if id(node.buffer) not in self.views:
            return node
        buffer, indices = self.indices(node.buffer, node.indices)
        return dataclasses.replace(node, buffer=buffer, indices=indices)

    def visit_BufferRegion(self, node: BufferRegion) -> BufferRegion:
        node = self.generic_visit(node)
        view = self.views.get(id(node.buffer))
        if view is None:
            return node
        region = view.source.region
        lead = len(region) - len(node.region)
        ranges = list(region[:lead]) + [
            Range(_offset(r.min, inner.min), inner.extent)
            for r, inner in zip(region[lead:], node.region, strict=False)
        ]
        ranges = [
            Range(r.min, E.IntImm(1, r.min.dtype)) if i < lead else r for i, r in enumerate(ranges)
        ]
        return BufferRegion(view.source.buffer, tuple(ranges), span=node.span)


def _offset(base: E.PrimExpr, index: E.PrimExpr) -> E.PrimExpr:
    if E.is_const_int(base, 0) and not index.dtype.is_vector:
        return index
    if E.is_const_int(index, 0):  # as TVM's folding `base + 0`
        return _as(base, index)
    dtype = index.dtype
    if dtype.is_vector:
        return E.Add(E.Broadcast(_as(base, E.IntImm(0, dtype.element)), dtype.lanes), index)
    return E.Add(_as(base, index), index)


def _defined_vars(func: PrimFunc) -> set[E.Var]:
    """The variables the function binds other than through a match_buffer: its parameters,
    the fields of its parameter buffers, and every loop, block iteration and let variable."""
    defined: set[E.Var] = set(func.params)
    for _, buffer in func.buffer_map:
        for expr in (*buffer.shape, *buffer.strides, buffer.elem_offset):
            if isinstance(expr, E.Var):
                defined.add(expr)

    def visit(node: object) -> None:
        if isinstance(node, S.For):
            defined.add(node.loop_var)
        elif isinstance(node, S.SBlock):
            defined.update(iv.var for iv in node.iter_vars)
        elif isinstance(node, S.Bind | E.Let):
            defined.add(node.var)

    walk(func.body, visit)
    return defined


@dataclass(frozen=True)
class LowerMatchBuffer(FunctionPass):
    name = "lower-match-buffer"
    expects = Dialect.OPAQUE_BLOCKS
    leaves = Dialect.OPAQUE_BLOCKS

    def run_function(self, func: PrimFunc) -> PrimFunc:
        lowerer = _Lowerer(_defined_vars(func))
        body = lowerer.visit(func.body)
        if body is func.body:
            return func
        return dataclasses.replace(
            func, body=substitute(body, lowerer.vars) if lowerer.vars else body
        )

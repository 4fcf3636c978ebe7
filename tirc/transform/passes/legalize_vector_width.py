"""legalize-vector-width: vectors wider than the target's natural access (`max_bytes` a
lane group) become loops over native-width chunks, so that code size, and the time a backend
takes, grow with the program rather than with lanes.

Expects tir; leaves tir. Runs before vectorize-loop. A `T.vectorized` loop of L lanes whose
body loads, stores or converts elements of at most b bytes, with L * b > max_bytes, is split
into a serial loop over L // k chunks around a vectorized loop of k lanes, k the largest
divisor of L with k * b <= max_bytes (k = 1: a serial loop). The iterations of a vectorized
loop are independent (docs/language.md), so the split means what the loop did, and the chunk
loop encloses the whole body: an unrolled reduction inside keeps one chunk in registers.

    for v in T.vectorized(32):             for v_0 in range(4):
        for k in T.unroll(64):      ->         for v_1 in T.vectorized(8):   (float16)
            B[v] = B[v] + A[k, v]                  for k in T.unroll(64):
                                                       B[v_0 * 8 + v_1] = ...

A vector statement already in the program (`T.Ramp` / `T.Broadcast` written in tir) that is
wider becomes a serial loop over chunks, each vector subexpression taken chunk-wise:
`T.Ramp(b, s, L)` is `T.Ramp(b + c * k * s, s, k)`, `T.Broadcast(x, L)` is
`T.Broadcast(x, k)`, and arithmetic, comparisons, casts, selects, loads, `T.Let` and pure
element-wise intrinsics go lane for lane. One vector store reads every lane before it writes
any; the chunks keep that meaning when the statement reads the buffer it writes only at the
lanes it writes (`B[r] = B[r] + ...`, r a ramp with a non-zero constant stride), and otherwise
compute the value into a "local" buffer of L elements before copying it out. A `Bind` of a
wide vector becomes such a local buffer, read by the rest of its sequence. Statements with a
`T.Shuffle`, a call that is not element-wise, a vector-typed buffer, a vector of another lane
count, or an index or predicate that reads the buffer being written stay whole.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from tirc.ir import expr as E
from tirc.ir import intrinsics
from tirc.ir import stmt as S
from tirc.ir.buffer import Buffer, make_buffer
from tirc.ir.dtype import DataType
from tirc.ir.function import PrimFunc
from tirc.ir.functor import Dispatch, Mutator, walk
from tirc.ir.node import Node
from tirc.ir.structural import structural_equal
from tirc.ir.substitute import substitute
from tirc.transform.pass_base import Dialect, FunctionPass


class _Unsplittable(Exception):
    """A vector subexpression has no chunk-by-chunk form; the statement stays whole."""


def _lanes(expr: E.PrimExpr) -> int:
    return expr.dtype.lanes


def _element_bytes(dtype: DataType) -> int:
    """Bytes of one element: a lane of a scalar type, all lanes of a vector-typed buffer's."""
    return max(1, dtype.bits * dtype.lanes // 8)


def _widest_element(nodes: tuple[object, ...], *, vectors_only: bool) -> int:
    """Bytes of the widest element that the nodes load, store or convert (of their vector
    values only, with `vectors_only`). Ramps, broadcasts and integer conversions of values
    that load nothing (`T.Cast("int64", i)`) are index arithmetic, not data, and do not count."""
    widest = 0

    def note(dtype: DataType) -> None:
        nonlocal widest
        if not (dtype.is_handle or dtype.is_void):
            widest = max(widest, _element_bytes(dtype))

    def look(node: Node) -> None:
        dtype = getattr(node, "dtype", None)
        if vectors_only and not (isinstance(dtype, DataType) and dtype.is_vector):
            return
        if isinstance(node, (E.BufferLoad, S.BufferStore)):
            note(node.buffer.dtype)
        elif isinstance(node, (E.Cast, E.Call)) and isinstance(dtype, DataType):
            operands = (node.value,) if isinstance(node, E.Cast) else node.args
            types = [dtype] + [a.dtype for a in operands if isinstance(a, E.PrimExpr)]
            if all(t.is_integer or t.is_bool for t in types) and not _loads_anything(operands):
                return
            for operand_type in types:
                note(operand_type.element)

    for node in nodes:
        walk(node, look)
    return widest


def _loads_anything(exprs: tuple[object, ...]) -> bool:
    found = False

    def look(node: Node) -> None:
        nonlocal found
        found = found or isinstance(node, E.BufferLoad)

    for expr in exprs:
        walk(expr, look)
    return found


def _chunk_lanes(lanes: int, element_bytes: int, max_bytes: int) -> int:
    """The largest divisor of `lanes` whose chunk fits in `max_bytes`."""
    most = max(1, max_bytes // element_bytes)
    return max(k for k in range(1, min(lanes, most) + 1) if lanes % k == 0)


class _Chunker:
    """Rewrites expressions of `lanes` lanes into chunk `chunk` (a loop variable) of `width`
    lanes each; `lets` maps vector Let variables to their chunk-wide copies."""

    def __init__(self, lanes: int, width: int, chunk: E.Var):
        self.lanes, self.width, self.chunk = lanes, width, chunk
        self.lets: dict[E.Var, E.Var] = {}

    def expr(self, node: E.PrimExpr) -> E.PrimExpr:
        if _lanes(node) == 1:
            return node
        if _lanes(node) != self.lanes:
            raise _Unsplittable
        rule = RULES.get(type(node))
        if rule is None:
            raise _Unsplittable
        return rule(self, node)

    def offset(self, dtype: DataType, scale: int) -> E.PrimExpr:
        """chunk * width * scale, in `dtype`."""
        chunk: E.PrimExpr = self.chunk if self.chunk.dtype == dtype else E.Cast(dtype, self.chunk)
        factor = self.width * scale
        return chunk if factor == 1 else E.Mul(chunk, E.IntImm(factor, dtype))

    def broadcast(self, value: E.PrimExpr) -> E.PrimExpr:
        return value if self.width == 1 else E.Broadcast(value, self.width)

    def dtype(self, dtype: DataType) -> DataType:
        return dtype.with_lanes(self.width)


RULES: Dispatch[_Chunker, [], E.PrimExpr] = Dispatch("legalize-vector-width")


@RULES.register(E.Ramp)
def _ramp(c: _Chunker, node: E.Ramp) -> E.PrimExpr:
    dtype = node.base.dtype
    if isinstance(node.stride, E.IntImm):
        offset = c.offset(dtype, node.stride.value) if node.stride.value else None
    else:
        offset = E.Mul(c.offset(dtype, 1), node.stride)
    base = node.base
    if offset is not None:
        base = offset if E.is_const_int(base, 0) else E.Add(base, offset)
    return base if c.width == 1 else E.Ramp(base, node.stride, c.width)


@RULES.register(E.Broadcast)
def _broadcast(c: _Chunker, node: E.Broadcast) -> E.PrimExpr:
    return c.broadcast(node.value)


@RULES.register(E.BinaryOp, E.CompareOp, E.LogicalOp)
def _binary(c: _Chunker, node: E.BinaryOp | E.CompareOp | E.LogicalOp) -> E.PrimExpr:
    return type(node)(c.expr(node.a), c.expr(node.b))


@RULES.register(E.Not)
def _not(c: _Chunker, node: E.Not) -> E.PrimExpr:
    return E.Not(c.expr(node.a))


@RULES.register(E.Select)
def _select(c: _Chunker, node: E.Select) -> E.PrimExpr:
    return E.Select(c.expr(node.condition), c.expr(node.true_value), c.expr(node.false_value))


@RULES.register(E.Cast)
def _cast(c: _Chunker, node: E.Cast) -> E.PrimExpr:
    return E.Cast(c.dtype(node.dtype), c.expr(node.value))


@RULES.register(E.BufferLoad)
def _load(c: _Chunker, node: E.BufferLoad) -> E.PrimExpr:
    if node.buffer.dtype.is_vector or any(_lanes(i) != 1 for i in node.indices[:-1]):
        raise _Unsplittable
    indices = (*node.indices[:-1], c.expr(node.indices[-1]))
    predicate = None if node.predicate is None else c.expr(node.predicate)
    return E.BufferLoad(node.buffer, indices, predicate, span=node.span)


@RULES.register(E.Let)
def _let(c: _Chunker, node: E.Let) -> E.PrimExpr:
    value = c.expr(node.value)
    var = node.var
    if _lanes(node.value) != 1:
        var = E.Var(var.name, value.dtype, var.pointer, var.is_size_var, span=var.span)
        c.lets[node.var] = var
    return E.Let(var, value, c.expr(node.body))


@RULES.register(E.Var)
def _var(c: _Chunker, node: E.Var) -> E.PrimExpr:
    chunked = c.lets.get(node)
    if chunked is None:
        raise _Unsplittable  # a vector variable bound where this pass cannot follow it
    return chunked


@RULES.register(E.Call)
def _call(c: _Chunker, node: E.Call) -> E.PrimExpr:
    intrinsic = intrinsics.lookup(node.op)
    elementwise = node.op == "if_then_else" or (
        intrinsic is not None
        and intrinsic.effect is intrinsics.Effect.PURE
        and intrinsic.result in (intrinsics.Result.FIRST_ARG, intrinsics.Result.BOOL)
    )
    if not elementwise or not E.are_exprs(node.args):
        raise _Unsplittable
    args = tuple(c.expr(a) for a in node.args)
    return E.Call(c.dtype(node.dtype), node.op, args, span=node.span)


def _loads_of(data: E.Var, exprs: tuple[object, ...]) -> list[E.BufferLoad]:
    found: list[E.BufferLoad] = []

    def look(node: Node) -> None:
        if isinstance(node, E.BufferLoad) and node.buffer.data is data:
            found.append(node)

    for expr in exprs:
        walk(expr, look)
    return found


def _is_injective(index: E.PrimExpr) -> bool:
    return (
        isinstance(index, E.Ramp) and isinstance(index.stride, E.IntImm) and index.stride.value != 0
    )


def _reads_only_own_lanes(store: S.BufferStore) -> bool:
    """Whether every read of the stored buffer is of the lane the same lane writes, so that no
    chunk reads what an earlier chunk wrote."""
    loads = _loads_of(store.buffer.data, (store.value,))
    if not loads:
        return True
    return _is_injective(store.indices[-1]) and all(
        load.buffer is store.buffer and structural_equal(load.indices, store.indices)
        for load in loads
    )


class _Legalizer(Mutator):
    def __init__(self, max_bytes: int):
        self.max_bytes = max_bytes

    def width(self, lanes: int, element: DataType, exprs: tuple[object, ...]) -> int | None:
        """The chunk width for a statement of `lanes` lanes, or None where it fits."""
        widest = max(_element_bytes(element), _widest_element(exprs, vectors_only=True))
        if lanes * widest <= self.max_bytes:
            return None
        return _chunk_lanes(lanes, widest, self.max_bytes)

    def visit_For(self, node: S.For) -> S.Stmt:
        loop: S.For = self.generic_visit(node)
        if loop.kind is not S.ForKind.VECTORIZED or not isinstance(loop.extent, E.IntImm):
            return loop
        lanes = loop.extent.value
        widest = _widest_element((loop.body,), vectors_only=False)
        if lanes < 2 or lanes * widest <= self.max_bytes:
            return loop
        return _split_loop(loop, _chunk_lanes(lanes, widest, self.max_bytes))

    def visit_SeqStmt(self, node: S.SeqStmt) -> S.Stmt:
        mapping: dict[E.Var, E.PrimExpr] = {}  # wide Binds now read from local buffers
        stmts: list[S.Stmt] = []
        for stmt in node.stmts:
            if mapping:
                stmt = substitute(stmt, mapping)
            if isinstance(stmt, S.Bind) and stmt.var.dtype.is_vector:
                replaced = self.bind(stmt)
                if replaced is not None:
                    buffer, stores = replaced
                    stmts.extend(stores)
                    lanes = stmt.var.dtype.lanes
                    ramp = E.Ramp(
                        E.IntImm(0, buffer.index_dtype), E.IntImm(1, buffer.index_dtype), lanes
                    )
                    mapping[stmt.var] = E.BufferLoad(buffer, (ramp,))
                    continue
            new = self.visit(stmt)
            if isinstance(new, S.SeqStmt) and not isinstance(stmt, S.SeqStmt):
                stmts.extend(new.stmts)  # a staged store: its allocation joins this sequence
            else:
                stmts.append(new)
        if len(stmts) == len(node.stmts) and all(
            a is b for a, b in zip(stmts, node.stmts, strict=True)
        ):
            return node
        return S.SeqStmt(tuple(stmts), span=node.span)

    def bind(self, node: S.Bind) -> tuple[Buffer, list[S.Stmt]] | None:
        """A wide vector Bind as a local buffer and the statements that fill it, or None."""
        lanes = node.var.dtype.lanes
        width = self.width(lanes, node.var.dtype.element, (node.value,))
        if width is None:
            return None
        buffer = make_buffer(node.var.name, (E.IntImm(lanes),), node.var.dtype.element, "local")
        store = S.BufferStore(buffer, node.value, (_full_ramp(buffer, lanes),), span=node.span)
        loop = _split(store, width)
        if loop is None:
            return None
        return buffer, [S.AllocBuffer(buffer, span=node.span), loop]

    def visit_BufferStore(self, node: S.BufferStore) -> S.Stmt:
        lanes = _lanes(node.value)
        if lanes == 1 or node.buffer.dtype.is_vector:
            return node
        width = self.width(lanes, node.buffer.dtype, (node.value, *node.indices))
        if width is None:
            return node
        if _loads_of(node.buffer.data, (*node.indices, node.predicate)):
            return node  # where a chunk stores would depend on what earlier chunks stored
        if _reads_only_own_lanes(node):
            return _split(node, width) or node
        return _split_through_local(node, width) or node


def _split_loop(loop: S.For, width: int) -> S.Stmt:
    """`for v in T.vectorized(L)` as `for v_0 in range(L // width)` around
    `for v_1 in T.vectorized(width)` (a serial loop where width is 1)."""
    var, dtype = loop.loop_var, loop.loop_var.dtype
    if width == 1:
        return dataclasses.replace(loop, kind=S.ForKind.SERIAL)
    outer = E.Var(f"{var.name}_0", dtype, span=var.span)
    inner = E.Var(f"{var.name}_1", dtype, span=var.span)
    value: E.PrimExpr = E.Add(E.Mul(outer, E.IntImm(width, dtype)), inner)
    if not E.is_const_int(loop.min, 0):
        value = E.Add(loop.min, value)
    zero = E.IntImm(0, dtype)
    body = substitute(loop.body, {var: value})
    lanes = dataclasses.replace(
        loop, loop_var=inner, min=zero, extent=E.IntImm(width, dtype), body=body
    )
    extent = loop.extent
    assert isinstance(extent, E.IntImm)  # the caller splits loops of constant extent only
    chunks = E.IntImm(extent.value // width, dtype)
    return S.For(outer, zero, chunks, S.ForKind.SERIAL, lanes, span=loop.span)


def _full_ramp(buffer: Buffer, lanes: int) -> E.PrimExpr:
    dtype = buffer.index_dtype
    return E.Ramp(E.IntImm(0, dtype), E.IntImm(1, dtype), lanes)


def _split(node: S.BufferStore, width: int) -> S.Stmt | None:
    """`for c in range(L // width)` over the chunks of `node`, or None where some part of it
    has no chunk form."""
    lanes = _lanes(node.value)
    if any(_lanes(index) != 1 for index in node.indices[:-1]):
        return None
    dtype = node.indices[-1].dtype.element
    chunk = E.Var("c", dtype)
    chunker = _Chunker(lanes, width, chunk)
    try:
        value = chunker.expr(node.value)
        index = chunker.expr(node.indices[-1])
        predicate = None if node.predicate is None else chunker.expr(node.predicate)
    except _Unsplittable:
        return None
    body = dataclasses.replace(
        node, value=value, indices=(*node.indices[:-1], index), predicate=predicate
    )
    extent = E.IntImm(lanes // width, dtype)
    return S.For(chunk, E.IntImm(0, dtype), extent, S.ForKind.SERIAL, body, span=node.span)


def _split_through_local(node: S.BufferStore, width: int) -> S.Stmt | None:
    """The value chunk by chunk into a local buffer, then the buffer chunk by chunk into place:
    for a store that reads its own buffer at other lanes than it writes."""
    lanes = _lanes(node.value)
    element: DataType = node.value.dtype.element
    staging = make_buffer(f"{node.buffer.name}_staged", (E.IntImm(lanes),), element, "local")
    ramp = _full_ramp(staging, lanes)
    compute = _split(S.BufferStore(staging, node.value, (ramp,), span=node.span), width)
    copy = _split(dataclasses.replace(node, value=E.BufferLoad(staging, (ramp,))), width)
    if compute is None or copy is None:
        return None
    return S.SeqStmt((S.AllocBuffer(staging, span=node.span), compute, copy), span=node.span)


@dataclass(frozen=True)
class LegalizeVectorWidth(FunctionPass):
    name = "legalize-vector-width"
    expects = Dialect.TIR
    leaves = Dialect.TIR
    max_bytes: int = 16  # the widest access a lane group may make: 16 bytes a thread on CUDA

    def run_function(self, func: PrimFunc) -> PrimFunc:
        body = _Legalizer(max(1, self.max_bytes)).visit(func.body)
        return func if body is func.body else dataclasses.replace(func, body=body)

"""The `tvm_*_matrix_sync` calls on memory that is not a fragment (a global or local array), for
--ptx-via llvm: loops over the elements, one thread at a time, as the interpreter defines them
and the CUDA C backend's `tirc_*` helpers (tirc/codegen/cuda/helpers.py) write them: tiles
row-major, tile `index` at element index * size, mma PLAIN_MMA_SHAPE (16 x 16 x 16)
accumulating in C's type.

    T.tvm_fill_fragment(B.data, 16, 16, 16, i, v)
    -> for e in 0..256: B[i * 256 + e] = v
"""

from __future__ import annotations

from collections.abc import Callable

import llvmlite.ir as ir

from tirc.analysis.wmma_fragments import PLAIN_MMA_SHAPE
from tirc.codegen.nvptx import types
from tirc.codegen.nvptx.values import ValueBuilder
from tirc.diagnostics import DiagnosticError
from tirc.ir import expr as E
from tirc.ir.dtype import DataType

_ZERO = ir.Constant(types.I32, 0)


def _constant(call: E.Call, index: int) -> int:
    arg = call.args[index]
    if not isinstance(arg, E.IntImm):
        raise DiagnosticError.at(call.span, f"T.{call.op}: m, n and k must be constants")
    return arg.value


def _i64(v: ValueBuilder, value: ir.Value) -> ir.Value:
    return v.b.sext(value, types.I64) if value.type.width < 64 else value


def _loop(v: ValueBuilder, count: int, body: Callable[[ir.Value], None]) -> None:
    """`for (long long i = 0; i < count; ++i) body(i)`."""
    _sum(v, count, None, lambda i, _: body(i))


def _sum(
    v: ValueBuilder,
    count: int,
    initial: ir.Value | None,
    step: Callable[[ir.Value, ir.Value | None], ir.Value | None],
) -> ir.Value | None:
    """A loop of `count` trips carrying a value from `initial`, step(i, value) the next one
    (None carries nothing); the last value."""
    before = v.b.block
    header = v.b.append_basic_block("wmma_header")
    inside = v.b.append_basic_block("wmma_body")
    exit_block = v.b.append_basic_block("wmma_exit")
    v.b.branch(header)
    v.b.position_at_end(header)
    counter = v.b.phi(types.I64)
    counter.add_incoming(ir.Constant(types.I64, 0), before)
    carried = None
    if initial is not None:
        carried = v.b.phi(initial.type)
        carried.add_incoming(initial, before)
    v.b.cbranch(v.b.icmp_signed("<", counter, ir.Constant(types.I64, count)), inside, exit_block)
    v.b.position_at_end(inside)
    following = step(counter, carried)
    if carried is not None and following is not None:
        carried.add_incoming(following, v.b.block)
    counter.add_incoming(v.b.add(counter, ir.Constant(types.I64, 1)), v.b.block)
    v.b.branch(header)
    v.b.position_at_end(exit_block)
    return carried


class _Memory:
    """A pointer operand and the element type it is read and written as."""

    def __init__(self, v: ValueBuilder, call: E.Call, arg: object) -> None:
        if isinstance(arg, E.Var) and arg in v.fragments:
            raise DiagnosticError.at(
                call.span,
                f"T.{call.op}: {arg.name} is a wmma fragment, and the call's first operand is not",
            )
        dtype = _pointee(v, arg)
        if dtype is None:
            what = arg.name if isinstance(arg, E.Var) else "its operand"
            raise DiagnosticError.at(
                call.span, f"T.{call.op}: --ptx-via llvm cannot tell what {what} points at"
            )
        self.v = v
        self.dtype = dtype
        self.element = types.memory_type(dtype)
        self.base = v(arg)

    def at(self, index: ir.Value) -> ir.Value:
        return self.v.b.gep(self.base, [index], source_etype=self.element)

    def load(self, index: ir.Value) -> ir.Value:
        return self.v.b.load(self.at(index), typ=self.element)

    def store(self, value: ir.Value, source: DataType, index: ir.Value) -> None:
        self.v.b.store(self.v.cast(value, source, self.dtype), self.at(index))


def _pointee(v: ValueBuilder, arg: object) -> DataType | None:
    if isinstance(arg, E.Call) and arg.op == "tvm_access_ptr":
        annotation = arg.args[0]
        return annotation.dtype if isinstance(annotation, E.PrimExpr) else None
    if isinstance(arg, E.Var):
        dtype = v.pointees.get(arg)
        return None if dtype is None or dtype.element.is_bool else dtype
    return None


def fill(v: ValueBuilder, call: E.Call) -> ir.Value:
    size = _constant(call, 1) * _constant(call, 2)
    tile = _Memory(v, call, call.args[0])
    value, source = v(call.args[5]), call.expr_arg(5).dtype
    start = v.b.mul(_i64(v, v(call.args[4])), ir.Constant(types.I64, size))
    _loop(v, size, lambda e: tile.store(value, source, v.b.add(start, e)))
    return _ZERO


def _tile_copy(v: ValueBuilder, call: E.Call, *, load: bool) -> ir.Value:
    """load: tile[index][r][c] = p[r * stride + c] (row-major; c * stride + r otherwise);
    store the other way round."""
    rows, cols = _constant(call, 1), _constant(call, 2)
    tile = _Memory(v, call, call.args[0])
    memory = _Memory(v, call, call.args[5])
    stride = _i64(v, v(call.args[6]))
    layout = call.args[7]
    row_major = not isinstance(layout, E.StringImm) or layout.value == "row_major"
    start = v.b.mul(_i64(v, v(call.args[4])), ir.Constant(types.I64, rows * cols))

    def element(r: ir.Value, c: ir.Value) -> None:
        position = v.b.add(start, v.b.add(v.b.mul(r, ir.Constant(types.I64, cols)), c))
        major, minor = (r, c) if row_major else (c, r)
        offset = v.b.add(v.b.mul(major, stride), minor)
        if load:
            tile.store(memory.load(offset), memory.dtype, position)
        else:
            memory.store(tile.load(position), tile.dtype, offset)

    _loop(v, rows, lambda r: _loop(v, cols, lambda c: element(r, c)))
    return _ZERO


def load(v: ValueBuilder, call: E.Call) -> ir.Value:
    return _tile_copy(v, call, load=True)


def store(v: ValueBuilder, call: E.Call) -> ir.Value:
    return _tile_copy(v, call, load=False)


def mma(v: ValueBuilder, call: E.Call) -> ir.Value:
    """d[di][r][col] = c[ci][r][col] + sum over x of a[ai][r][x] * b[bi][x][col], in C's type."""
    m, n, k = PLAIN_MMA_SHAPE
    d, a, b, c = (_Memory(v, call, call.args[i]) for i in (0, 2, 4, 6))
    di, ai, bi, ci = (_i64(v, v(call.args[i])) for i in (1, 3, 5, 7))
    accumulate = c.dtype

    def start(index: ir.Value, size: int) -> ir.Value:
        return v.b.mul(index, ir.Constant(types.I64, size))

    def constant(value: int) -> ir.Value:
        return ir.Constant(types.I64, value)

    def element(r: ir.Value, col: ir.Value) -> None:
        position = v.b.add(v.b.mul(r, constant(n)), col)

        def product(x: ir.Value, total: ir.Value | None) -> ir.Value:
            assert total is not None  # _sum carries the initial value
            left = a.load(v.b.add(start(ai, m * k), v.b.add(v.b.mul(r, constant(k)), x)))
            right = b.load(v.b.add(start(bi, k * n), v.b.add(v.b.mul(x, constant(n)), col)))
            left = v.cast(left, a.dtype, accumulate)
            right = v.cast(right, b.dtype, accumulate)
            if accumulate.is_float:
                return v.b.fadd(total, v.b.fmul(left, right))
            return v.b.add(total, v.b.mul(left, right))

        initial = c.load(v.b.add(start(ci, m * n), position))
        total = _sum(v, k, initial, product)
        assert total is not None
        d.store(total, accumulate, v.b.add(start(di, m * n), position))

    _loop(v, m, lambda r: _loop(v, n, lambda col: element(r, col)))
    return _ZERO

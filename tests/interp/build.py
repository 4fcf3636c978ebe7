"""Small IR builders for interpreter tests that need no parser: elementwise functions over
one-dimensional buffers, with every node spanned into a made-up source so that errors can be
checked for their location."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from tirc.diagnostics.span import Source, Span
from tirc.ir import dtype as dt
from tirc.ir.buffer import Buffer, make_buffer
from tirc.ir.dtype import DataType, parse_dtype
from tirc.ir.expr import BufferLoad, IntImm, PrimExpr, Var
from tirc.ir.function import PrimFunc
from tirc.ir.stmt import BufferStore, For, ForKind, Stmt

SOURCE = Source("<test>", "line one\nline two\nline three\n")


def span(line: int) -> Span:
    start = SOURCE.line_starts()[line - 1]
    return Span(SOURCE, start, start + 4)


def i32(value: int) -> IntImm:
    return IntImm(value, dt.INT32)


def buffer(
    name: str, size: int, dtype: str | DataType = "float32", scope: str = "global"
) -> Buffer:
    kind = parse_dtype(dtype) if isinstance(dtype, str) else dtype
    return make_buffer(name, (i32(size),), kind, scope)


def function(buffers: Sequence[Buffer], body: Stmt, *, s_tir: bool = False) -> PrimFunc:
    params = tuple(Var(b.name, dt.HANDLE) for b in buffers)
    return PrimFunc(params, tuple(zip(params, buffers, strict=True)), body, is_s_tir=s_tir)


def elementwise(
    size: int,
    input_types: Sequence[str],
    output_type: str,
    compute: Callable[..., PrimExpr],
) -> PrimFunc:
    """out[i] = compute(in0[i], in1[i], ...) for i < size."""
    inputs = [buffer(f"in{k}", size, t) for k, t in enumerate(input_types)]
    out = buffer("out", size, output_type)
    i = Var("i")
    loads = [BufferLoad(b, (i,)) for b in inputs]
    store = BufferStore(out, compute(*loads), (i,), span=span(2))
    return function([*inputs, out], For(i, i32(0), i32(size), ForKind.SERIAL, store))


def thread_loop(var: Var, extent: int, tag: str, body: Stmt) -> For:
    """`for var in T.thread_binding(extent, thread=tag)`."""
    from tirc.ir.stmt import IterType, IterVar

    thread = IterVar(Var(tag), None, IterType.THREAD, tag)
    return For(var, i32(0), i32(extent), ForKind.THREAD_BINDING, body, thread_binding=thread)


def launch(var: Var, extent: int, tag: str, body: Stmt) -> Stmt:
    """`with T.launch_thread(tag, extent) as var`."""
    from tirc.ir.stmt import AttrStmt, IterType, IterVar

    return AttrStmt(IterVar(var, None, IterType.THREAD, tag), "thread_extent", i32(extent), body)


def sync() -> Stmt:
    from tirc.ir.expr import Call, StringImm
    from tirc.ir.stmt import Evaluate

    return Evaluate(Call(dt.INT32, "tvm_storage_sync", (StringImm("shared"),)), span=span(3))

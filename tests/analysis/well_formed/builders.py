"""Hand-built programs for the verifier tests: IR that no parser would produce, located in a
listing of the program it stands for, so that a test can say on which line an error lands."""

from __future__ import annotations

from tirc.diagnostics import Diagnostic, Source, Span
from tirc.ir import dtype as dt
from tirc.ir.buffer import Buffer, BufferRegion, Range, make_buffer
from tirc.ir.expr import IntImm, PrimExpr, Var
from tirc.ir.function import IRModule, PrimFunc
from tirc.ir.stmt import For, ForKind, IterType, IterVar, SBlock, SBlockRealize, Stmt

TRUE = IntImm(1, dt.BOOL)


class Listing:
    """The text a hand-built program stands for; `at(n)` spans line n without its indent."""

    def __init__(self, text: str, name: str = "test.tir") -> None:
        self.source = Source(name, text.strip("\n") + "\n")

    def at(self, line: int) -> Span:
        starts = self.source.line_starts()
        begin = starts[line - 1]
        end = self.source.text.index("\n", begin)
        indent = len(self.source.text[begin:end]) - len(self.source.text[begin:end].lstrip())
        return Span(self.source, begin + indent, end)


def i32(value: int) -> IntImm:
    return IntImm(value, dt.INT32)


def buffer(
    name: str, *shape: int | PrimExpr, dtype: dt.DataType = dt.FLOAT32, **fields: object
) -> Buffer:
    extents = tuple(i32(e) if isinstance(e, int) else e for e in shape)
    return make_buffer(name, extents, dtype, **fields)  # type: ignore[arg-type]


def loop(
    var: Var, extent: int | PrimExpr, body: Stmt, kind: ForKind = ForKind.SERIAL, **kw: object
) -> For:
    end = i32(extent) if isinstance(extent, int) else extent
    zero = IntImm(0, end.dtype)  # type: ignore[attr-defined]
    return For(var, zero, end, kind, body, **kw)  # type: ignore[arg-type]


def thread_loop(var: Var, extent: int, tag: str, body: Stmt, **kw: object) -> For:
    thread = IterVar(var, Range(i32(0), i32(extent)), IterType.THREAD, tag)
    return loop(var, extent, body, ForKind.THREAD_BINDING, thread_binding=thread, **kw)


def spatial(var: Var, extent: int) -> IterVar:
    return IterVar(var, Range(i32(0), i32(extent)), IterType.SPATIAL)


def reduce(var: Var, extent: int) -> IterVar:
    return IterVar(var, Range(i32(0), i32(extent)), IterType.REDUCE)


def point(buf: Buffer, *indices: PrimExpr) -> BufferRegion:
    return BufferRegion(buf, tuple(Range(index, i32(1)) for index in indices))


def realize(
    name: str,
    bindings: list[tuple[IterVar, PrimExpr]],
    body: Stmt,
    *,
    span: Span | None = None,
    predicate: PrimExpr = TRUE,
    **fields: object,
) -> SBlockRealize:
    block = SBlock(
        name,
        tuple(iter_var for iter_var, _ in bindings),
        fields.pop("reads", ()),  # type: ignore[arg-type]
        fields.pop("writes", ()),  # type: ignore[arg-type]
        body,
        span=span,
        **fields,  # type: ignore[arg-type]
    )
    return SBlockRealize(tuple(value for _, value in bindings), predicate, block, span=span)


def function(
    buffers: list[Buffer],
    body: Stmt,
    *,
    s_tir: bool = False,
    scalars: tuple[Var, ...] = (),
    span: Span | None = None,
) -> PrimFunc:
    handles = [Var(f"{b.name}_handle", dt.HANDLE) for b in buffers]
    if s_tir:
        body = SBlockRealize((), TRUE, SBlock("root", (), (), (), body))
    return PrimFunc(
        tuple(handles) + scalars,
        tuple(zip(handles, buffers, strict=True)),
        body,
        is_s_tir=s_tir,
        span=span,
    )


def module(*funcs: PrimFunc) -> IRModule:
    return IRModule(
        tuple((f"f{index}" if index else "main", func) for index, func in enumerate(funcs))
    )


def messages(diagnostics: list[Diagnostic]) -> list[str]:
    return [diagnostic.message for diagnostic in diagnostics]


def lines(diagnostics: list[Diagnostic]) -> list[int | None]:
    return [d.span.line if d.span is not None else None for d in diagnostics]

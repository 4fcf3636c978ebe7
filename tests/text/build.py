"""Short constructors for hand-built IR in the printer tests."""

from __future__ import annotations

from tirc.ir import dtype as dt
from tirc.ir.buffer import Buffer, BufferRegion, Range, make_buffer
from tirc.ir.expr import IntImm, PrimExpr, Var
from tirc.ir.function import IRModule, PrimFunc
from tirc.ir.stmt import Attrs, For, ForKind, IterType, IterVar, SBlock, SBlockRealize, Stmt

TRUE = IntImm(1, dt.BOOL)


def i32(value: int) -> IntImm:
    return IntImm(value, dt.INT32)


def i64(value: int) -> IntImm:
    return IntImm(value, dt.INT64)


def const(value: int | PrimExpr) -> PrimExpr:
    return i32(value) if isinstance(value, int) else value


def buffer(
    name: str,
    *shape: int | PrimExpr,
    dtype: str = "float32",
    scope: str = "global",
    **fields: object,
) -> Buffer:
    return make_buffer(name, tuple(const(d) for d in shape), dt.parse_dtype(dtype), scope, **fields)


def loop(
    var: Var,
    extent: int | PrimExpr,
    body: Stmt,
    kind: ForKind = ForKind.SERIAL,
    start: int | PrimExpr = 0,
    **fields: object,
) -> For:
    return For(var, const(start), const(extent), kind, body, **fields)  # type: ignore[arg-type]


def point(buf: Buffer, *indices: PrimExpr) -> BufferRegion:
    return BufferRegion(buf, tuple(Range(index, IntImm(1, index.dtype)) for index in indices))


def axis(
    var: Var, extent: int | PrimExpr, kind: IterType = IterType.SPATIAL, start: int | PrimExpr = 0
) -> IterVar:
    return IterVar(var, Range(const(start), const(extent)), kind)


def realize(block: SBlock, *values: PrimExpr, predicate: PrimExpr = TRUE) -> SBlockRealize:
    return SBlockRealize(tuple(values), predicate, block)


def root(body: Stmt, *allocs: Buffer) -> SBlockRealize:
    return SBlockRealize((), TRUE, SBlock("root", (), (), (), body, alloc_buffers=allocs))


def func(
    params: list[Var | Buffer],
    body: Stmt,
    *,
    s_tir: bool = False,
    private: bool = False,
    attrs: dict[str, object] | None = None,
    ret: str | None = None,
) -> PrimFunc:
    """A function whose Buffer parameters get a handle each."""
    handles: list[Var] = []
    buffer_map: list[tuple[Var, Buffer]] = []
    for param in params:
        if isinstance(param, Buffer):
            handle = Var(param.name + "_handle", dt.HANDLE)
            handles.append(handle)
            buffer_map.append((handle, param))
        else:
            handles.append(param)
    return PrimFunc(
        tuple(handles),
        tuple(buffer_map),
        body,
        dt.parse_dtype(ret) if ret else None,
        Attrs(tuple((attrs or {}).items())),
        is_s_tir=s_tir,
        is_private=private,
    )


def module(*functions: tuple[str, PrimFunc], bare: bool = False) -> IRModule:
    return IRModule(tuple(functions), is_bare=bare)


HEADER = (
    "# from tvm.script import ir as I\n"
    "# from tvm.script import tirx as T\n"
    "# from tvm.tirx.layout import Axis\n\n"
)
BARE_HEADER = "# from tvm.script import tirx as T\n# from tvm.tirx.layout import Axis\n\n"

"""Buffers in the text: declaring them (`T.Buffer`, `T.match_buffer`, `T.alloc_buffer`,
`T.sblock_alloc_buffer`, `T.decl_buffer`, `A.view`), and reading, slicing and storing them.

Defaults follow TVM: 64-byte alignment, offset factor 1, and an explicit nonzero
`offset_factor` gives the buffer a symbolic `elem_offset` variable. A buffer is named after
the name it is assigned to.
"""

from __future__ import annotations

from typing import Any

from tirc.diagnostics import Span
from tirc.ir import arith
from tirc.ir import dtype as dt
from tirc.ir.buffer import Buffer, BufferRegion, MatchBufferRegion, Range
from tirc.ir.dtype import DataType
from tirc.ir.expr import BufferLoad, FloatImm, IntImm, PointerType, PrimExpr, Var
from tirc.ir.node import IRError
from tirc.ir.stmt import AllocBuffer, Attrs, BufferStore, DeclBuffer
from tirc.text.builder.args import (
    Bound,
    Param,
    Signature,
    expect_attrs,
    expect_dtype,
    expect_extent,
    expect_int,
    expect_shape,
    expect_str,
)
from tirc.text.builder.expr import Evaluator
from tirc.text.builder.frames import FunctionFrame, SBlockFrame
from tirc.text.builder.stmt import Builder
from tirc.text.builder.subscripts import check_rank, store
from tirc.text.builder.values import Arg, Builtin, Invocation

DEFAULT_ALIGNMENT = 64

# Parameters every buffer-declaring builtin shares, after shape and dtype.
LAYOUT_PARAMS = (
    Param("data", None),
    Param("strides", None),
    Param("elem_offset", None),
    Param("scope", "global"),
    Param("align", -1),
    Param("offset_factor", 0),
    Param("buffer_type", "default"),
    Param("axis_separators", None),
    Param("byte_offset", None, keyword_only=True),
    Param("layout", None, keyword_only=True),
    Param("annotations", None, keyword_only=True),
)


def target_name(inv: Invocation, default: str) -> str:
    return inv.targets[0] if len(inv.targets) == 1 else default


def strides_of(ev: Evaluator, arg: Arg, index_dtype: DataType) -> tuple[PrimExpr, ...]:
    """Strides; a string names a new variable (`strides=("s0", 1)`)."""
    value = ev.check_value(arg.value)
    if value is None:
        return ()
    items = value if isinstance(value, (list, tuple)) else (value,)
    strides: list[PrimExpr] = []
    for item in items:
        if isinstance(item, str):
            strides.append(Var(item, index_dtype))
        else:
            strides.append(ev.as_expr(item, arg.span))
    return tuple(strides)


def shape_of(ev: Builder, arg: Arg) -> tuple[PrimExpr, ...]:
    """A shape; in a function signature a string declares shape variables (`("n", "m")`)."""
    value = ev.check_value(arg.value)
    items = value if isinstance(value, (list, tuple)) else (value,)
    if any(isinstance(item, str) for item in items):
        return tuple(
            expect_extent(
                ev, ev.shape_variable(item, arg.span) if isinstance(item, str) else item, arg.span
            )
            for item in items
        )
    return expect_shape(ev, arg)


def build_buffer(
    ev: Builder,
    name: str,
    shape: tuple[PrimExpr, ...],
    dtype: DataType,
    bound: Bound,
    span: Span,
) -> Buffer:
    """A Buffer from the layout arguments of any buffer-declaring builtin."""
    index_dtype = shape[0].dtype if shape else dt.INT32
    scope = expect_str(ev, bound["scope"])
    data_value = ev.check_value(bound.value("data"))
    if isinstance(data_value, Var):
        data = data_value
    elif data_value is None or isinstance(data_value, PrimExpr):
        data = Var(name, dt.HANDLE, PointerType(dtype, scope))
    else:
        raise ev.error(bound["data"].span, f"expected a pointer, got {arith.describe(data_value)}")
    align = expect_int(ev, bound["align"])
    offset_factor = expect_int(ev, bound["offset_factor"])
    elem_offset_value = ev.check_value(bound.value("elem_offset"))
    elem_offset: PrimExpr | None
    if elem_offset_value is None:
        elem_offset = Var("elem_offset", index_dtype) if offset_factor else None
    else:
        elem_offset = ev.as_expr(elem_offset_value, bound["elem_offset"].span)
        if isinstance(elem_offset, IntImm) and elem_offset.value == 0:
            elem_offset = None
    byte_offset = ev.check_value(bound.value("byte_offset"))
    if byte_offset is not None:
        offset = ev.as_expr(byte_offset, bound["byte_offset"].span)
        elem_offset = arith.arithmetic("floordiv", arith.arithmetic("*", offset, 8), dtype.bits)
    separators = axis_separators(ev, bound["axis_separators"])
    try:
        return ev.created(
            Buffer(
                name,
                data,
                dtype,
                shape,
                strides_of(ev, bound["strides"], index_dtype),
                elem_offset,
                align if align > 0 else DEFAULT_ALIGNMENT,
                offset_factor if offset_factor > 0 else 1,
                separators,
                expect_str(ev, bound["buffer_type"]),
                span=span,
            )
        )
    except IRError as problem:
        raise ev.error(span, str(problem)) from None


def axis_separators(ev: Evaluator, arg: Arg) -> tuple[int, ...]:
    """`axis_separators=[1]`: a list of integer constants (None or nothing: none)."""
    value = ev.check_value(arg.value)
    if value is None:
        return ()
    if not isinstance(value, (list, tuple)):
        what = arith.describe(value)
        raise ev.error(arg.span, f"axis_separators is a list of integers, not {what}")
    return tuple(expect_int(ev, Arg(item, arg.span)) for item in value)


BUFFER = Signature(Param("shape"), Param("dtype", "float32"), *LAYOUT_PARAMS)


def declare_buffer(ev: Builder, inv: Invocation) -> Buffer:
    """`T.Buffer(shape, dtype, ...)`: a parameter's type, or a buffer over existing data."""
    bound = BUFFER.bind(ev, inv)
    shape = shape_of(ev, bound["shape"])
    dtype = expect_dtype(ev, bound["dtype"])
    return build_buffer(ev, target_name(inv, "buffer"), shape, dtype, bound, inv.span)


MATCH_BUFFER = Signature(
    Param("param"), Param("shape", None), Param("dtype", "float32"), *LAYOUT_PARAMS
)


def match_buffer(ev: Builder, inv: Invocation) -> Buffer:
    """`T.match_buffer(handle, ...)` binds a parameter; `T.match_buffer(B[...], ...)` in a
    block views a region of another buffer."""
    bound = MATCH_BUFFER.bind(ev, inv)
    source = ev.check_value(bound.value("param"))
    name = target_name(inv, "buffer")
    if isinstance(source, BufferLoad):  # a single element: a region of extent 1 everywhere
        source = BufferRegion(
            source.buffer,
            tuple(Range(i, IntImm(1, i.dtype), span=i.span) for i in source.indices),
            span=source.span,
        )
    if isinstance(source, BufferRegion):
        shape_given = ev.check_value(bound.value("shape"))
        if shape_given is None:
            shape = tuple(r.extent for r in source.region)
            dtype = source.buffer.dtype
        else:
            shape = shape_of(ev, bound["shape"])
            dtype = expect_dtype(ev, bound["dtype"]) if bound.has("dtype") else source.buffer.dtype
        buffer = build_buffer(ev, name, shape, dtype, bound, inv.span)
        ev.add_match_buffer(MatchBufferRegion(buffer, source, span=inv.span), inv.span)
        return buffer
    if isinstance(source, Var) and source.dtype.is_handle:
        if ev.check_value(bound.value("shape")) is None:
            raise ev.error(inv.span, "T.match_buffer of a parameter needs a shape")
        shape = shape_of(ev, bound["shape"])
        buffer = build_buffer(ev, name, shape, expect_dtype(ev, bound["dtype"]), bound, inv.span)
        ev.bind_parameter_buffer(source, buffer, bound["param"].span)
        return buffer
    raise ev.error(
        bound["param"].span,
        f"T.match_buffer needs a handle parameter or a buffer region, got {arith.describe(source)}",
    )


ALLOC_BUFFER = Signature(Param("shape"), Param("dtype", "float32"), *LAYOUT_PARAMS)


def _alloc(scope: str | None) -> Any:
    def alloc_buffer(ev: Builder, inv: Invocation) -> Buffer:
        bound = ALLOC_BUFFER.bind(ev, inv)
        if scope is not None and not bound.has("scope"):
            bound.values["scope"] = Arg(scope, inv.span)
        shape = shape_of(ev, bound["shape"])
        dtype = expect_dtype(ev, bound["dtype"])
        buffer = build_buffer(ev, target_name(inv, "buffer"), shape, dtype, bound, inv.span)
        if scope is None and is_block_allocation(ev):
            ev.add_block_buffer(buffer, inv.span)
            return buffer
        annotations = allocation_annotations(expect_attrs(ev, bound["annotations"]))
        ev.emit(AllocBuffer(buffer, annotations, span=inv.span))
        return buffer

    return alloc_buffer


def allocation_annotations(attrs: Attrs) -> Attrs:
    """An allocation's annotations hold IR values: Python numbers become constants (int32,
    bool, float32), as TVM stores them."""
    items = []
    for key, value in attrs.items:
        if isinstance(value, bool):
            value = IntImm(int(value), dt.BOOL)
        elif isinstance(value, int):
            value = IntImm(value, dt.INT32)
        elif isinstance(value, float):
            value = FloatImm(value, dt.FLOAT32)
        items.append((key, value))
    return Attrs(tuple(items))


def is_block_allocation(ev: Builder) -> bool:
    """In a function written for TVM before 0.22 (`T.block`), `T.alloc_buffer` directly in a
    block or at the top of the function allocated for the block, as T.sblock_alloc_buffer
    does now."""
    function = ev.function
    frame = ev.frames[-1] if ev.frames else None
    return bool(
        function is not None
        and function.is_legacy
        and isinstance(frame, (FunctionFrame, SBlockFrame))
    )


def sblock_alloc_buffer(ev: Builder, inv: Invocation) -> Buffer:
    """`T.sblock_alloc_buffer(...)`: a buffer the enclosing block (or the root block) owns."""
    bound = ALLOC_BUFFER.bind(ev, inv)
    shape = shape_of(ev, bound["shape"])
    dtype = expect_dtype(ev, bound["dtype"])
    buffer = build_buffer(ev, target_name(inv, "buffer"), shape, dtype, bound, inv.span)
    ev.add_block_buffer(buffer, inv.span)
    return buffer


def decl_buffer(ev: Builder, inv: Invocation) -> Buffer:
    """`T.decl_buffer(...)`: a view of existing data with `data=`, else a new allocation."""
    bound = ALLOC_BUFFER.bind(ev, inv)
    shape = shape_of(ev, bound["shape"])
    dtype = expect_dtype(ev, bound["dtype"])
    buffer = build_buffer(ev, target_name(inv, "buffer"), shape, dtype, bound, inv.span)
    data = ev.check_value(bound.value("data"))
    if data is None:
        ev.emit(AllocBuffer(buffer, span=inv.span))
    else:
        ev.emit(DeclBuffer(buffer, ev.as_expr(data, bound["data"].span), span=inv.span))
    return buffer


def view(ev: Builder, source: Buffer, inv: Invocation) -> Buffer:
    """`A.view(8, 8)` (a new shape) or `A.view("int32")` (a new dtype) of A's memory."""
    if inv.kwargs:
        name = next(iter(inv.kwargs))
        raise ev.error(inv.kwargs[name].span, f"{inv.name} takes no '{name}' argument")
    dtype = source.dtype
    shape: tuple[PrimExpr, ...] = source.shape
    values = [ev.check_value(arg.value) for arg in inv.args]
    if len(values) == 1 and isinstance(values[0], str):
        dtype = expect_dtype(ev, inv.args[0])
    elif values:
        items = values[0] if len(values) == 1 and isinstance(values[0], (list, tuple)) else values
        shape = tuple(expect_extent(ev, item, inv.span) for item in items)
    name = target_name(inv, f"{source.name}_view")
    buffer = ev.created(
        Buffer(name, source.data, dtype, shape, data_alignment=source.data_alignment, span=inv.span)
    )
    ev.emit(DeclBuffer(buffer, source.data, span=inv.span))
    return buffer


VLOAD = Signature("indices", Param("predicate", None, keyword_only=True))
VSTORE = Signature("indices", "value", Param("predicate", None, keyword_only=True))


def vload(ev: Evaluator, buffer: Buffer, inv: Invocation) -> BufferLoad:
    """`A.vload([T.Ramp(0, 1, 8)], predicate=mask)`: a load whose masked-off lanes read no
    memory; without a predicate, the same as `A[T.Ramp(0, 1, 8)]`."""
    bound = VLOAD.bind(ev, inv)
    indices = _vector_indices(ev, buffer, bound["indices"])
    load = BufferLoad(buffer, indices, span=inv.span)
    predicate = _predicate(ev, bound["predicate"], load.dtype.lanes, f"a vload from {buffer.name}")
    if predicate is None:
        return load
    return BufferLoad(buffer, indices, predicate, span=inv.span)


def vstore(ev: Builder, buffer: Buffer, inv: Invocation) -> None:
    """`B.vstore([T.Ramp(0, 1, 8)], value, predicate=mask)`: a store whose masked-off lanes
    leave memory alone; without a predicate, the same as `B[T.Ramp(0, 1, 8)] = value`."""
    bound = VSTORE.bind(ev, inv)
    indices = _vector_indices(ev, buffer, bound["indices"])
    plain = store(ev, buffer, list(indices), bound.value("value"), inv.span)
    lanes = plain.value.dtype.lanes
    predicate = _predicate(ev, bound["predicate"], lanes, f"a vstore into {buffer.name}")
    if predicate is not None:
        plain = BufferStore(buffer, plain.value, plain.indices, predicate, span=inv.span)
    ev.emit(plain)


def _vector_indices(ev: Evaluator, buffer: Buffer, arg: Arg) -> tuple[PrimExpr, ...]:
    value = ev.check_value(arg.value)
    items = value if isinstance(value, (list, tuple)) else [value]
    indices = tuple(ev.as_expr(item, arg.span) for item in items)
    check_rank(ev, buffer, len(indices), arg.span)
    return indices


def _predicate(ev: Evaluator, arg: Arg, lanes: int, what: str) -> PrimExpr | None:
    """The lane mask: bool, or bool with the access's lanes."""
    value = ev.check_value(arg.value)
    if value is None:
        return None
    predicate = ev.as_expr(value, arg.span)
    dtype: DataType = predicate.dtype
    if not dtype.element.is_bool or dtype.lanes not in (1, lanes):
        wanted = "bool" if lanes == 1 else f"bool or boolx{lanes}"
        raise ev.error(arg.span, f"the predicate of {what} must be {wanted}, not {dtype}")
    return predicate


BUILTINS = {
    "Buffer": Builtin("T.Buffer", declare_buffer),
    "buffer": Builtin("T.buffer", declare_buffer),
    "match_buffer": Builtin("T.match_buffer", match_buffer),
    "alloc_buffer": Builtin("T.alloc_buffer", _alloc(None)),
    "alloc_local": Builtin("T.alloc_local", _alloc("local")),
    "alloc_shared": Builtin("T.alloc_shared", _alloc("shared")),
    "sblock_alloc_buffer": Builtin("T.sblock_alloc_buffer", sblock_alloc_buffer),
    "decl_buffer": Builtin("T.decl_buffer", decl_buffer),
}

"""Buffer definitions (`T.Buffer`, `T.alloc_buffer`, `T.match_buffer`, ...) and regions.
Defining a buffer names what it owns: `A.data`, `A.elem_offset`, `A.strides[0]`; a shape
dimension that first mentions a variable prints as a string (`("n", 16)`), defining it."""

from __future__ import annotations

from dataclasses import dataclass, field

from tirc.ir import dtype as dt
from tirc.ir.buffer import Buffer, BufferRegion, Range
from tirc.ir.expr import Add, IntImm, PrimExpr, Var
from tirc.ir.functor import child_fields
from tirc.ir.node import Node
from tirc.text.printing.emitter import Emitter
from tirc.text.printing.literals import quote

DEFAULT_ALIGNMENT = 64


@dataclass
class SignatureVars:
    """Variables the parameter list defines: scalar parameters, shape variables spelled as
    strings (declared again as `n = T.int32()` in the body), and int64 shape variables that
    TVM hoists to module-level `n = TypeVar("n")` declarations."""

    params: set[Var] = field(default_factory=set)
    type_vars: set[Var] = field(default_factory=set)
    # declaration lines: one per variable first met inside a compound dimension, then, per
    # buffer, one line for all that were whole dimensions (`n, m = T.int32(), T.int32()`)
    declared: list[list[Var]] = field(default_factory=list)
    whole: list[Var] = field(default_factory=list)


def define_buffer(em: Emitter, buffer: Buffer) -> str:
    """Give `buffer` a name, and its data handle the text `name.data` if it has none yet."""
    name = em.names.define(buffer, buffer.name)
    if buffer.data not in em.names:
        em.names.alias(buffer.data, f"{name}.data")
        em.data_owners[buffer.data] = buffer
    return name


def vars_in(expr: object) -> list[Var]:
    """The variables of an expression, in first-occurrence order."""
    found: list[Var] = []
    seen: set[Var] = set()
    stack = [expr]
    while stack:
        node = stack.pop()
        if isinstance(node, Var):
            if node not in seen:
                seen.add(node)
                found.append(node)
        elif isinstance(node, Node):
            for name in reversed(child_fields(type(node))):
                child = getattr(node, name)
                if isinstance(child, (Node, tuple)):
                    stack.append(child)
        elif isinstance(node, tuple):
            stack.extend(reversed(node))
    return found


def shape_text(em: Emitter, dims: tuple[PrimExpr, ...], signature: SignatureVars | None) -> str:
    text = _tuple([dim_text(em, dim, signature) for dim in dims])
    if signature is not None and signature.whole:
        signature.declared.append(signature.whole)
        signature.whole = []
    return text


def dim_text(em: Emitter, dim: PrimExpr, signature: SignatureVars | None) -> str:
    """One shape dimension; a string when it is the first sight of one of its variables."""
    if signature is None:
        return em.exprs.expr(dim)
    names = em.names
    type_vars = signature.type_vars
    if isinstance(dim, Var) and dim in type_vars:
        if dim not in names:
            names.define(dim, dim.name)
        name = names.get(dim)
        assert name is not None  # defined just above
        return name
    pending = [var for var in vars_in(dim) if var not in names or var in type_vars]
    if not pending:
        return em.exprs.expr(dim)
    for var in pending:
        if var not in names:
            names.define(var, var.name)
            if var not in signature.params and var not in type_vars:
                if var is dim:
                    signature.whole.append(var)
                else:
                    signature.declared.append([var])
    return quote(em.exprs.expr(dim))


def buffer_options(
    em: Emitter, buffer: Buffer, name: str, *, signature: SignatureVars | None = None
) -> list[str]:
    """The keyword arguments after shape and dtype, in TVM's order; defaults left out."""
    options: list[str] = []
    if buffer.strides:
        options.append(f"strides={_tuple(_strides(em, buffer, name, signature))}")
    needs_factor = False
    offset = buffer.elem_offset
    if offset is not None and not has_default_offset(buffer):
        if isinstance(offset, Var) and offset not in em.names:
            em.names.alias(offset, f"{name}.elem_offset")
            needs_factor = True
        else:
            options.append(f"elem_offset={em.exprs.expr(offset)}")
    return options + tail_options(buffer, needs_factor)


def has_default_offset(buffer: Buffer) -> bool:
    """No elem_offset, or a zero of the buffer's index type: what TVM leaves unsaid."""
    offset = buffer.elem_offset
    return offset is None or (
        type(offset) is IntImm and offset.value == 0 and offset.dtype == buffer.index_dtype
    )


def tail_options(buffer: Buffer, needs_factor: bool = False) -> list[str]:
    """scope, align, offset_factor, buffer_type, axis_separators."""
    scope = buffer.scope
    options = [f"scope={quote(scope)}"] if scope != "global" else []
    return options + layout_options(buffer, needs_factor)


def layout_options(buffer: Buffer, needs_factor: bool = False) -> list[str]:
    """align, offset_factor, buffer_type, axis_separators: empty for a plain buffer."""
    options: list[str] = []
    if buffer.data_alignment != DEFAULT_ALIGNMENT:
        options.append(f"align={buffer.data_alignment}")
    if needs_factor or buffer.offset_factor != 1:
        options.append(f"offset_factor={buffer.offset_factor}")
    if buffer.buffer_type != "default":
        options.append('buffer_type="auto"')
    if buffer.axis_separators:
        options.append(f"axis_separators=[{', '.join(map(str, buffer.axis_separators))}]")
    return options


def _strides(em: Emitter, buffer: Buffer, name: str, signature: SignatureVars | None) -> list[str]:
    texts = []
    for index, stride in enumerate(buffer.strides):
        if isinstance(stride, Var) and stride not in em.names:
            em.names.alias(stride, f"{name}.strides[{index}]")
            texts.append(quote(stride.name))
        else:
            texts.append(dim_text(em, stride, signature))
    return texts


def buffer_call(
    em: Emitter,
    function: str,
    buffer: Buffer,
    name: str,
    *,
    lead: tuple[str, ...] = (),
    always_dtype: bool = False,
    signature: SignatureVars | None = None,
    options: list[str] | None = None,
) -> str:
    """`function(lead..., shape, "dtype", options...)`; float32 is left out unless asked."""
    parts = list(lead)
    parts.append(shape_text(em, buffer.shape, signature))
    if always_dtype or buffer.dtype != dt.FLOAT32:
        parts.append(quote(str(buffer.dtype)))
    parts += buffer_options(em, buffer, name, signature=signature) if options is None else options
    return f"{function}({', '.join(parts)})"


def region_text(em: Emitter, region: BufferRegion) -> str:
    """`A[i, j0:j0 + 16]`: a point where the extent is one, a slice elsewhere."""
    name = em.exprs.buffer_name(region.buffer)
    if not region.region:
        return f"{name}[()]"
    return f"{name}[{', '.join(range_text(em, item) for item in region.region)}]"


def range_text(em: Emitter, item: Range) -> str:
    expr = em.exprs.expr
    extent = item.extent
    if isinstance(extent, IntImm) and extent.value == 1:
        return expr(item.min)
    return f"{expr(item.min)}:{expr(end_of(item.min, extent))}"


def end_of(start: PrimExpr, extent: PrimExpr) -> PrimExpr:
    """`start + extent` as TVM's folding `+` builds it: constants combine, zero vanishes."""
    if isinstance(start, IntImm) and isinstance(extent, IntImm):
        wider = start.dtype if start.dtype.bits >= extent.dtype.bits else extent.dtype
        return IntImm(start.value + extent.value, wider)
    if isinstance(start, IntImm) and start.value == 0:
        return extent
    if isinstance(extent, IntImm) and extent.value == 0:
        return start
    if start.dtype != extent.dtype:
        return start  # malformed; print something rather than fail
    return Add(start, extent)


def _tuple(items: list[str]) -> str:
    if len(items) == 1:
        return f"({items[0]},)"
    return f"({', '.join(items)})"

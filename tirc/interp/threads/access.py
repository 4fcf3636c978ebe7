"""Buffer loads and stores: flattening indices through a buffer's layout, bounds checks that
name the buffer, index and shape (skipped where the index provably fits), vector lanes and
predicate masks, and race-checked access to shared memory inside GPU kernels."""

from __future__ import annotations

from tirc.diagnostics import DiagnosticError
from tirc.interp.fault import describe_access
from tirc.interp.memory.storage import SHARED_SCOPES, access_type
from tirc.interp.semantics import interval
from tirc.interp.semantics.affine import affine_form
from tirc.interp.semantics.values import NARROW
from tirc.interp.threads.compilers import Exprs
from tirc.interp.threads.context import Code, Context, Layout, Slot, View
from tirc.ir.buffer import Buffer
from tirc.ir.dtype import DataType
from tirc.ir.expr import BufferLoad, PrimExpr, Var
from tirc.ir.integer import int_range
from tirc.ir.stmt import BufferStore

NARROW_FLOATS = tuple(NARROW)


def _deepest(codes: list[Code]) -> Slot | None:
    slots = [code.slot for code in codes if code.slot is not None]
    return max(slots, key=lambda slot: slot.order) if slots else None


def multiply(a: Code, b: Code) -> Code:
    """a * b for non-negative index arithmetic (no wrap-around), constants folded."""
    if a.constant == 0 or b.constant == 0:
        return Code("0", 0, 0, pure=True)
    if a.constant == 1:
        return b
    if b.constant == 1:
        return a
    if a.constant is not None and b.constant is not None:
        value = a.constant * b.constant
        return Code(str(value), value, value, pure=True)
    low, high = interval.mul((a.low, a.high), (b.low, b.high))
    pure = a.pure and b.pure
    slot = _deepest([a, b]) if pure else None
    return Code(f"{a.text} * {b.text}", low, high, pure=pure, slot=slot)


def add_terms(terms: list[Code]) -> Code:
    """The sum of terms, constants folded; ranges added where all are known."""
    constant = 0
    kept: list[Code] = []
    low: int | None = 0
    high: int | None = 0
    for term in terms:
        if term.constant is not None:
            constant += term.constant
            continue
        kept.append(term)
        low = None if low is None or term.low is None else low + term.low
        high = None if high is None or term.high is None else high + term.high
    texts = [term.text for term in kept]
    if constant or not texts:
        texts.append(str(constant))
    low = None if low is None else low + constant
    high = None if high is None else high + constant
    pure = all(term.pure for term in kept)
    slot = _deepest(kept) if pure else None
    if len(texts) == 1:
        return Code(texts[0], low, high, pure=pure, slot=slot)
    return Code("(" + " + ".join(texts) + ")", low, high, pure=pure, slot=slot)


def _slot_order(code: Code) -> int:
    return code.slot.order if code.slot is not None else 0


def sum_hoisted(ctx: Context, terms: list[Code]) -> Code:
    """The sum of terms, its loop-invariant partial sums computed outside the loops:
    terms are added in the order of their variables' definitions, each partial sum at the
    place where its last variable is defined (when a loop lies between it and the next)."""
    varying = [term for term in terms if not term.pure or term.slot is None]
    invariant = sorted((t for t in terms if t.pure and t.slot is not None), key=_slot_order)
    running: list[Code] = [t for t in varying if t.pure]  # constants
    varying = [t for t in varying if not t.pure]
    index = 0
    while index < len(invariant):
        slot = invariant[index].slot
        while index < len(invariant) and invariant[index].slot is slot:
            running.append(invariant[index])
            index += 1
        partial = add_terms(running)
        following = invariant[index].slot if index < len(invariant) else None
        running = [ctx.hoist(partial, below=following)]
    return add_terms(running + varying)


class AccessCompiler:
    def __init__(self, ctx: Context, exprs: Exprs):
        self.ctx = ctx
        self.exprs = exprs

    # where a buffer's elements are

    def layout(self, buffer: Buffer) -> Layout:
        found = self.ctx.layouts.get(buffer)
        if found is None:
            found = self.default_layout(buffer)
            self.ctx.layouts[buffer] = found
        return found

    def default_layout(self, buffer: Buffer) -> Layout:
        """The layout its fields describe: row-major unless strides are given."""
        shape = tuple(self.exprs.compile(extent) for extent in buffer.shape)
        if buffer.strides:
            strides = tuple(self.exprs.compile(stride) for stride in buffer.strides)
        else:
            row_major: list[Code] = []
            step = Code("1", 1, 1)
            for extent in reversed(shape):
                row_major.append(step)
                step = multiply(step, extent)
            strides = tuple(reversed(row_major))
        if buffer.elem_offset is None:
            offset = Code("0", 0, 0)
        else:
            offset = self.exprs.compile(buffer.elem_offset)
        return Layout(buffer.data, offset, strides, shape)

    def view(self, data: Var, dtype: DataType, node: object) -> View:
        found = self.ctx.views.get((data, str(dtype.element)))
        if found is not None:
            return found
        handle = self.ctx.names.get(data)
        if handle is None:
            span = getattr(node, "span", None)
            raise DiagnosticError.at(
                span, f"buffer memory '{data.name}' is used but never allocated"
            )
        # a handle bound without this element type in mind: look the view up each time
        return View(
            f"_view_of({handle}, {_dtype_constant(dtype)})[0]",
            Code(f"_view_of({handle}, {_dtype_constant(dtype)})[1]"),
        )

    # element offsets

    def element_offset(
        self, buffer: Buffer, indices: tuple[PrimExpr, ...], node: PrimExpr | BufferStore, verb: str
    ) -> tuple[Code, View]:
        """The scalar element index of buffer[indices] in its view, bounds-checked."""
        layout = self.layout(buffer)
        view = self.view(layout.data, buffer.dtype, node)
        if len(indices) != len(layout.shape):
            raise DiagnosticError.at(
                node.span,
                f"{buffer.name} has {len(layout.shape)} dimensions "
                f"but is indexed with {len(indices)}",
            )
        site = self.ctx.site(node, describe_access(verb, buffer), is_access=True)
        terms = [view.base, layout.offset]
        dims = zip(indices, layout.shape, layout.strides, strict=True)
        for dim, (index, extent, stride) in enumerate(dims):
            code = self.exprs.compile(index)
            checked = self.checked_index(code, extent, site, dim)
            if checked is code and stride.constant is not None:
                split = self.affine_terms(index, code, stride.constant)
                if split is not None:
                    terms.extend(split)
                    continue
            terms.append(multiply(checked, stride))
        return sum_hoisted(self.ctx, terms), view

    def affine_terms(self, index: PrimExpr, code: Code, stride: int) -> list[Code] | None:
        """index * stride as one term per variable, where that is exact (nothing wraps)."""
        if "_wrap" in code.text:
            return None
        form = affine_form(self.ctx, index)
        if form is None:
            return None
        coefficients, constant = form
        terms = [Code(str(constant * stride), constant * stride, constant * stride, pure=True)]
        for var, coefficient in coefficients.items():
            value = self.exprs.compile(var)
            if not value.pure:
                return None
            terms.append(
                multiply(
                    value,
                    Code(
                        str(coefficient * stride),
                        coefficient * stride,
                        coefficient * stride,
                        pure=True,
                    ),
                )
            )
        return terms

    def checked_index(self, index: Code, extent: Code, site: int, dim: int) -> Code:
        limit = extent.constant
        if interval.is_index_within((index.low, index.high), limit):
            return index
        first, later = self.exprs.atom(index)
        lower = "" if index.low is not None and index.low >= 0 else "0 <= "
        fault = f"_oob({site}, {dim}, {later}, {extent.text})"
        text = f"({later} if {lower}{first} < {extent.text} else {fault})"
        low = 0 if index.low is None else max(0, index.low)
        high = None if limit is None else limit - 1
        if high is not None and low >= high:
            # at most one value passes the check (an extent of 1, or an index always out of
            # bounds): a range naming one value would make the checked index a constant, and
            # folding it would drop the check with it
            return Code(text, None, high)
        return Code(text, low, high)

    def is_vector_access(
        self, buffer: Buffer, indices: tuple[PrimExpr, ...], predicate: object
    ) -> bool:
        return (
            predicate is not None
            or buffer.dtype.lanes > 1
            or any(index.dtype.lanes > 1 for index in indices)
        )

    def race_checked(self, buffer: Buffer, node: PrimExpr | BufferStore, verb: str) -> str:
        """What an access of shared memory inside a kernel passes on to its race tracker
        (`, handle, size, _tid, site`); "" for an access that is not checked."""
        if self.ctx.kernel is None:
            return ""
        data = self.layout(buffer).data
        handle = self.ctx.names.get(data)
        if self.ctx.scopes.get(data, buffer.scope) not in SHARED_SCOPES or handle is None:
            return ""
        site = self.ctx.site(node, f"{verb} {buffer.name}")
        return f", {handle}, {access_type(buffer.dtype).itemsize}, _tid, {site}"

    # loads and stores

    def load(self, expr: BufferLoad) -> Code:
        buffer = expr.buffer
        if self.is_vector_access(buffer, expr.indices, expr.predicate):
            return self.vector_load(expr)
        offset, view = self.element_offset(buffer, expr.indices, expr, "load from")
        tracked = self.race_checked(buffer, expr, "load from")
        if tracked:
            return self.decode(f"_shared_load({view.memory}, {offset.text}{tracked})", buffer.dtype)
        return self.decode(f"{view.memory}[{offset.text}]", buffer.dtype)

    def decode(self, text: str, dtype: DataType) -> Code:
        kind = str(dtype.element)
        if kind in NARROW_FLOATS:
            return Code(f"_values_{kind}[{text}]")
        if dtype.is_integer or dtype.is_bool:
            return Code(text, *int_range(dtype.element))
        return Code(text)

    def encode(self, value: Code, dtype: DataType) -> str:
        """The value as memory holds it; float stores round, so the final rounding is skipped."""
        kind = str(dtype.element)
        text = value.unrounded if value.unrounded is not None and kind != "float64" else value.text
        if kind in NARROW_FLOATS:
            return f"_encode_{kind}({text})"
        return text

    def store(self, stmt: BufferStore) -> None:
        buffer = stmt.buffer
        value = self.exprs.compile(stmt.value)
        if self.is_vector_access(buffer, stmt.indices, stmt.predicate):
            self.vector_store(stmt, value)
            return
        offset, view = self.element_offset(buffer, stmt.indices, stmt, "store to")
        encoded = self.encode(value, buffer.dtype)
        tracked = self.race_checked(buffer, stmt, "store to")
        if tracked:
            self.ctx.emit(f"_shared_store({view.memory}, {offset.text}, {encoded}{tracked})")
        else:
            self.ctx.emit(f"{view.memory}[{offset.text}] = {encoded}")

    # vectors: one offset per lane, masked lanes left alone

    def lane_offsets(
        self,
        buffer: Buffer,
        indices: tuple[PrimExpr, ...],
        predicate: PrimExpr | None,
        node: PrimExpr | BufferStore,
        verb: str,
    ) -> tuple[str, View, int]:
        layout = self.layout(buffer)
        view = self.view(layout.data, buffer.dtype, node)
        site = self.ctx.site(node, describe_access(verb, buffer), is_access=True)
        parts = []
        lanes = 1
        for index, extent, stride in zip(indices, layout.shape, layout.strides, strict=True):
            lanes = max(lanes, index.dtype.lanes)
            parts.append(f"({self.exprs.compile(index).text}, {stride.text}, {extent.text})")
        base = add_terms([view.base, layout.offset]).text
        mask = "None" if predicate is None else self.exprs.compile(predicate).text
        element_lanes = buffer.dtype.lanes
        arguments = f"{base}, ({', '.join(parts)},), {lanes}, {element_lanes}, {mask}"
        text = f"_lane_offsets({site}, {arguments})"
        return text, view, lanes * element_lanes

    def vector_load(self, expr: BufferLoad) -> Code:
        buffer = expr.buffer
        offsets, view, lanes = self.lane_offsets(
            buffer, expr.indices, expr.predicate, expr, "load from"
        )
        kind = str(buffer.dtype.element)
        table = f"_values_{kind}" if kind in NARROW_FLOATS else "None"
        tracked = self.race_checked(buffer, expr, "load from")
        shared = "_shared" if tracked else ""
        return Code(f"{shared}_vector_load({view.memory}, {offsets}, {table}{tracked})")

    def vector_store(self, stmt: BufferStore, value: Code) -> None:
        buffer = stmt.buffer
        offsets, view, lanes = self.lane_offsets(
            buffer, stmt.indices, stmt.predicate, stmt, "store to"
        )
        kind = str(buffer.dtype.element)
        encoder = f"_encode_{kind}" if kind in NARROW_FLOATS else "None"
        values = value.text
        if stmt.value.dtype.lanes == 1 and lanes > 1:
            values = f"({values},) * {lanes}"
        tracked = self.race_checked(buffer, stmt, "store to")
        shared = "_shared" if tracked else ""
        self.ctx.emit(
            f"{shared}_vector_store({view.memory}, {offsets}, {values}, {encoder}{tracked})"
        )


def _dtype_constant(dtype: DataType) -> str:
    return f"_dtype({str(dtype.element)!r})"

"""`value[...]`: buffer loads and regions, `T.let[T.int32]`, `T.float32[4]`, and indexing of
Python lists and dicts.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tirc.diagnostics import Span
from tirc.ir import arith
from tirc.ir import dtype as dt
from tirc.ir.buffer import Buffer, BufferRegion, Range
from tirc.ir.expr import (
    BufferLoad,
    IntImm,
    PrimExpr,
    Ramp,
    StringImm,
    Var,
    access_dtype,
    vscale_multiple,
)
from tirc.ir.functor import Dispatch
from tirc.ir.stmt import BufferStore
from tirc.text.builder.args import dtype_of
from tirc.text.builder.expr import SUBSCRIPTS as SUBSCRIPT_RULES
from tirc.text.builder.expr import Evaluator
from tirc.text.builder.values import (
    DTypeValue,
    HandleType,
    LetAnnotation,
    LocalArray,
    handle_pointer,
)
from tirc.text.syntax import tree


@dataclass(frozen=True, slots=True)
class SliceValue:
    """`lower:upper:step` inside a buffer subscript; missing parts are None."""

    lower: PrimExpr | None
    upper: PrimExpr | None
    step: PrimExpr | None
    span: Span


Index = PrimExpr | SliceValue


def index_items(node: tree.Subscript) -> tuple[tree.Expr, ...]:
    """The written indices; `A[()]` (a 0-d access) has none, `A[(i, j)]` has two."""
    items = node.indices
    if len(items) == 1 and isinstance(items[0], tree.Tuple) and not node.is_tuple:
        return items[0].items
    return items


def evaluate_indices(ev: Evaluator, node: tree.Subscript) -> list[Index]:
    result: list[Index] = []
    for item in index_items(node):
        if isinstance(item, tree.Slice):
            parts = [
                None if part is None else ev.evaluate_expr(part)
                for part in (item.lower, item.upper, item.step)
            ]
            result.append(SliceValue(parts[0], parts[1], parts[2], ev.span(item)))
        else:
            result.append(ev.evaluate_expr(item))
    return result


def _buffer(ev: Evaluator, buffer: Buffer, node: tree.Subscript) -> Any:
    return access(ev, buffer, evaluate_indices(ev, node), ev.span(node))


def _let(ev: Evaluator, value: LetAnnotation, node: tree.Subscript) -> Any:
    items = index_items(node)
    if len(items) != 1:
        raise ev.error(node, "T.let[...] takes one type")
    annotation = ev.check_value(ev.evaluate(items[0]))
    if isinstance(annotation, HandleType):
        return LetAnnotation(dt.HANDLE, handle_pointer(annotation))
    if isinstance(annotation, Var):
        return LetAnnotation(annotation.dtype, annotation.pointer)
    return LetAnnotation(dtype_of(ev, annotation, ev.span(items[0])))


def _local_array(ev: Evaluator, value: DTypeValue, node: tree.Subscript) -> Any:
    shape = tuple(ev.evaluate_expr(item) for item in index_items(node))
    return LocalArray(value.dtype, shape)


def _sequence(ev: Evaluator, value: Any, node: tree.Subscript) -> Any:
    items = index_items(node)
    if len(items) != 1 or isinstance(items[0], tree.Slice):
        raise ev.error(node, "a list takes one integer index")
    index = ev.check_value(ev.evaluate(items[0]))
    if isinstance(index, IntImm):
        index = index.value
    if not isinstance(index, int):
        raise ev.error(items[0], f"a list index must be an integer, not {arith.describe(index)}")
    try:
        return value[index]
    except IndexError:
        raise ev.error(
            items[0], f"index {index} is out of range for a list of {len(value)}"
        ) from None


def _mapping(ev: Evaluator, value: dict[Any, Any], node: tree.Subscript) -> Any:
    items = index_items(node)
    key = ev.check_value(ev.evaluate(items[0]))
    if key not in value:
        raise ev.error(items[0], f"no key {key!r} in the dict")
    return value[key]


def check_rank(ev: Evaluator, buffer: Buffer, count: int, span: Span) -> None:
    if count != buffer.ndim:
        plural = "index" if count == 1 else "indices"
        raise ev.error(
            span,
            f"buffer {buffer.name} has {buffer.ndim} dimension{'s' if buffer.ndim != 1 else ''} "
            f"but {count} {plural} given",
        )


def region_range(ev: Evaluator, buffer: Buffer, axis: int, index: Index) -> Range:
    if isinstance(index, SliceValue):
        zero = IntImm(0, buffer.shape[axis].dtype)
        lower = index.lower if index.lower is not None else zero
        upper = index.upper if index.upper is not None else buffer.shape[axis]
        try:
            # One dtype for both ends (`0:4294967296` is int64 throughout), so that
            # min + extent means the upper bound written.
            lower, upper = arith.match_types(lower, upper)
            return Range(lower, arith.difference(upper, lower), span=index.span)
        except arith.ArithError as problem:
            raise ev.error(index.span, str(problem)) from None
    return Range(index, IntImm(1, index.dtype), span=index.span)


def access(ev: Evaluator, buffer: Buffer, indices: list[Index], span: Span) -> Any:
    """`A[i, j]` (a load) or, when any index is a slice, `A[i, 0:4]` (a region)."""
    check_rank(ev, buffer, len(indices), span)
    points = tuple(index for index in indices if not isinstance(index, SliceValue))
    if len(points) < len(indices):
        region = tuple(region_range(ev, buffer, axis, index) for axis, index in enumerate(indices))
        return BufferRegion(buffer, region, span=span)
    return BufferLoad(buffer, points, span=span)


def store_index(ev: Evaluator, index: Index) -> PrimExpr:
    """A store index; a slice `a:b` stores a vector, so it becomes `T.Ramp(a, 1, b - a)`."""
    if not isinstance(index, SliceValue):
        return index
    if index.lower is None or index.upper is None:
        raise ev.error(index.span, "a stored slice needs both bounds")
    step = index.step if index.step is not None else IntImm(1, index.lower.dtype)
    difference = arith.difference(index.upper, index.lower)
    extent = difference.value if isinstance(difference, IntImm) else None
    scalable = extent is None and vscale_multiple(difference) is not None
    if scalable:  # `A[b:b + T.vscale() * 4]`: a scalable vector, whose lanes the step divides
        extent = vscale_multiple(difference)
        if isinstance(step, IntImm) and extent is not None and extent % step.value:
            raise ev.error(index.span, "a scalable slice's step must divide its extent")
    if extent is None or not isinstance(step, IntImm) or step.value == 0:
        raise ev.error(index.span, "a stored slice needs constant bounds and step")
    if (extent > 0) != (step.value > 0):  # `a:a + 4:-1` or `a:a - 4:2` hold no element
        raise ev.error(index.span, "a stored slice must run the way its step goes")
    # a ramp of lanes a, a + s, ...: `a:a + -4:-2` (as a ramp of stride -2 prints) is 2 lanes
    lanes = -(-extent // step.value)
    stride = arith.cast(index.lower.dtype, step)
    return Ramp(index.lower, stride, lanes, scalable, span=index.span)


def store(
    ev: Evaluator, buffer: Buffer, indices: list[Index], value: Any, span: Span
) -> BufferStore:
    """`A[i] = value`; the value converts to the buffer's element type, as TVM casts it."""
    check_rank(ev, buffer, len(indices), span)
    flat = tuple(store_index(ev, index) for index in indices)
    expr = ev.as_expr(value, span)
    expected = access_dtype(buffer, flat)
    if isinstance(expr, StringImm):
        raise ev.error(span, f"cannot store a string into buffer {buffer.name}")
    try:
        converted = arith.cast(expected, expr)
    except arith.ArithError as problem:
        raise ev.error(span, f"cannot store into {buffer.name}: {problem}") from None
    return BufferStore(buffer, converted, flat, span=span)


# The values that can be indexed, and what indexing each means.
INDEXABLE: Dispatch[Evaluator, [tree.Subscript], Any] = Dispatch("indexing")
INDEXABLE.register(Buffer)(_buffer)
INDEXABLE.register(LetAnnotation)(_let)
INDEXABLE.register(DTypeValue)(_local_array)
INDEXABLE.register(list, tuple)(_sequence)
INDEXABLE.register(dict)(_mapping)


@SUBSCRIPT_RULES.register(object)  # every value: INDEXABLE says which can be indexed
def subscript(ev: Evaluator, value: Any, node: tree.Subscript) -> Any:
    value = ev.check_value(value)
    if is_local_scalar(ev, value, node.value):
        # `x: T.float32 = ...` names its 1-element buffer's load; `x[0]` is the buffer's
        # element, as the printer writes it in regions (`T.reads(x[0])`).
        return _buffer(ev, value.buffer, node)
    rule = INDEXABLE.get(type(value))
    if rule is None:
        raise ev.error(node, f"{arith.describe(value)} cannot be indexed")
    return rule(ev, value, node)


def is_local_scalar(ev: Evaluator, value: Any, node: tree.Expr) -> bool:
    """Whether `node` is the name of a local scalar (`x: T.float32 = ...`), `value` its load."""
    if not isinstance(value, BufferLoad) or not isinstance(node, tree.Name):
        return False
    buffer = value.buffer
    return (
        buffer.name == node.id
        and len(buffer.shape) == 1
        and isinstance(buffer.shape[0], IntImm)
        and buffer.shape[0].value == 1
        and len(value.indices) == 1
        and isinstance(value.indices[0], IntImm)
        and value.indices[0].value == 0
    )

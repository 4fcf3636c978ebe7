"""Binding a call's arguments to a builtin's parameters, and reading them as what they must be.

Every builtin declares a Signature; `bind` reports too many, unknown or missing arguments
at the offending argument. The `expect_*` readers convert an argument (a dtype string, a
shape tuple, an annotation dict) or report, at that argument, what was expected instead.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tirc.diagnostics import Span
from tirc.ir import arith
from tirc.ir import dtype as dt
from tirc.ir.buffer import Buffer
from tirc.ir.dtype import DataType
from tirc.ir.expr import IntImm, PrimExpr, StringImm
from tirc.ir.stmt import Attrs, TargetAttr
from tirc.text.builder.scope import nearest
from tirc.text.builder.values import Arg, DTypeValue, HandleType, Invocation

if TYPE_CHECKING:
    from tirc.text.builder.expr import Evaluator


class _Required:
    def __repr__(self) -> str:
        return "REQUIRED"


REQUIRED: Any = _Required()


@dataclass(frozen=True, slots=True)
class Param:
    name: str
    default: Any = REQUIRED
    keyword_only: bool = False


class Bound:
    """The arguments of one call by parameter name; defaults appear as Args at the call."""

    def __init__(self, values: dict[str, Arg], given: set[str]):
        self.values = values
        self.given = given

    def __getitem__(self, name: str) -> Arg:
        return self.values[name]

    def value(self, name: str) -> Any:
        return self.values[name].value

    def has(self, name: str) -> bool:
        """Whether the call gave this argument (as opposed to its default)."""
        return name in self.given


class Signature:
    def __init__(self, *params: Param | str):
        self.params = tuple(p if isinstance(p, Param) else Param(p) for p in params)
        # The common call gives every parameter by position, in order: nothing to check.
        self.all_positional = not any(p.keyword_only for p in self.params)

    def bind(self, ev: Evaluator, inv: Invocation) -> Bound:
        if self.all_positional and not inv.kwargs and len(inv.args) == len(self.params):
            by_name = {param.name: arg for param, arg in zip(self.params, inv.args, strict=True)}
            return Bound(by_name, set(by_name))
        positional = [p for p in self.params if not p.keyword_only]
        if len(inv.args) > len(positional):
            extra = inv.args[len(positional)]
            raise ev.error(
                extra.span,
                f"{inv.name} takes at most {len(positional)} positional argument"
                f"{'s' if len(positional) != 1 else ''} ({len(inv.args)} given)",
            )
        values: dict[str, Arg] = {}
        for param, arg in zip(positional, inv.args, strict=False):
            values[param.name] = arg
        names = {p.name for p in self.params}
        for name, arg in inv.kwargs.items():
            if name not in names:
                suggestion = nearest(name, [p.name for p in self.params])
                hint = f"; did you mean '{suggestion}'?" if suggestion else ""
                raise ev.error(arg.span, f"{inv.name} has no parameter '{name}'{hint}")
            if name in values:
                raise ev.error(arg.span, f"{inv.name} got '{name}' twice")
            values[name] = arg
        given = set(values)
        for param in self.params:
            if param.name in values:
                continue
            if param.default is REQUIRED:
                raise ev.error(inv.span, f"{inv.name} is missing its argument '{param.name}'")
            values[param.name] = Arg(param.default, inv.span)
        return Bound(values, given)


def expect_expr(ev: Evaluator, arg: Arg) -> PrimExpr:
    return ev.as_expr(arg.value, arg.span)


def expect_int(ev: Evaluator, arg: Arg) -> int:
    value = ev.check_value(arg.value)
    if isinstance(value, IntImm):
        return value.value
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    raise ev.error(arg.span, f"expected an integer constant, got {arith.describe(value)}")


def expect_str(ev: Evaluator, arg: Arg) -> str:
    value = ev.check_value(arg.value)
    if isinstance(value, StringImm):
        return value.value
    if isinstance(value, str):
        return value
    raise ev.error(arg.span, f"expected a string, got {arith.describe(value)}")


def expect_bool(ev: Evaluator, arg: Arg) -> bool:
    value = ev.check_value(arg.value)
    if isinstance(value, IntImm) and value.dtype.is_bool:
        return bool(value.value)
    if isinstance(value, (bool, int)):
        return bool(value)
    raise ev.error(arg.span, f"expected True or False, got {arith.describe(value)}")


def dtype_of(ev: Evaluator, value: Any, span: Span) -> DataType:
    """A dtype written as a string (`"float32"`) or a type (`T.float32`)."""
    value = ev.check_value(value)
    if isinstance(value, DTypeValue):
        return value.dtype
    if isinstance(value, HandleType):
        return dt.HANDLE
    if isinstance(value, StringImm):
        value = value.value
    if isinstance(value, DataType):
        return value
    if not isinstance(value, str):
        raise ev.error(span, f"expected a data type, got {arith.describe(value)}")
    try:
        return dt.parse_dtype(value)
    except dt.DTypeError:
        suggestion = nearest(value, list(dt.SCALAR_NAMES))
        hint = f"; did you mean '{suggestion}'?" if suggestion else ""
        raise ev.error(span, f"unknown data type '{value}'{hint}") from None


def expect_dtype(ev: Evaluator, arg: Arg) -> DataType:
    return dtype_of(ev, arg.value, arg.span)


def expect_buffer(ev: Evaluator, arg: Arg) -> Buffer:
    value = ev.check_value(arg.value)
    if isinstance(value, Buffer):
        return value
    raise ev.error(arg.span, f"expected a buffer, got {arith.describe(value)}")


def expect_shape(ev: Evaluator, arg: Arg) -> tuple[PrimExpr, ...]:
    """A shape: one extent or a tuple or list of them; Python ints become int32 constants."""
    value = ev.check_value(arg.value)
    items = value if isinstance(value, (tuple, list)) else (value,)
    return tuple(expect_extent(ev, item, arg.span) for item in items)


def expect_extent(ev: Evaluator, value: Any, span: Span) -> PrimExpr:
    """One dimension of a shape: a scalar integer (a float or vector extent would reach
    lowering, which has no meaning for it)."""
    extent = ev.as_expr(value, span)
    dtype = extent.dtype
    if not (dtype.is_integer and dtype.is_scalar):
        raise ev.error(span, f"a buffer's shape holds scalar integers, not {dtype}")
    return extent


def expect_list(ev: Evaluator, arg: Arg) -> list[Any]:
    value = ev.check_value(arg.value)
    if isinstance(value, (list, tuple)):
        return list(value)
    raise ev.error(arg.span, f"expected a list, got {arith.describe(value)}")


def attr_value(ev: Evaluator, value: Any, span: Span) -> Any:
    """An annotation value as the IR keeps it: scalars and expressions as they are, lists as
    tuples, dicts as Attrs."""
    value = ev.check_value(value)
    if isinstance(value, dict):
        return expect_attrs_value(ev, value, span)
    if isinstance(value, (list, tuple)):
        return tuple(attr_value(ev, item, span) for item in value)
    if isinstance(value, float) and not math.isfinite(value):
        # The printer has no spelling for it that reads back as the same Python number.
        raise ev.error(span, f"an annotation value must be a finite number, not {value}")
    if value is None or isinstance(value, (bool, int, float, str, PrimExpr, Buffer, TargetAttr)):
        return value
    raise ev.error(span, f"{arith.describe(value)} cannot be an annotation value")


def expect_attrs_value(ev: Evaluator, value: dict[Any, Any], span: Span) -> Attrs:
    items = []
    for key, item in value.items():
        if isinstance(key, StringImm):
            key = key.value
        if not isinstance(key, str):
            raise ev.error(span, f"annotation keys must be strings, got {arith.describe(key)}")
        items.append((key, attr_value(ev, item, span)))
    return Attrs(tuple(items))


def expect_attrs(ev: Evaluator, arg: Arg) -> Attrs:
    value = ev.check_value(arg.value)
    if value is None:
        return Attrs()
    if not isinstance(value, dict):
        raise ev.error(arg.span, f"expected a dict of annotations, got {arith.describe(value)}")
    return expect_attrs_value(ev, value, arg.span)

"""Operator semantics of TVMScript expressions: literal typing, implicit casts, constant folding.

What `a + b` means when the parser meets it, as TVM 0.27 decides: Python numbers become
int32 / int64 / float32 / bool constants; operands of different dtypes meet at a common one
(floats over integers, wider over narrower, unsigned over signed of one width, float16 over
bfloat16); constants fold, and so do identities such as `x * 1` and `x + 0`, wrapped to the
dtype (`T.int8(127) + T.int8(1)` is `T.int8(-128)`). Remainders fold on int32 and int64 only
(and of two unsigned constants), as TVM's do: `T.int8(0) % x` keeps the division that traps
when x is 0. Explicit constructors (`T.Add(a, b)`) bypass all of this and build the node as
written.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Callable
from typing import Any

from tirc.diagnostics import Span
from tirc.ir import canonical
from tirc.ir import dtype as dt
from tirc.ir import expr as ir
from tirc.ir.dtype import DataType
from tirc.ir.expr import FloatImm, IntImm, PrimExpr
from tirc.ir.integer import int_range, is_index_type, truncdiv, truncmod, wrap


class ArithError(Exception):
    """An operation the language rejects; the caller locates it at the expression."""


INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


def literal(value: object, span: Span | None = None) -> PrimExpr:
    """The constant a Python literal stands for when it meets an expression."""
    if isinstance(value, bool):
        return IntImm(int(value), dt.BOOL, span=span)
    if isinstance(value, int):
        if INT32_MIN <= value <= INT32_MAX:
            return IntImm(value, dt.INT32, span=span)
        if INT64_MIN <= value <= INT64_MAX:
            return IntImm(value, dt.INT64, span=span)
        raise ArithError(f"integer {value} does not fit in int64")
    if isinstance(value, float):
        return FloatImm(value, dt.FLOAT32, span=span)
    if isinstance(value, str):
        return ir.StringImm(value, span=span)
    raise ArithError(f"expected an expression, got {describe(value)}")


def describe(value: object) -> str:
    """A short phrase naming what kind of value this is, for messages."""
    if isinstance(value, PrimExpr):
        return f"an expression of type {value.dtype}"
    if value is None:
        return "None"
    if isinstance(value, bool):
        return "a bool"
    if isinstance(value, (int, float)):
        return f"the number {value}"
    if isinstance(value, str):
        return f"the string {value!r}"
    if isinstance(value, (list, tuple)):
        return "a list" if isinstance(value, list) else "a tuple"
    name = type(value).__name__
    return getattr(value, "description", None) or f"a {name}"


def as_expr(value: object, span: Span | None = None) -> PrimExpr:
    if isinstance(value, PrimExpr):
        return value
    return literal(value, span)


def round_float(value: float, dtype: DataType) -> float:
    """`value` rounded to the precision of a 32-bit float when the dtype is one."""
    if dtype.bits != 32 or math.isnan(value) or math.isinf(value):
        return value
    try:
        return struct.unpack("f", struct.pack("f", value))[0]
    except OverflowError:
        return math.copysign(math.inf, value)


def make_const(value: int | float | bool, dtype: DataType, span: Span | None = None) -> PrimExpr:
    """A constant of `dtype` (a vector dtype broadcasts), converting the value as a cast does."""
    if dtype.is_vector:
        return ir.Broadcast(make_const(value, dtype.element, span), dtype.lanes, span=span)
    if dtype.is_float:
        return FloatImm(float(value), dtype, span=span)
    if dtype.is_integer or dtype.is_bool:
        if isinstance(value, float):
            if math.isnan(value) or math.isinf(value):
                raise ArithError(f"cannot convert {value} to {dtype}")
            value = int(value)
        return IntImm(wrap(int(value), dtype), dtype, span=span)
    raise ArithError(f"cannot make a constant of type {dtype}")


def checked_const(value: int | float | bool, dtype: DataType, span: Span | None = None) -> PrimExpr:
    """`T.int8(300)`, `T.uint32(-1)`: a constant the user wrote, which must fit its type."""
    if (dtype.is_integer or dtype.is_bool) and not isinstance(value, float):
        number = int(value)
        low, high = int_range(dtype)
        if dtype.is_bool and not low <= number <= high:
            raise ArithError(f"{number} is not a valid bool")
        if dtype.is_uint and number < 0:
            raise ArithError(f"cannot make {dtype} from negative value {number}")
        if not low <= number <= high:
            raise ArithError(f"{number} does not fit in {dtype}")
    return make_const(value, dtype, span)


def cast(dtype: DataType, value: PrimExpr) -> PrimExpr:
    """An implicit conversion: folds constants, broadcasts a scalar to a vector type. What it
    makes has the span of what it converts."""
    source: DataType = value.dtype
    if source is dtype or source == dtype:
        return value
    span = value.span
    if dtype.is_vector and source.is_scalar:
        return ir.Broadcast(cast(dtype.element, value), dtype.lanes, span=span)
    if isinstance(value, (IntImm, FloatImm)) and dtype.is_scalar and not dtype.is_handle:
        if dtype.is_uint and isinstance(value, IntImm) and value.value < 0:
            raise ArithError(f"cannot make {dtype} from negative value {value.value}")
        return make_const(value.value, dtype, span)
    if source.lanes != dtype.lanes:
        raise ArithError(f"cannot convert {source} to {dtype}: the lane counts differ")
    return ir.Cast(dtype, value, span=span)


def _rank(dtype: DataType) -> tuple[int, int]:
    """Which of two integer types of different widths or signedness wins."""
    return (dtype.bits, 1 if dtype.is_uint or dtype.is_bool else 0)


def common_type(a: DataType, b: DataType) -> DataType:
    """The element type two operands meet at; raises ArithError when there is none."""
    a, b = a.element, b.element
    if a == b:
        return a
    if a.is_handle or b.is_handle or a.is_void or b.is_void:
        raise ArithError(f"type mismatch: {a} and {b} cannot be combined")
    if a.is_float and b.is_float:
        if a.bits != b.bits:
            return a if a.bits > b.bits else b
        return a if a.kind == "float" else b  # float16 over bfloat16 (over float8 kinds)
    if a.is_float:
        return a
    if b.is_float:
        return b
    return a if _rank(a) > _rank(b) else b


def match_types(a: PrimExpr, b: PrimExpr) -> tuple[PrimExpr, PrimExpr]:
    """Both operands converted to their common dtype; a scalar broadcasts to a vector."""
    a_type: DataType = a.dtype
    b_type: DataType = b.dtype
    if a_type is b_type:
        return a, b
    element = common_type(a_type, b_type)
    if a_type.lanes != b_type.lanes and a_type.is_vector and b_type.is_vector:
        raise ArithError(f"type mismatch: {a_type} and {b_type} have different lane counts")
    lanes = max(a_type.lanes, b_type.lanes)
    target = element.with_lanes(lanes)
    return cast(target, a), cast(target, b)


def _value(expr: PrimExpr) -> int | float | None:
    if isinstance(expr, (IntImm, FloatImm)):
        return expr.value
    return None


def _is_const(expr: PrimExpr, number: int) -> bool:
    value = _value(expr)
    return value is not None and value == number


def _folds_floats(dtype: DataType) -> bool:
    return dtype.bits in (32, 64)


def _fold_number(dtype: DataType, value: int | float, span: Span | None = None) -> PrimExpr:
    if dtype.is_float:
        return FloatImm(round_float(float(value), dtype), dtype, span=span)
    return IntImm(wrap(int(value), dtype), dtype, span=span)


def _both(a: PrimExpr, b: PrimExpr) -> tuple[int | float, int | float] | None:
    x, y = _value(a), _value(b)
    if x is None or y is None:
        return None
    dtype: DataType = a.dtype
    if dtype.is_float and not _folds_floats(dtype):
        return None
    return x, y


def _fold_add(a: PrimExpr, b: PrimExpr, span: Span | None) -> PrimExpr | None:
    both = _both(a, b)
    if both is not None:
        return _fold_number(a.dtype, both[0] + both[1], span)
    if _is_const(a, 0):
        return b
    if _is_const(b, 0):
        return a
    return None


def _fold_sub(a: PrimExpr, b: PrimExpr, span: Span | None) -> PrimExpr | None:
    both = _both(a, b)
    if both is not None:
        return _fold_number(a.dtype, both[0] - both[1], span)
    if _is_const(b, 0):
        return a
    return None


def _fold_mul(a: PrimExpr, b: PrimExpr, span: Span | None) -> PrimExpr | None:
    both = _both(a, b)
    if both is not None:
        return _fold_number(a.dtype, both[0] * both[1], span)
    if _is_const(a, 1):
        return b
    if _is_const(b, 1):
        return a
    if _is_const(a, 0):
        return a
    if _is_const(b, 0):
        return b
    return None


def _check_divisor(b: PrimExpr) -> None:
    if _is_const(b, 0) and not b.dtype.is_float:
        raise ArithError("division by zero")


def _fold_div(a: PrimExpr, b: PrimExpr, span: Span | None) -> PrimExpr | None:
    _check_divisor(b)
    both = _both(a, b)
    dtype: DataType = a.dtype
    if both is not None:
        x, y = both
        if dtype.is_float:
            if y == 0:
                return None
            return _fold_number(dtype, x / y, span)
        return _fold_number(dtype, truncdiv(int(x), int(y)), span)
    if _is_const(a, 0):
        return a
    if _is_const(b, 1):
        return a
    return None


def _fold_mod(a: PrimExpr, b: PrimExpr, span: Span | None) -> PrimExpr | None:
    """Index types only, as TVM: `T.int8(0) % x` keeps its division, which traps when x is 0."""
    _check_divisor(b)
    if not is_index_type(a.dtype):
        return None
    both = _both(a, b)
    if both is not None:
        x, y = int(both[0]), int(both[1])
        return _fold_number(a.dtype, truncmod(x, y), span)
    if _is_const(a, 0):
        return a
    if _is_const(b, 1):
        return make_const(0, a.dtype, span)
    return None


def _fold_floordiv(a: PrimExpr, b: PrimExpr, span: Span | None) -> PrimExpr | None:
    _check_divisor(b)
    both = _both(a, b)
    if both is not None:
        return _fold_number(a.dtype, int(both[0]) // int(both[1]), span)
    if _is_const(a, 0):
        return a
    if _is_const(b, 1):
        return a
    return None


def _fold_floormod(a: PrimExpr, b: PrimExpr, span: Span | None) -> PrimExpr | None:
    """Index types, and two unsigned constants (TVM's exceptions); `0 % x` and `x % 1` of
    other widths stay as written."""
    _check_divisor(b)
    both = _both(a, b)
    dtype: DataType = a.dtype
    if not is_index_type(dtype):
        if both is None or not dtype.is_uint:
            return None
    if both is not None:
        return _fold_number(a.dtype, int(both[0]) % int(both[1]), span)
    if _is_const(a, 0):
        return a
    if _is_const(b, 1):
        return make_const(0, a.dtype, span)
    return None


def _fold_min(a: PrimExpr, b: PrimExpr, span: Span | None) -> PrimExpr | None:
    both = _both(a, b)
    if both is not None:
        return _fold_number(a.dtype, min(both), span)
    return a if a is b else None


def _fold_max(a: PrimExpr, b: PrimExpr, span: Span | None) -> PrimExpr | None:
    both = _both(a, b)
    if both is not None:
        return _fold_number(a.dtype, max(both), span)
    return a if a is b else None


def _compare_folder(test: Callable[[float, float], bool]) -> Callable[..., PrimExpr | None]:
    def fold(a: PrimExpr, b: PrimExpr, span: Span | None) -> PrimExpr | None:
        x, y = _value(a), _value(b)
        if x is None or y is None:
            return None
        lanes = a.dtype.lanes
        return make_const(test(x, y), dt.BOOL.with_lanes(lanes), span)

    return fold


Folder = Callable[[PrimExpr, PrimExpr, Span | None], PrimExpr | None]
# node class, constant folder, whether both operands must be integers
ARITHMETIC: dict[str, tuple[Any, Folder, bool]] = {
    "+": (ir.Add, _fold_add, False),
    "-": (ir.Sub, _fold_sub, False),
    "*": (ir.Mul, _fold_mul, False),
    "truncdiv": (ir.Div, _fold_div, True),
    "truncmod": (ir.Mod, _fold_mod, False),  # on floats too, as TVM's: C's fmod
    "floordiv": (ir.FloorDiv, _fold_floordiv, True),
    "floormod": (ir.FloorMod, _fold_floormod, True),
    "div": (ir.Div, _fold_div, False),
    "min": (ir.Min, _fold_min, False),
    "max": (ir.Max, _fold_max, False),
    "<": (ir.LT, _compare_folder(lambda x, y: x < y), False),
    "<=": (ir.LE, _compare_folder(lambda x, y: x <= y), False),
    ">": (ir.GT, _compare_folder(lambda x, y: x > y), False),
    ">=": (ir.GE, _compare_folder(lambda x, y: x >= y), False),
    "==": (ir.EQ, _compare_folder(lambda x, y: x == y), False),
    "!=": (ir.NE, _compare_folder(lambda x, y: x != y), False),
}
# the intrinsic each bitwise operator is a call of
BITWISE = {
    "<<": "shift_left",
    ">>": "shift_right",
    "&": "bitwise_and",
    "|": "bitwise_or",
    "^": "bitwise_xor",
}


_FOLDERS: dict[type, Folder] = {node: folder for node, folder, _ in ARITHMETIC.values()}
_FOLDERS[ir.Div] = _fold_div  # truncdiv and div share the node


def fold(node: ir.BinaryOp) -> PrimExpr | None:
    """What `node` folds to by the parser's rules (TVM's constant folding, per dtype), or None:
    constants and identities only, nothing a division by a constant zero would raise. All
    the simplifier does with the arithmetic of integers that are no index type."""
    folder = _FOLDERS.get(type(node))
    if folder is None:
        return None
    if isinstance(node, (ir.Div, ir.Mod, ir.FloorDiv, ir.FloorMod)) and _is_const(node.b, 0):
        return None
    return folder(node.a, node.b, node.span)


def arithmetic(op: str, a: object, b: object, span: Span | None = None) -> PrimExpr:
    """`a op b` for an operator key of ARITHMETIC, with TVM's conversions and folding."""
    node, fold, integers_only = ARITHMETIC[op]
    left, right = match_types(as_expr(a, span), as_expr(b, span))
    dtype: DataType = left.dtype
    if integers_only and not (dtype.is_integer or dtype.is_bool):
        raise ArithError(f"{op} needs integer operands, not {dtype}")
    if dtype.is_handle:
        raise ArithError(f"cannot apply {op} to handles")
    folded = fold(left, right, span)
    if folded is not None:
        return folded
    result: PrimExpr = node(left, right, span=span)
    return result


def bitwise(op: str, a: object, b: object, span: Span | None = None) -> PrimExpr:
    left, right = match_types(as_expr(a, span), as_expr(b, span))
    dtype: DataType = left.dtype
    if not (dtype.is_integer or dtype.is_bool):
        raise ArithError(f"'{op}' needs integer operands, not {dtype}")
    return ir.Call(dtype, BITWISE[op], (left, right), span=span)


def negate(a: PrimExpr, span: Span | None = None) -> PrimExpr:
    """`-a`: a negated constant, else `a * -1` (as TVM writes it)."""
    dtype: DataType = a.dtype
    if isinstance(a, IntImm):
        return IntImm(wrap(-a.value, dtype), dtype, span=span)
    if isinstance(a, FloatImm):
        return FloatImm(-a.value, dtype, span=span)
    if dtype.is_handle or dtype.is_bool:
        raise ArithError(f"cannot negate a {dtype}")
    return ir.Mul(a, make_const(-1, dtype, span), span=span)


def invert(a: PrimExpr, span: Span | None = None) -> PrimExpr:
    dtype: DataType = a.dtype
    if not (dtype.is_integer or dtype.is_bool):
        raise ArithError(f"'~' needs an integer operand, not {dtype}")
    return ir.Call(dtype, "bitwise_not", (a,), span=span)


def to_bool(value: object, span: Span | None = None) -> PrimExpr:
    """An operand of `and`, `or`, `not`, `T.where` or `if` as a bool expression."""
    expr = as_expr(value, span)
    dtype: DataType = expr.dtype
    if dtype.element.is_bool:
        return expr
    if isinstance(expr, IntImm):
        return IntImm(int(expr.value != 0), dt.BOOL, span=expr.span)
    raise ArithError(f"expected a bool condition, got {describe(expr)}")


def logical(op: str, a: object, b: object, span: Span | None = None) -> PrimExpr:
    """`and` / `or` between expressions: the node as written, without folding."""
    left, right = to_bool(a, span), to_bool(b, span)
    return ir.And(left, right, span=span) if op == "and" else ir.Or(left, right, span=span)


def logical_not(a: object, span: Span | None = None) -> PrimExpr:
    return ir.Not(to_bool(a, span), span=span)


def difference(upper: PrimExpr, lower: PrimExpr) -> PrimExpr:
    """`upper - lower` with like terms collected: the extent of [lower, upper).

    TVM's parser simplifies the extents it computes, so `A[i * 4:i * 4 + 4]` has extent 4 and
    `range(3, n + 5)` has extent `n + 2`; terms stay in the order written. Exact for affine
    integer expressions; anything else is subtracted as it is.
    """
    upper, lower = match_types(upper, lower)
    dtype: DataType = upper.dtype
    if not (dtype.is_scalar and dtype.is_integer):
        return arithmetic("-", upper, lower)
    return canonical.difference(upper, lower, order="written")


def constant_difference(upper: PrimExpr, lower: PrimExpr) -> int | None:
    """`upper - lower` when it is a known integer, else None."""
    result = difference(upper, lower)
    return result.value if isinstance(result, IntImm) else None

"""Expressions of both dialects: scalars and vectors of a DataType.

Binary operators require operands of one dtype (the parser inserts the casts TVMScript
implies); comparison and logic results are `bool` with the operands' lane count.
`Buffer` is defined here too, beside `BufferLoad`: each refers to the other, and
`tirc.ir.buffer` (the regions of buffers) re-exports it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeGuard

from tirc.diagnostics import DiagnosticError
from tirc.ir import dtype as dt
from tirc.ir.dtype import DataType
from tirc.ir.node import IRError, Node


@dataclass(frozen=True, slots=True, eq=False)
class PrimExpr(Node):
    """Base of every expression; `dtype` is a field of each subclass."""

    if TYPE_CHECKING:
        # Declared for the checker only: a field here would come first in every subclass's
        # constructor, before the fields that each subclass places ahead of its own `dtype`.
        @property
        def dtype(self) -> DataType: ...

    @property
    def type(self) -> DataType:  # pragma: no cover - convenience alias
        return self.dtype


@dataclass(frozen=True, slots=True, eq=False)
class PointerType:
    """The type of a handle that points at `element` values in memory `scope`."""

    element: DataType
    scope: str = "global"


@dataclass(frozen=True, slots=True, eq=False)
class Var(PrimExpr):
    """A variable; compared by identity, and up to renaming by structural equality."""

    name: str
    dtype: DataType = dt.INT32
    pointer: PointerType | None = None  # set for typed handles (`T.handle("float32")`)
    is_size_var: bool = False  # known non-negative (shape variables)


@dataclass(frozen=True, slots=True, eq=False)
class IntImm(PrimExpr):
    value: int
    dtype: DataType = dt.INT32

    def __post_init__(self) -> None:
        if not (self.dtype.is_integer or self.dtype.is_bool) or self.dtype.is_vector:
            raise IRError(f"integer constant of non-integer type {self.dtype}")


@dataclass(frozen=True, slots=True, eq=False)
class FloatImm(PrimExpr):
    value: float
    dtype: DataType = dt.FLOAT32

    def __post_init__(self) -> None:
        if not self.dtype.is_float or self.dtype.is_vector:
            raise IRError(f"float constant of non-float type {self.dtype}")


@dataclass(frozen=True, slots=True, eq=False)
class StringImm(PrimExpr):
    value: str
    dtype: DataType = field(default=dt.HANDLE, init=False)


@dataclass(frozen=True, slots=True, eq=False)
class Cast(PrimExpr):
    dtype: DataType
    value: PrimExpr

    def __post_init__(self) -> None:
        if self.dtype.lanes != self.value.dtype.lanes:
            raise IRError(f"cannot cast {self.value.dtype} to {self.dtype}: lane counts differ")


def _same_dtype(name: str, a: PrimExpr, b: PrimExpr) -> DataType:
    a_type, b_type = a.dtype, b.dtype
    if a_type != b_type:
        raise IRError(f"operands of {name} have different types: {a_type} and {b_type}")
    return a_type


@dataclass(frozen=True, slots=True, eq=False)
class BinaryOp(PrimExpr):
    """Arithmetic on two operands of one dtype; the result has that dtype."""

    a: PrimExpr
    b: PrimExpr
    dtype: DataType = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "dtype", _same_dtype(type(self).__name__, self.a, self.b))


@dataclass(frozen=True, slots=True, eq=False)
class Add(BinaryOp):
    pass


@dataclass(frozen=True, slots=True, eq=False)
class Sub(BinaryOp):
    pass


@dataclass(frozen=True, slots=True, eq=False)
class Mul(BinaryOp):
    pass


@dataclass(frozen=True, slots=True, eq=False)
class Div(BinaryOp):
    """Truncating division for integers (`T.truncdiv`), true division for floats."""


@dataclass(frozen=True, slots=True, eq=False)
class Mod(BinaryOp):
    """Truncating remainder (`T.truncmod`): the sign follows the dividend."""


@dataclass(frozen=True, slots=True, eq=False)
class FloorDiv(BinaryOp):
    """`a // b`: rounds toward negative infinity."""


@dataclass(frozen=True, slots=True, eq=False)
class FloorMod(BinaryOp):
    """`a % b`: the sign follows the divisor."""


@dataclass(frozen=True, slots=True, eq=False)
class Min(BinaryOp):
    pass


@dataclass(frozen=True, slots=True, eq=False)
class Max(BinaryOp):
    pass


@dataclass(frozen=True, slots=True, eq=False)
class CompareOp(PrimExpr):
    """Comparison of two operands of one dtype; the result is bool with their lanes."""

    a: PrimExpr
    b: PrimExpr
    dtype: DataType = field(init=False)

    def __post_init__(self) -> None:
        operands = _same_dtype(type(self).__name__, self.a, self.b)
        object.__setattr__(self, "dtype", dt.BOOL.with_lanes(operands.lanes, operands.scalable))


@dataclass(frozen=True, slots=True, eq=False)
class EQ(CompareOp):
    pass


@dataclass(frozen=True, slots=True, eq=False)
class NE(CompareOp):
    pass


@dataclass(frozen=True, slots=True, eq=False)
class LT(CompareOp):
    pass


@dataclass(frozen=True, slots=True, eq=False)
class LE(CompareOp):
    pass


@dataclass(frozen=True, slots=True, eq=False)
class GT(CompareOp):
    pass


@dataclass(frozen=True, slots=True, eq=False)
class GE(CompareOp):
    pass


@dataclass(frozen=True, slots=True, eq=False)
class LogicalOp(PrimExpr):
    """`T.And` / `T.Or` of two bool operands (short-circuit free: both are pure)."""

    a: PrimExpr
    b: PrimExpr
    dtype: DataType = field(init=False)

    def __post_init__(self) -> None:
        result = _same_dtype(type(self).__name__, self.a, self.b)
        if not result.is_bool:
            raise IRError(f"operands of {type(self).__name__} must be bool, not {result}")
        object.__setattr__(self, "dtype", result)


@dataclass(frozen=True, slots=True, eq=False)
class And(LogicalOp):
    pass


@dataclass(frozen=True, slots=True, eq=False)
class Or(LogicalOp):
    pass


@dataclass(frozen=True, slots=True, eq=False)
class Not(PrimExpr):
    a: PrimExpr
    dtype: DataType = field(init=False)

    def __post_init__(self) -> None:
        if not self.a.dtype.is_bool:
            raise IRError(f"operand of Not must be bool, not {self.a.dtype}")
        object.__setattr__(self, "dtype", self.a.dtype)


@dataclass(frozen=True, slots=True, eq=False)
class Select(PrimExpr):
    """Both values are evaluated; contrast `T.if_then_else`, which evaluates one."""

    condition: PrimExpr
    true_value: PrimExpr
    false_value: PrimExpr
    dtype: DataType = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "dtype", _same_dtype("Select", self.true_value, self.false_value))


@dataclass(frozen=True, slots=True, eq=False)
class Ramp(PrimExpr):
    """The vector [base, base + stride, ..., base + (lanes - 1) * stride]; `scalable`: of
    `T.vscale() * lanes` lanes."""

    base: PrimExpr
    stride: PrimExpr
    lanes: int
    scalable: bool = False
    dtype: DataType = field(init=False)

    def __post_init__(self) -> None:
        element = _same_dtype("Ramp", self.base, self.stride)
        if element.is_vector or self.lanes < 1:
            raise IRError("Ramp needs scalar base and stride and a positive lane count")
        object.__setattr__(self, "dtype", element.with_lanes(self.lanes, self.scalable))


@dataclass(frozen=True, slots=True, eq=False)
class Broadcast(PrimExpr):
    """`value` in each of `lanes` lanes (`T.vscale() * lanes` where `scalable`)."""

    value: PrimExpr
    lanes: int
    scalable: bool = False
    dtype: DataType = field(init=False)

    def __post_init__(self) -> None:
        element: DataType = self.value.dtype
        if element.is_vector or self.lanes < 1:
            raise IRError("Broadcast needs a scalar value and a positive lane count")
        object.__setattr__(self, "dtype", element.with_lanes(self.lanes, self.scalable))


@dataclass(frozen=True, slots=True, eq=False)
class Shuffle(PrimExpr):
    """Lanes `indices` picked from the concatenation of `vectors`."""

    vectors: tuple[PrimExpr, ...]
    indices: tuple[PrimExpr, ...]
    dtype: DataType = field(init=False)

    def __post_init__(self) -> None:
        if not self.vectors:
            raise IRError("Shuffle needs at least one vector")
        element: DataType = self.vectors[0].dtype.element
        object.__setattr__(self, "dtype", element.with_lanes(len(self.indices)))


@dataclass(frozen=True, slots=True, eq=False)
class Let(PrimExpr):
    """`body` with `var` bound to `value` (`T.Let(body, where={var: value})`)."""

    var: Var
    value: PrimExpr
    body: PrimExpr
    dtype: DataType = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "dtype", self.body.dtype)


@dataclass(frozen=True, slots=True, eq=False)
class Call(PrimExpr):
    """A call of intrinsic `op` (a name in `tirc.ir.intrinsics`): math, builtins, externs;
    or, with `op` spelled `Module.name`, of another function of the module (a subroutine,
    whose result type is its return type)."""

    dtype: DataType
    op: str
    args: tuple[object, ...]  # PrimExprs, and for a few builtins a Buffer or DataType

    def expr_arg(self, i: int) -> PrimExpr:
        """Argument `i` (negative counts from the end), which must be a PrimExpr."""
        arg = self.args[i]
        if not isinstance(arg, PrimExpr):
            raise DiagnosticError.at(
                self.span,
                f"argument {i} of T.{self.op} must be an expression, not a {type(arg).__name__}",
            )
        return arg

    def expr_args(self, start: int = 0) -> list[PrimExpr]:
        """Arguments `start` onward, each of which must be a PrimExpr."""
        return [self.expr_arg(i) for i in range(start, len(self.args))]


# `Module.name` in a Call's op: a call of function `name` of the same module, as TVM
# prints it (every module prints as `class Module`)
SUBROUTINE_PREFIX = "Module."


def subroutine_name(call: Call) -> str | None:
    """The function a call of another function of the module names, else None."""
    if call.op.startswith(SUBROUTINE_PREFIX):
        return call.op[len(SUBROUTINE_PREFIX) :]
    return None


@dataclass(frozen=True, slots=True, eq=False)
class Buffer(Node):
    name: str
    data: Var  # a handle; its pointer type names the element type and storage scope
    dtype: DataType
    shape: tuple[PrimExpr, ...]
    strides: tuple[PrimExpr, ...] = ()  # empty: compact row-major
    elem_offset: PrimExpr | None = None  # None: zero
    data_alignment: int = 64
    offset_factor: int = 1
    axis_separators: tuple[int, ...] = ()
    buffer_type: str = "default"  # or "auto_broadcast"

    def __post_init__(self) -> None:
        if self.strides and len(self.strides) != len(self.shape):
            raise IRError(
                f"buffer {self.name} has {len(self.shape)} dimensions "
                f"but {len(self.strides)} strides"
            )

    @property
    def scope(self) -> str:
        return self.data.pointer.scope if self.data.pointer is not None else "global"

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def index_dtype(self) -> DataType:
        """The dtype of this buffer's index arithmetic: that of its shape, the widest of its
        extents' when they differ (TVM builds `T.Buffer((T.int64(16), 16))`)."""
        widest: DataType | None = None
        for extent in self.shape:
            if widest is None or extent.dtype.bits > widest.bits:
                widest = extent.dtype
        return widest if widest is not None else dt.INT32


@dataclass(frozen=True, slots=True, eq=False)
class BufferLoad(PrimExpr):
    """`buffer[indices]`; a Ramp index loads a vector. `predicate` masks lanes."""

    buffer: Buffer
    indices: tuple[PrimExpr, ...]
    predicate: PrimExpr | None = None
    dtype: DataType = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "dtype", access_dtype(self.buffer, self.indices))


def access_dtype(buffer: Buffer, indices: tuple[PrimExpr, ...]) -> DataType:
    """The dtype of `buffer[indices]`: the element type widened by the last index's lanes."""
    last = indices[-1].dtype if indices else dt.INT32
    element = buffer.dtype
    if last.scalable and element.is_scalar:
        return element.with_lanes(last.lanes, scalable=True)
    return element if last.lanes == 1 else element.with_lanes(element.lanes * last.lanes)


@dataclass(frozen=True, slots=True, eq=False)
class CommReducer(Node):
    """A commutative reducer: `combine(lhs, rhs)` per result, with `identity` elements."""

    lhs: tuple[Var, ...]
    rhs: tuple[Var, ...]
    result: tuple[PrimExpr, ...]
    identity: tuple[PrimExpr, ...]


def const(value: int | float | bool, dtype: DataType | str = dt.INT32) -> PrimExpr:
    """An IntImm or FloatImm of `dtype` holding `value`."""
    if isinstance(dtype, str):
        dtype = dt.parse_dtype(dtype)
    if dtype.is_float:
        return FloatImm(float(value), dtype)
    return IntImm(int(value), dtype)


def is_const_int(expr: object, value: int | None = None) -> bool:
    return isinstance(expr, IntImm) and (value is None or expr.value == value)


def is_true(expr: object) -> bool:
    """Whether `expr` is a constant that holds (a predicate `True`, a non-zero flag)."""
    return isinstance(expr, IntImm) and expr.value != 0


def int_value(expr: object) -> int:
    """The value of an integer constant that the caller knows `expr` to be (a buffer's extent
    after a pass that made it constant); IRError for anything else."""
    if not isinstance(expr, IntImm):
        raise IRError(f"expected an integer constant, got {type(expr).__name__}")
    return expr.value


def are_exprs(values: tuple[object, ...]) -> TypeGuard[tuple[PrimExpr, ...]]:
    """Whether every value is an expression (a Call's arguments may also be buffers or
    dtypes, for a few builtins)."""
    return all(isinstance(value, PrimExpr) for value in values)


BINARY_OPS: tuple[type[PrimExpr], ...] = (Add, Sub, Mul, Div, Mod, FloorDiv, FloorMod, Min, Max)
COMPARE_OPS: tuple[type[PrimExpr], ...] = (EQ, NE, LT, LE, GT, GE)


def vscale_times(multiple: int) -> PrimExpr:
    """`T.vscale() * multiple`: the lanes of a scalable vector, as TVM writes them."""
    return Mul(Call(dt.INT32, "vscale", ()), IntImm(multiple))


def vscale_multiple(expr: object) -> int | None:
    """k where `expr` is `T.vscale()` times the constant k (`T.vscale() * 4 * 2` is 8), else
    None: how the text spells a scalable vector's lanes."""
    if isinstance(expr, Call) and expr.op == "vscale" and not expr.args:
        return 1
    if isinstance(expr, Mul):
        for factor, other in ((expr.a, expr.b), (expr.b, expr.a)):
            if isinstance(other, IntImm) and other.value > 0:
                inner = vscale_multiple(factor)
                if inner is not None:
                    return inner * other.value
    return None

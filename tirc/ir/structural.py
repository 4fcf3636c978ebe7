"""Structural equality and hashing: equal up to renaming of bound variables and buffers.

The one place alpha-equivalence is defined (`expr_key` is its strict sibling, with free
variables and buffers compared by identity). Traversal follows field order, which in a
well-formed program meets each variable's definition before its uses; the first meeting of two
variables binds them to each other, every later meeting must agree. Var and Buffer names,
and spans, are ignored; block names, attributes and function names are not.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any

from tirc.diagnostics.span import Span
from tirc.ir.buffer import Buffer
from tirc.ir.dtype import DataType
from tirc.ir.expr import FloatImm, PointerType, Var
from tirc.ir.function import IRModule
from tirc.ir.functor import child_fields
from tirc.ir.node import Node
from tirc.ir.stmt import Attrs

_BUFFER_FIELDS = (
    "data",
    "dtype",
    "shape",
    "strides",
    "elem_offset",
    "data_alignment",
    "offset_factor",
    "axis_separators",
    "buffer_type",
)


@dataclass
class Difference:
    """Where two trees first differ: a field path, the two values, and why."""

    path: str
    lhs: Any
    rhs: Any
    message: str
    lhs_span: Span | None = None
    rhs_span: Span | None = None


# Values compared by `==` alone (the last case of _Comparer._compare), of exactly these types.
_PLAIN = frozenset({str, int, float, bool, type(None), DataType})


class _Mismatch(Exception):
    def __init__(self, lhs: Any, rhs: Any, message: str):
        self.lhs, self.rhs, self.message = lhs, rhs, message
        self.path: list[str] = []
        self.lhs_span: Span | None = None
        self.rhs_span: Span | None = None


class _Comparer:
    def __init__(self) -> None:
        self.forward: dict[int, Any] = {}
        self.backward: dict[int, Any] = {}

    def compare(self, a: Any, b: Any) -> None:
        try:
            self._compare(a, b)
        except _Mismatch as mismatch:
            if mismatch.lhs_span is None and isinstance(a, Node):
                mismatch.lhs_span = a.span
            if mismatch.rhs_span is None and isinstance(b, Node):
                mismatch.rhs_span = b.span
            raise

    def _field(self, name: str, a: Any, b: Any) -> None:
        try:
            self.compare(a, b)
        except _Mismatch as mismatch:
            mismatch.path.append(name)
            raise

    def _bind(self, a: Any, b: Any, kind: str) -> bool:
        """True when a and b were already bound (to each other); binds them if new."""
        mapped = self.forward.get(id(a))
        if mapped is not None:
            if mapped is not b:
                raise _Mismatch(a, b, f"{kind} {_name(a)} is not {_name(b)} here")
            return True
        if id(b) in self.backward:
            raise _Mismatch(a, b, f"{kind} {_name(b)} already stands for another {kind}")
        return False

    def _record(self, a: Any, b: Any) -> None:
        self.forward[id(a)] = b
        self.backward[id(b)] = a

    def _compare(self, a: Any, b: Any) -> None:
        if type(a) is not type(b):
            raise _Mismatch(a, b, f"{_kind(a)} vs {_kind(b)}")
        if isinstance(a, Var):
            if self._bind(a, b, "variable"):
                return
            if a.dtype != b.dtype:
                raise _Mismatch(a, b, f"variable types differ: {a.dtype} vs {b.dtype}")
            self._field("pointer", a.pointer, b.pointer)
            self._record(a, b)
        elif isinstance(a, Buffer):
            if self._bind(a, b, "buffer"):
                return
            for name in _BUFFER_FIELDS:
                self._field(name, getattr(a, name), getattr(b, name))
            self._record(a, b)
        elif isinstance(a, FloatImm):
            same = a.value == b.value or (math.isnan(a.value) and math.isnan(b.value))
            if not same or a.dtype != b.dtype:
                raise _Mismatch(a, b, "constants differ")
        elif isinstance(a, Attrs):
            self._compare_attrs(a, b)
        elif isinstance(a, IRModule):
            # a module maps names to functions: the order they are written in is not meaning
            if sorted(a.names()) != sorted(b.names()):
                raise _Mismatch(a, b, f"functions {a.names()} vs {b.names()}")
            self._field("attrs", a.attrs, b.attrs)
            for name in sorted(a.names()):
                self._field(name, a[name], b[name])
        elif isinstance(a, Node):
            for name in child_fields(type(a)):
                x, y = getattr(a, name), getattr(b, name)
                # equal plain values need no call (the unequal take the long way, to report)
                if x.__class__ in _PLAIN and x.__class__ is y.__class__ and x == y:
                    continue
                self._field(name, x, y)
        elif isinstance(a, tuple):
            if len(a) != len(b):
                raise _Mismatch(a, b, f"{len(a)} items vs {len(b)}")
            for index, (x, y) in enumerate(zip(a, b, strict=True)):
                if x.__class__ in _PLAIN and x.__class__ is y.__class__ and x == y:
                    continue
                self._field(f"[{index}]", x, y)
        elif isinstance(a, PointerType):
            if a.element != b.element or a.scope != b.scope:
                raise _Mismatch(a, b, "pointer types differ")
        elif isinstance(a, (DataType, enum.Enum, str, int, float, bool)) or a is None:
            if a != b:
                raise _Mismatch(a, b, f"{a!r} vs {b!r}")
        else:
            raise TypeError(f"structural comparison of {type(a).__name__}")

    def _compare_attrs(self, a: Attrs, b: Attrs) -> None:
        left, right = dict(a.items), dict(b.items)
        if sorted(left) != sorted(right):
            missing = sorted(set(left) ^ set(right))
            raise _Mismatch(a, b, f"attribute keys differ: {', '.join(missing)}")
        for key in sorted(left):
            self._field(f"[{key!r}]", left[key], right[key])


def _kind(value: Any) -> str:
    return type(value).__name__


def _name(value: Any) -> str:
    return getattr(value, "name", _kind(value))


def find_difference(a: Any, b: Any) -> Difference | None:
    """None when `a` and `b` are structurally equal, else the first difference."""
    try:
        _Comparer().compare(a, b)
    except _Mismatch as mismatch:
        path = "".join(
            part if part.startswith("[") else f".{part}" for part in reversed(mismatch.path)
        )
        return Difference(
            path.lstrip("."),
            mismatch.lhs,
            mismatch.rhs,
            mismatch.message,
            mismatch.lhs_span,
            mismatch.rhs_span,
        )
    return None


def structural_equal(a: Any, b: Any) -> bool:
    return find_difference(a, b) is None


class _Hasher:
    def __init__(self) -> None:
        self.numbers: dict[int, int] = {}

    def hash(self, value: Any) -> int:
        if isinstance(value, (Var, Buffer)):
            number = self.numbers.get(id(value))
            if number is not None:
                return hash(("ref", number))
            self.numbers[id(value)] = len(self.numbers)
            if isinstance(value, Var):
                return hash(("var", value.dtype, self.hash(value.pointer)))
            return hash(("buffer",) + tuple(self.hash(getattr(value, f)) for f in _BUFFER_FIELDS))
        if isinstance(value, IRModule):
            named = tuple((name, self.hash(value[name])) for name in sorted(value.names()))
            return hash(("module", self.hash(value.attrs)) + named)
        if isinstance(value, Attrs):
            return hash(("attrs",) + tuple((k, self.hash(v)) for k, v in sorted(value.items)))
        if isinstance(value, Node):
            fields = child_fields(type(value))
            return hash(
                (type(value).__name__,) + tuple(self.hash(getattr(value, f)) for f in fields)
            )
        if isinstance(value, tuple):
            return hash(("tuple",) + tuple(self.hash(item) for item in value))
        if isinstance(value, PointerType):
            return hash(("pointer", value.element, value.scope))
        if isinstance(value, float) and math.isnan(value):
            return hash("nan")
        return hash(value)


def structural_hash(value: Any) -> int:
    """A hash consistent with `structural_equal`."""
    return _Hasher().hash(value)


def expr_key(expr: object) -> Hashable:
    """A hashable key equal for structurally identical expressions over the same variables.

    Unlike `structural_equal`, variables and buffers are compared by identity: `i + 1` over
    two different `i` has two keys. Used to collect like terms and to spot repeated bounds.
    """
    if isinstance(expr, Var):
        return ("var", id(expr))
    if isinstance(expr, Buffer):
        return ("buffer", id(expr))
    if isinstance(expr, Node):
        children = tuple(expr_key(getattr(expr, name)) for name in child_fields(type(expr)))
        return (type(expr).__name__, *children)
    if isinstance(expr, tuple):
        return tuple(expr_key(item) for item in expr)
    if isinstance(expr, float):
        return ("float", repr(expr))
    return expr

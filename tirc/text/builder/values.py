"""What a TVMScript expression can evaluate to, besides IR expressions, buffers and Python data.

The builder evaluates the program as TVMScript's Python host would: `T` is a namespace,
`T.grid(...)` a loop to enter, `T.float32` a type that is also a constructor, `T.let[...]` an
annotation, `my_macro` a macro to expand. These classes are those values.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tirc.diagnostics import Span
from tirc.ir import dtype as dt
from tirc.ir.dtype import DataType
from tirc.ir.expr import PointerType, PrimExpr

if TYPE_CHECKING:
    from tirc.text.builder.scope import Scope
    from tirc.text.syntax import tree


@dataclass(frozen=True, slots=True)
class Arg:
    """One evaluated argument of a call, with where it was written."""

    value: Any
    span: Span


@dataclass(slots=True)
class Invocation:
    """A call being evaluated: the callee's name, its arguments, and where it is."""

    name: str
    args: list[Arg]
    kwargs: dict[str, Arg]
    span: Span
    # The names being assigned (`A = T.alloc_buffer(...)`): what a created buffer or
    # variable is called. Empty when the call's value is not assigned to names.
    targets: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Builtin:
    """A `T.*` (or `I.*`) function implemented by the builder."""

    name: str
    call: Callable[[Any, Invocation], Any]  # (the Evaluator, the invocation) -> value
    description: str = ""

    def __repr__(self) -> str:
        return f"<{self.name}>"


@dataclass(frozen=True, slots=True)
class Namespace:
    name: str
    members: dict[str, Any]
    description: str = ""


@dataclass(frozen=True, slots=True)
class DTypeValue:
    """`T.float32`: a type in annotations, a constructor when called, and `T.float32[4]`
    declares a local array."""

    dtype: DataType
    name: str


@dataclass(frozen=True, slots=True)
class HandleType:
    """`T.handle`, optionally `T.handle("float32", "shared")`: a pointer type."""

    element: DataType | None = None
    scope: str = "global"


def handle_pointer(handle: HandleType) -> PointerType | None:
    """The pointer type of a handle variable: `T.handle("float32", "shared")` points at float32
    in shared memory; `T.handle(storage_scope="shared")` at nothing typed in shared memory
    (void, kept for its scope, which buffers over it take); `T.handle` has none."""
    if handle.element is not None:
        return PointerType(handle.element, handle.scope)
    return PointerType(dt.VOID, handle.scope) if handle.scope != "global" else None


@dataclass(frozen=True, slots=True)
class LetAnnotation:
    """`T.let` or `T.let[T.int32]`: an immutable binding (a Bind statement)."""

    dtype: DataType | None = None
    pointer: PointerType | None = None  # `T.let[T.handle("float32", "shared")]`


@dataclass(frozen=True, slots=True)
class LocalArray:
    """`x: T.float32[4]`: a local buffer declared by annotation."""

    dtype: DataType
    shape: tuple[Any, ...]


@dataclass(frozen=True, slots=True)
class Macro:
    """A `@T.macro` function: expanded at every call, resolved in the scope it was defined in."""

    name: str
    definition: tree.FunctionDef
    scope: Scope
    hygienic: bool = True
    description: str = "a macro"


@dataclass(frozen=True, slots=True)
class Lambda:
    """`lambda i, j: (j, i)`: index maps and other functions of expressions."""

    node: tree.Lambda
    scope: Scope
    description: str = "a lambda"


@dataclass(slots=True)
class Poison:
    """The value of a name whose definition failed: using it raises no further error."""

    description: str = "an undefined value"


@dataclass(frozen=True, slots=True)
class BoundMethod:
    """`A.view`: a method of a value, called like a builtin with the value first."""

    name: str
    receiver: Any
    call: Callable[[Any, Any, Invocation], Any]
    description: str = "a method"


@dataclass(slots=True)
class Module:
    """What `Module` (the class) names inside it: its functions, by name, once built."""

    name: str
    functions: dict[str, Any] = field(default_factory=dict)
    description: str = "a module"


def is_expr(value: object) -> bool:
    return isinstance(value, PrimExpr)

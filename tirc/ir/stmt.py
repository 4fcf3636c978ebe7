"""Statements of both dialects.

Low-level tir: loops, stores, allocations, threads. Like TVM 0.27's tirx, `Bind`,
`AssertStmt`, `AllocBuffer` and `DeclBuffer` have no body: what they define is visible to the
statements after them in the enclosing sequence. s-tir adds `SBlock` and `SBlockRealize`.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from tirc.diagnostics.span import Span
from tirc.ir import dtype as dt
from tirc.ir.buffer import Buffer, BufferRegion, MatchBufferRegion, Range
from tirc.ir.expr import Call, IntImm, PrimExpr, StringImm, Var
from tirc.ir.node import IRError, Node

# Annotation values: what `T.func_attr`, `T.sblock_attr` and loop annotations may hold.
# Python scalars and strings, PrimExprs, tuples for lists, `Attrs` for nested dicts, and
# `TargetAttr` for a `T.target(...)`.
AttrValue = object


@dataclass(frozen=True, slots=True, eq=False)
class Attrs(Node):
    """An ordered string-keyed map, the value of annotations and attributes."""

    items: tuple[tuple[str, AttrValue], ...] = ()

    def get(self, key: str, default: AttrValue = None) -> AttrValue:
        for name, value in self.items:
            if name == key:
                return value
        return default

    def __contains__(self, key: str) -> bool:
        return any(name == key for name, _ in self.items)

    def __len__(self) -> int:
        return len(self.items)

    def keys(self) -> list[str]:
        return [name for name, _ in self.items]

    def set(self, key: str, value: AttrValue) -> Attrs:
        kept = tuple((k, v) for k, v in self.items if k != key)
        return Attrs(kept + ((key, value),))

    def remove(self, key: str) -> Attrs:
        return Attrs(tuple((k, v) for k, v in self.items if k != key))


EMPTY_ATTRS = Attrs()


@dataclass(frozen=True, slots=True, eq=False)
class TargetAttr(Node):
    """`T.target({...})` as an attribute value: the target TVM recorded for a function, kept
    as its config map (or the string it was spelled with). tirc compiles for the `--target`
    it is given; this is data that prints back as written."""

    config: Attrs | str


@dataclass(frozen=True, slots=True, eq=False)
class Stmt(Node):
    pass


@dataclass(frozen=True, slots=True, eq=False)
class Bind(Stmt):
    """`x: T.int32 = value`: binds `var` for the rest of the enclosing sequence."""

    var: Var
    value: PrimExpr


@dataclass(frozen=True, slots=True, eq=False)
class AssertStmt(Stmt):
    """`assert condition, (kind, [message parts])`: stop with an error when false."""

    condition: PrimExpr
    kind: str = "RuntimeError"
    message: tuple[str, ...] = ()


class ForKind(enum.Enum):
    SERIAL = "serial"
    PARALLEL = "parallel"
    VECTORIZED = "vectorized"
    UNROLLED = "unroll"
    THREAD_BINDING = "thread_binding"


class IterType(enum.Enum):
    """How a block iteration variable may be scheduled (the letters of `T.axis.remap`)."""

    SPATIAL = "S"  # data-parallel
    REDUCE = "R"  # commutative reduction
    SCAN = "O"  # ordered: iterations depend on earlier ones
    OPAQUE = "opaque"  # nothing known
    THREAD = "thread"  # a thread index (thread_binding loops, launch_thread)


@dataclass(frozen=True, slots=True, eq=False)
class IterVar(Node):
    var: Var
    dom: Range | None  # None only for a thread index (launch_thread, a loop's thread binding)
    iter_type: IterType
    thread_tag: str = ""


def domain_of(iter_var: IterVar) -> Range:
    """The domain of an iteration variable that has one, as a block's always do."""
    if iter_var.dom is None:
        raise IRError(f"the iteration variable {iter_var.var.name} has no domain")
    return iter_var.dom


@dataclass(frozen=True, slots=True, eq=False)
class For(Stmt):
    loop_var: Var
    min: PrimExpr
    extent: PrimExpr
    kind: ForKind
    body: Stmt
    thread_binding: IterVar | None = None
    annotations: Attrs = EMPTY_ATTRS
    step: PrimExpr | None = None

    def __post_init__(self) -> None:
        if (self.kind is ForKind.THREAD_BINDING) != (self.thread_binding is not None):
            raise IRError("a thread_binding loop needs a thread, and only it may have one")


@dataclass(frozen=True, slots=True, eq=False)
class While(Stmt):
    condition: PrimExpr
    body: Stmt


@dataclass(frozen=True, slots=True, eq=False)
class Break(Stmt):
    pass


@dataclass(frozen=True, slots=True, eq=False)
class Continue(Stmt):
    pass


@dataclass(frozen=True, slots=True, eq=False)
class BufferStore(Stmt):
    buffer: Buffer
    value: PrimExpr
    indices: tuple[PrimExpr, ...]
    predicate: PrimExpr | None = None


@dataclass(frozen=True, slots=True, eq=False)
class AllocBuffer(Stmt):
    """Allocates `buffer` for the rest of the enclosing sequence (`T.alloc_buffer`)."""

    buffer: Buffer
    annotations: Attrs = EMPTY_ATTRS


@dataclass(frozen=True, slots=True, eq=False)
class DeclBuffer(Stmt):
    """Declares `buffer` as a view of existing memory (`T.decl_buffer(..., data=...)`)."""

    buffer: Buffer
    data: PrimExpr | None = None  # None: the buffer's own data handle


@dataclass(frozen=True, slots=True, eq=False)
class AttrStmt(Stmt):
    """`with T.attr(node, key, value):` — thread extents, pragmas, storage hints."""

    node: object  # a Var, IterVar, Buffer, StringImm, PrimExpr or TargetAttr
    key: str
    value: PrimExpr
    body: Stmt


@dataclass(frozen=True, slots=True, eq=False)
class SeqStmt(Stmt):
    stmts: tuple[Stmt, ...]

    def __post_init__(self) -> None:
        if not self.stmts:
            raise IRError("an empty statement sequence")


@dataclass(frozen=True, slots=True, eq=False)
class IfThenElse(Stmt):
    condition: PrimExpr
    then_case: Stmt
    else_case: Stmt | None = None


@dataclass(frozen=True, slots=True, eq=False)
class Evaluate(Stmt):
    value: PrimExpr


@dataclass(frozen=True, slots=True, eq=False)
class SBlock(Stmt):
    """An s-tir block: iteration variables, declared regions, an optional reduction init."""

    name: str
    iter_vars: tuple[IterVar, ...]
    reads: tuple[BufferRegion, ...]
    writes: tuple[BufferRegion, ...]
    body: Stmt
    init: Stmt | None = None
    alloc_buffers: tuple[Buffer, ...] = ()
    match_buffers: tuple[MatchBufferRegion, ...] = ()
    annotations: Attrs = EMPTY_ATTRS


@dataclass(frozen=True, slots=True, eq=False)
class SBlockRealize(Stmt):
    """Runs `block` with its iteration variables bound to `iter_values` when `predicate`."""

    iter_values: tuple[PrimExpr, ...]
    predicate: PrimExpr
    block: SBlock

    def __post_init__(self) -> None:
        if len(self.iter_values) != len(self.block.iter_vars):
            raise IRError(
                f"block {self.block.name} has {len(self.block.iter_vars)} iteration "
                f"variables but {len(self.iter_values)} bindings"
            )


def seq(*stmts: Stmt) -> Stmt:
    """A sequence, flattened; a single statement stands for itself."""
    flat: list[Stmt] = []
    for stmt in stmts:
        if isinstance(stmt, SeqStmt):
            flat.extend(stmt.stmts)
        else:
            flat.append(stmt)
    if len(flat) == 1:
        return flat[0]
    return SeqStmt(tuple(flat))


def evaluate_call(op: str, *args: PrimExpr | int, span: Span | None = None) -> Evaluate:
    """A call of the void intrinsic `op` as a statement (ints as int32 constants)."""
    values = tuple(IntImm(a, dt.INT32) if isinstance(a, int) else a for a in args)
    return Evaluate(Call(dt.VOID, op, values, span=span), span=span)


def storage_sync(scope: str, span: Span | None = None) -> Evaluate:
    """`__syncthreads` (scope "shared") or `__syncwarp` ("warp"), spelled as the parser
    completes `T.tvm_storage_sync(scope)`, so that it prints and reads back the same."""
    args = (StringImm(scope), IntImm(0, dt.BOOL), IntImm(-1, dt.INT32))
    return Evaluate(Call(dt.INT32, "tvm_storage_sync", args), span=span)

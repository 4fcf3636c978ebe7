"""What the builder knows about the constructs it is inside: the function, s-tir blocks, and
loops (whose domains `T.axis.remap` reads).

Statements such as `T.func_attr`, `T.reads`, `T.axis.spatial` and `T.sblock_alloc_buffer`
add to the innermost frame of their kind instead of emitting IR; the frame becomes IR when
its construct ends.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tirc.diagnostics import Span
from tirc.ir.buffer import Buffer, BufferRegion, MatchBufferRegion, Range
from tirc.ir.dtype import DataType
from tirc.ir.expr import PrimExpr, Var
from tirc.ir.stmt import IterVar, SBlockRealize, Stmt


@dataclass
class FunctionFrame:
    name: str
    span: Span
    is_s_tir: bool
    is_private: bool
    is_legacy: bool = False  # written for TVM before 0.22: `T.block`, `T.alloc_buffer` in blocks
    params: list[Var] = field(default_factory=list)
    buffer_map: list[tuple[Var, Buffer]] = field(default_factory=list)
    attrs: dict[str, Any] = field(default_factory=dict)
    ret_type: DataType | None = None
    root_buffers: list[Buffer] = field(default_factory=list)
    # shape variables declared by strings in the signature, by name
    signature_vars: dict[str, Var] = field(default_factory=dict)
    # dtypes of scalar parameters, so a shape string before `n: T.int64` makes an int64 `n`
    signature_dtypes: dict[str, DataType] = field(default_factory=dict)
    # blocks at the top of the body without iteration variables: the root block, if alone;
    # (realize, whether reads and writes must be inferred) for each
    root_candidates: list[tuple[SBlockRealize, bool, bool]] = field(default_factory=list)


@dataclass
class SBlockFrame:
    name: str
    span: Span
    iter_vars: list[IterVar] = field(default_factory=list)
    iter_values: list[PrimExpr] = field(default_factory=list)
    reads: list[BufferRegion] | None = None  # None: not written; inferred from the body
    writes: list[BufferRegion] | None = None
    predicate: PrimExpr | None = None
    init: Stmt | None = None
    alloc_buffers: list[Buffer] = field(default_factory=list)
    match_buffers: list[MatchBufferRegion] = field(default_factory=list)
    annotations: dict[str, Any] = field(default_factory=dict)


@dataclass
class LoopFrame:
    """A loop or a thread launch around the current statement: its variable's domain."""

    var: Var
    dom: Range


@dataclass
class InitFrame:
    """Inside `with T.init():`."""

    span: Span


Frame = FunctionFrame | SBlockFrame | LoopFrame | InitFrame

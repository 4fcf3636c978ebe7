"""s-tir blocks: `with T.sblock("name"):` and what may appear directly inside one —
`T.axis.*` iteration variables, `T.reads`/`T.writes`, `T.where`, `with T.init():`,
`T.sblock_attr`, `T.sblock_alloc_buffer` and region `T.match_buffer`.

Reads and writes that the text leaves out are inferred from the body (regions.py), as TVM
does when it parses; the legacy spellings `T.block` and `T.block_attr` mean the same.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from tirc.diagnostics import Span
from tirc.ir import arith
from tirc.ir import dtype as dt
from tirc.ir.buffer import Buffer, BufferRegion, Range
from tirc.ir.expr import BufferLoad, IntImm, PrimExpr, Var
from tirc.ir.node import IRError
from tirc.ir.stmt import Attrs, IterType, IterVar, SBlock, SBlockRealize, Stmt
from tirc.text.builder.args import Param, Signature, attr_value, expect_list, expect_str
from tirc.text.builder.frames import FunctionFrame, InitFrame, LoopFrame, SBlockFrame
from tirc.text.builder.regions import infer_regions
from tirc.text.builder.stmt import ContextValue, Declared
from tirc.text.builder.values import Builtin, Invocation, Namespace
from tirc.text.syntax import tree

if TYPE_CHECKING:
    from tirc.text.builder.stmt import Builder

TRUE = IntImm(1, dt.BOOL)


class SBlockContext(ContextValue):
    description = "a block"

    def __init__(self, name: str, span: Span):
        self.name = name
        self.span = span

    def build(self, builder: Builder, target: tree.Expr | None, body: Callable[[], Stmt]) -> Stmt:
        if target is not None:
            raise builder.error(target, "a block has no value to bind with 'as'")
        frame = SBlockFrame(self.name, self.span)
        builder.frames.append(frame)
        try:
            block_body = body()
        finally:
            builder.frames.pop()
        realize = make_realize(builder, frame, block_body)
        need_reads, need_writes = frame.reads is None, frame.writes is None
        parent = builder.frames[-1] if builder.frames else None
        if isinstance(parent, FunctionFrame) and not frame.iter_vars:
            # Possibly the root block; whether to infer its regions is decided with the body.
            parent.root_candidates.append((realize, need_reads, need_writes))
            return realize
        if need_reads or need_writes:
            realize = infer_regions(builder, realize, need_reads, need_writes)
        return realize


def make_realize(builder: Builder, frame: SBlockFrame, body: Stmt) -> SBlockRealize:
    inside = {id(buffer) for buffer in frame.alloc_buffers}
    inside |= {id(match.buffer) for match in frame.match_buffers}
    for region in (frame.reads or []) + (frame.writes or []):
        if id(region.buffer) in inside:
            # What a block reads and writes is seen from outside it (and printed before
            # its allocations, where the name would not be defined yet).
            raise builder.error(
                region.span or frame.span,
                f"block '{frame.name}' reads or writes {region.buffer.name}, which it defines "
                "itself; T.reads and T.writes name buffers from outside the block",
            )
    try:
        block = SBlock(
            frame.name,
            tuple(frame.iter_vars),
            tuple(frame.reads or ()),
            tuple(frame.writes or ()),
            body,
            frame.init,
            tuple(frame.alloc_buffers),
            tuple(frame.match_buffers),
            Attrs(tuple(frame.annotations.items())),
            span=frame.span,
        )
        predicate = frame.predicate if frame.predicate is not None else TRUE
        return SBlockRealize(tuple(frame.iter_values), predicate, block, span=frame.span)
    except IRError as problem:
        raise builder.error(frame.span, str(problem)) from None


def sblock(builder: Builder, inv: Invocation) -> SBlockContext:
    bound = Signature(Param("name", ""), Param("no_realize", False)).bind(builder, inv)
    return SBlockContext(expect_str(builder, bound["name"]), inv.span)


class InitContext(ContextValue):
    description = "T.init()"

    def __init__(self, span: Span):
        self.span = span

    def build(self, builder: Builder, target: tree.Expr | None, body: Callable[[], Stmt]) -> None:
        frame = builder.block_frame(self.span, "T.init()")
        if frame.init is not None:
            raise builder.error(self.span, f"block {frame.name} already has an init")
        builder.frames.append(InitFrame(self.span))
        try:
            frame.init = body()
        finally:
            builder.frames.pop()
        return None


def init(builder: Builder, inv: Invocation) -> InitContext:
    Signature().bind(builder, inv)
    return InitContext(inv.span)


def where(builder: Builder, inv: Invocation) -> None:
    bound = Signature("predicate").bind(builder, inv)
    frame = builder.block_frame(inv.span, "T.where")
    try:
        frame.predicate = arith.to_bool(builder.check_value(bound.value("predicate")))
    except arith.ArithError as problem:
        raise builder.error(bound["predicate"].span, str(problem)) from None


def as_region(builder: Builder, value: Any, span: Span) -> BufferRegion:
    value = builder.check_value(value)
    if isinstance(value, BufferRegion):
        return value
    if isinstance(value, BufferLoad):
        ranges = tuple(Range(i, IntImm(1, i.dtype), span=span) for i in value.indices)
        return BufferRegion(value.buffer, ranges, span=span)
    if isinstance(value, Buffer):
        return BufferRegion.full(value)
    raise builder.error(
        span, f"expected a buffer region such as A[i, 0:4], got {arith.describe(value)}"
    )


def _regions(which: str) -> Callable[[Builder, Invocation], None]:
    def declare(builder: Builder, inv: Invocation) -> None:
        if inv.kwargs:
            key = next(iter(inv.kwargs))
            raise builder.error(inv.kwargs[key].span, f"T.{which} takes no keyword arguments")
        frame = builder.block_frame(inv.span, f"T.{which}")
        regions: list[BufferRegion] = []
        for arg in inv.args:
            value = builder.check_value(arg.value)
            items = value if isinstance(value, (list, tuple)) else [value]
            regions.extend(as_region(builder, item, arg.span) for item in items)
        if getattr(frame, which) is not None:
            raise builder.error(inv.span, f"block {frame.name} already has T.{which}")
        setattr(frame, which, regions)

    return declare


def sblock_attr(builder: Builder, inv: Invocation) -> None:
    bound = Signature("attrs").bind(builder, inv)
    frame = builder.block_frame(inv.span, inv.name)
    value = builder.check_value(bound.value("attrs"))
    if not isinstance(value, dict):
        raise builder.error(bound["attrs"].span, f"expected a dict, got {arith.describe(value)}")
    for key, item in value.items():
        if not isinstance(key, str):
            raise builder.error(bound["attrs"].span, "annotation keys must be strings")
        frame.annotations[key] = attr_value(builder, item, bound["attrs"].span)


AXIS = Signature(Param("dom"), Param("binding"), Param("dtype", "int32"))


def domain(builder: Builder, value: Any, span: Span) -> Range:
    """An axis domain: an extent, `(min, max)` (exclusive max), or a Range."""
    value = builder.check_value(value)
    if isinstance(value, Range):
        return value
    if isinstance(value, (tuple, list)) and len(value) == 2:
        low = builder.as_expr(value[0], span)
        high = builder.as_expr(value[1], span)
        try:
            low, high = arith.match_types(low, high)
            return Range(low, arith.difference(high, low), span=span)
        except arith.ArithError as problem:
            raise builder.error(span, str(problem)) from None
    extent = builder.as_expr(value, span)
    return Range(IntImm(0, extent.dtype, span=span), extent, span=span)


def define_axis(
    builder: Builder, inv: Invocation, name: str, dom: Range, binding: PrimExpr, kind: IterType
) -> Declared:
    frame = builder.block_frame(inv.span, inv.name)
    dtype = dom.extent.dtype
    var = Var(name, dtype, span=inv.span)
    frame.iter_vars.append(IterVar(var, dom, kind, span=inv.span))
    frame.iter_values.append(binding)
    return Declared(var)


def _axis(kind: IterType) -> Callable[[Builder, Invocation], Declared]:
    def build(builder: Builder, inv: Invocation) -> Declared:
        bound = AXIS.bind(builder, inv)
        dom = domain(builder, bound.value("dom"), bound["dom"].span)
        binding = builder.as_expr(bound.value("binding"), bound["binding"].span)
        name = inv.targets[0] if len(inv.targets) == 1 else "v"
        return define_axis(builder, inv, name, dom, binding, kind)

    return build


REMAP_KINDS = {"S": IterType.SPATIAL, "R": IterType.REDUCE}


def remap(builder: Builder, inv: Invocation) -> Any:
    """`vi, vj, vk = T.axis.remap("SSR", [i, j, k])`: one axis per loop, over its domain."""
    bound = AXIS_REMAP.bind(builder, inv)
    kinds = expect_str(builder, bound["kinds"])
    bindings = expect_list(builder, bound["bindings"])
    span = bound["bindings"].span
    if len(kinds) != len(bindings):
        raise builder.error(
            inv.span,
            f"T.axis.remap has {len(kinds)} kinds ({kinds!r}) but {len(bindings)} bindings",
        )
    if inv.targets and len(inv.targets) != len(kinds):
        raise builder.error(
            inv.span,
            f"T.axis.remap defines {len(kinds)} axes but {len(inv.targets)} names are assigned",
        )
    results = []
    for index, (letter, value) in enumerate(zip(kinds, bindings, strict=True)):
        if letter not in REMAP_KINDS:
            raise builder.error(bound["kinds"].span, f"unknown axis kind '{letter}' (use S or R)")
        var = builder.check_value(value)
        if isinstance(var, IterVar):
            var = var.var
        loop = loop_domain(builder, var)
        if loop is None:
            raise builder.error(
                span, f"T.axis.remap binds loop variables; {arith.describe(var)} is not one"
            )
        name = inv.targets[index] if inv.targets else f"v{index}"
        results.append(define_axis(builder, inv, name, loop.dom, var, REMAP_KINDS[letter]))
    return results[0] if len(results) == 1 else results


AXIS_REMAP = Signature(Param("kinds"), Param("bindings"), Param("dtype", "int32"))


def loop_domain(builder: Builder, var: Any) -> LoopFrame | None:
    if not isinstance(var, Var):
        return None
    for frame in reversed(builder.frames):
        if isinstance(frame, LoopFrame) and frame.var is var:
            return frame
    return None


AXIS_NAMESPACE = Namespace(
    "T.axis",
    {
        "spatial": Builtin("T.axis.spatial", _axis(IterType.SPATIAL)),
        "reduce": Builtin("T.axis.reduce", _axis(IterType.REDUCE)),
        "scan": Builtin("T.axis.scan", _axis(IterType.SCAN)),
        "opaque": Builtin("T.axis.opaque", _axis(IterType.OPAQUE)),
        "remap": Builtin("T.axis.remap", remap),
        "S": Builtin("T.axis.S", _axis(IterType.SPATIAL)),
        "R": Builtin("T.axis.R", _axis(IterType.REDUCE)),
    },
    "the T.axis namespace",
)

BUILTINS = {
    "sblock": Builtin("T.sblock", sblock),
    "block": Builtin("T.block", sblock),
    "init": Builtin("T.init", init),
    "where": Builtin("T.where", where),
    "reads": Builtin("T.reads", _regions("reads")),
    "writes": Builtin("T.writes", _regions("writes")),
    "sblock_attr": Builtin("T.sblock_attr", sblock_attr),
    "block_attr": Builtin("T.block_attr", sblock_attr),
    "axis": AXIS_NAMESPACE,
}

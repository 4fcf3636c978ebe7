"""tensorize: replace a block (or the subtree of a loop, blockized first) by a tensor
intrinsic's implementation, once the block matches the intrinsic's description.

The match binds each description buffer to a program buffer and a base index; the
implementation's buffers become `T.match_buffer` views of those regions, and its root block's
body becomes the block's body (its annotations join the block's).

    for k_0 in range(32):                  for k_0 in range(32):
        for k_1 in range(4):                   with T.sblock("update_o"):
            with T.sblock("update"):               vk_o = T.axis.reduce(32, k_0)
                vk = T.axis.reduce(128,   →        A_1 = T.match_buffer(A[vk_o * 4:vk_o * 4 + 4],
                         k_0 * 4 + k_1)                                 (4,))
                C[()] += A[vk] * B[vk]             T.call_extern("int32", "vec4add", ...)
"""

from __future__ import annotations

import dataclasses

from tirc.ir.buffer import Buffer, BufferRegion, MatchBufferRegion, Range
from tirc.ir.dtype import DataType
from tirc.ir.expr import Cast, IntImm, PrimExpr
from tirc.ir.function import IRModule, PrimFunc
from tirc.ir.stmt import SBlock, SBlockRealize
from tirc.schedule.access_simplify import simplify_statement
from tirc.schedule.errors import ScheduleError
from tirc.schedule.intrinsic_match import IntrinsicMismatch, Match, match_intrinsic
from tirc.schedule.intrinsics import TensorIntrin, builtin_intrinsics, lookup
from tirc.schedule.primitives import primitive
from tirc.schedule.primitives.blockize import build_blockized
from tirc.schedule.properties import realize_of
from tirc.schedule.schedule import Schedule, describe
from tirc.schedule.signature import Kind, Param, Signature, optional
from tirc.schedule.sref import SRef
from tirc.schedule.widen_index import widen_index_dtype
from tirc.text import parse, print_module


@primitive(
    Signature(
        "tensorize",
        "Tensorize",
        inputs=(Param("target", Kind.BLOCK_OR_LOOP),),
        attrs=(Param("intrin", Kind.STR), optional("preserve_unit_iters", Kind.BOOL, True)),
        doc="Replace a block (or a loop's subtree) by a matching tensor intrinsic.",
    )
)
def tensorize(sch: Schedule, target: SRef, intrin: str, preserve_unit_iters: bool = True) -> None:
    state = sch.state_owning(target)
    intrinsic = _intrinsic(sch, intrin, target)
    if target.is_block:
        if target.parent is None:
            raise ScheduleError("cannot tensorize the root block", target)
        realize = realize_of(target)
        reuse: dict[SBlock, SBlock] = {}
    else:
        realize, reuse = build_blockized(state, target, bool(preserve_unit_iters))
    desc, impl = simplify_statement(_fresh(intrinsic.desc)), _fresh(intrinsic.impl)
    if len(desc.params) != len(impl.params):
        raise ScheduleError(
            f"intrinsic {intrin} is malformed: its description takes {len(desc.params)} "
            f"parameters and its implementation {len(impl.params)}",
            target,
        )
    try:
        match = match_intrinsic(realize, desc)
    except IntrinsicMismatch as mismatch:
        raise ScheduleError(
            f"cannot tensorize {describe(target)} with intrinsic {intrin}: {mismatch}", target
        ) from None
    bits = _index_bits(realize.block)
    if bits > 32:
        impl = widen_index_dtype(impl, bits)
    block = _implemented(realize.block, desc, impl, match, intrin, target)
    if target.is_block:
        state.replace(target, block, {realize.block: block})
    else:
        state.replace(target, dataclasses.replace(realize, block=block), reuse)


def _intrinsic(sch: Schedule, name: str, target: SRef) -> TensorIntrin:
    user = sch.context.get("intrinsics")
    found = lookup(name, user)
    if found is None:
        known = sorted(set(builtin_intrinsics()) | set(user or {}))
        raise ScheduleError(
            f"no tensor intrinsic is named {name!r}",
            target,
            notes=(f"known intrinsics: {', '.join(known)}",),
        )
    return found


def _fresh(func: PrimFunc) -> PrimFunc:
    """A copy with its own variables and buffers, so that two tensorized blocks never share
    a definition (parsing the printed text renews every one of them), located where `func`
    is: a later pass's message about the intrinsic's code points into its library file."""

    module = parse(print_module(IRModule((("intrinsic", func),), is_bare=True)))
    located = _spans_of(func, module.functions[0][1], {})
    assert isinstance(located, PrimFunc)
    return located


def _spans_of(old: object, new: object, done: dict[int, object]) -> object:
    """`new`, a reparse of `old` (the same tree up to its definitions), with `old`'s spans;
    a node `new` shares (a variable, a buffer) is rebuilt once."""
    if id(new) in done:
        return done[id(new)]
    result = new
    if isinstance(new, tuple) and isinstance(old, tuple) and len(new) == len(old):
        items = tuple(_spans_of(a, b, done) for a, b in zip(old, new, strict=True))
        result = new if all(a is b for a, b in zip(items, new, strict=True)) else items
    elif dataclasses.is_dataclass(new) and not isinstance(new, type) and type(new) is type(old):
        changes: dict[str, object] = {}
        for item in dataclasses.fields(new):
            if not item.init:
                continue
            value, before = getattr(new, item.name), getattr(old, item.name)
            located = before if item.name == "span" else _spans_of(before, value, done)
            if located is not value:
                changes[item.name] = located
        if changes:
            result = dataclasses.replace(new, **changes)
    done[id(new)] = result
    return result


def _index_bits(block: SBlock) -> int:
    """The widest index type of the block's regions: the implementation is widened to it."""
    bits = 32
    for region in block.reads + block.writes:
        for item in region.region:
            bits = max(bits, item.min.dtype.bits)
    return bits


def _implemented(
    block: SBlock, desc: PrimFunc, impl: PrimFunc, match: Match, name: str, target: SRef
) -> SBlock:
    """`block` with the implementation's body, over views of the matched regions."""
    impl_root = impl.body
    assert isinstance(impl_root, SBlockRealize)  # the parser gives every s-tir function one
    impl_block = impl_root.block
    regions: dict[Buffer, tuple[Range, ...]] = {}
    for region in impl_block.reads + impl_block.writes:
        regions.setdefault(region.buffer, region.region)  # the first declaration counts
    views: list[MatchBufferRegion] = []
    for desc_param, impl_param in zip(desc.params, impl.params, strict=True):
        desc_buffer, impl_buffer = desc.buffer_of(desc_param), impl.buffer_of(impl_param)
        if desc_buffer is None or impl_buffer is None:
            raise ScheduleError(f"intrinsic {name} has a parameter that is not a buffer", target)
        program_buffer = match.buffers.get(desc_buffer)
        impl_region = regions.get(impl_buffer)
        if program_buffer is None or impl_region is None:
            raise ScheduleError(
                f"intrinsic {name}: buffer {impl_buffer.name} is not declared in the root "
                "blocks of both its description and its implementation",
                target,
            )
        base = match.bases[program_buffer]
        offset = len(base) - len(impl_region)
        ranges = [Range(index, IntImm(1, index.dtype)) for index in base[:offset]]
        for index, item in zip(base[offset:], impl_region, strict=True):
            ranges.append(Range(index, _as_dtype(item.extent, index.dtype)))
        views.append(MatchBufferRegion(impl_buffer, BufferRegion(program_buffer, tuple(ranges))))
    annotations = block.annotations
    for key, value in impl_block.annotations.items:
        annotations = annotations.set(key, value)
    return dataclasses.replace(
        block, body=impl_block.body, match_buffers=tuple(views), annotations=annotations
    )


def _as_dtype(expr: PrimExpr, dtype: DataType) -> PrimExpr:
    if expr.dtype == dtype:
        return expr
    if isinstance(expr, IntImm):
        return IntImm(expr.value, dtype)
    return Cast(dtype, expr)

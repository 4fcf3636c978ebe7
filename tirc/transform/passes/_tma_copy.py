"""The stage-0 copies of a warp-specialized loop that TMA loads can make (inject-warp-
specialization's `software_pipeline_tma`): a loop nest, run by every consumer thread, that
reads a box of a dense global buffer parameter and stores each element of a shared buffer
once, laid out as the box row-major or as a TMA swizzle of it, under conditions, if any, on the
global buffer's bounds (what TMA's zero fill stands for) or on the threads and the nest's
loops alone (which of them store). Where one box does not do (not a box, or past 256 elements
a dimension), the fewest equal slabs of the buffer that are each such a box, of one shape and
swizzle at constant offsets in the tensor, make one load each. The layout is checked at every
point of the copy's iteration space (the threads it names x its loops); anything else is
refused at the copy, saying why.

    for i0 in range(2):                                  box (64, 32) of A at corner
      for v in T.vectorized(8):                   ->       (by * 64, k * 32), 64-byte
        S[i0 * 32 + ty * 8 + tx // 4,                      swizzle: one T.ptx_tma_load
          (tx % 4 ^ (ty * 8 + tx // 4) % 8 // 2) * 8 + v]  of 4096 bytes
          = A[by * 64 + i0 * 32 + ty * 8 + tx // 4, k * 32 + tx % 4 * 8 + v]
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from tirc.analysis.arith.analyzer import Analyzer
from tirc.analysis.lane_values import NotEvaluable, evaluate
from tirc.diagnostics import DiagnosticError, Note
from tirc.ir import dtype as dt
from tirc.ir import expr as E
from tirc.ir import stmt as S
from tirc.ir.arith import arithmetic, negate
from tirc.ir.buffer import Buffer, Range
from tirc.ir.functor import walk
from tirc.ir.node import Node
from tirc.ir.substitute import substitute
from tirc.ir.tma import MAX_BOX, SWIZZLES
from tirc.transform.passes._pipeline_annotations import ASYNC_STAGES

TMA = "software_pipeline_tma"  # 1: the copies become TMA loads that one producer thread issues

_ORDERED = (E.LT, E.LE, E.GT, E.GE)


@dataclass(frozen=True)
class BoxCopy:
    """A copy nest that TMA loads make: one box of `tensor` (`box`, in the tensor's rank,
    outermost first) a slab of `shared`, the slabs its equal parts in order, slab s from
    `corner` + `slabs[s]` (one slab: the whole buffer, from `corner`)."""

    stmt: S.Stmt
    shared: Buffer
    tensor: Buffer
    box: tuple[int, ...]
    corner: tuple[E.PrimExpr, ...]
    swizzle: int  # bytes; 0: the box row-major
    slabs: tuple[tuple[int, ...], ...]  # each box's corner, from `corner`

    @property
    def bytes(self) -> int:
        return math.prod(self.box) * self.shared.dtype.bits // 8 * len(self.slabs)


def refuse(copy: S.Stmt, loop: S.Stmt, why: str) -> DiagnosticError:
    """`loop`: the pipelined loop that asks for TMA loads, or the block that asks for a TMA
    store (inject-tma-store)."""
    return DiagnosticError.at(
        copy.span or loop.span,
        f"this copy cannot be a TMA {'load' if isinstance(loop, S.For) else 'store'}: {why}",
        _asked_by(loop),
    )


def _asked_by(loop: S.Stmt) -> Note:
    if isinstance(loop, S.For):
        return Note("the loop whose 'software_pipeline_tma' asks for one", loop.span)
    return Note("the block whose 'tma_store' asks for one", loop.span)


def variables(node: Node) -> set[E.Var]:
    found: set[E.Var] = set()
    walk(node, lambda node: found.add(node) if isinstance(node, E.Var) else None)
    return found


def conjuncts(condition: E.PrimExpr) -> list[E.PrimExpr]:
    if isinstance(condition, E.And):
        return [*conjuncts(condition.a), *conjuncts(condition.b)]
    if isinstance(condition, E.Call) and condition.op == "likely" and condition.args:
        inner = condition.args[0]
        assert isinstance(inner, E.PrimExpr)
        return conjuncts(inner)
    return [condition]


def _guarded(value: E.PrimExpr) -> tuple[E.PrimExpr, E.PrimExpr, E.PrimExpr] | None:
    """(condition, value, otherwise) of a select or `T.if_then_else`, else None."""
    if isinstance(value, E.Select):
        return value.condition, value.true_value, value.false_value
    if isinstance(value, E.Call) and value.op == "if_then_else":
        args = [arg for arg in value.args if isinstance(arg, E.PrimExpr)]
        if len(args) == 3:
            return args[0], args[1], args[2]
    return None


def _is_zero(expr: E.PrimExpr) -> bool:
    return isinstance(expr, (E.IntImm, E.FloatImm)) and expr.value == 0


def _below_zero(condition: E.PrimExpr) -> E.PrimExpr | None:
    """`e` such that the integer comparison `condition` is `e < 0`; None for another one."""
    if not isinstance(condition, _ORDERED) or not condition.a.dtype.is_integer:
        return None
    a, b = condition.a, condition.b
    if isinstance(condition, E.LT):
        return arithmetic("-", a, b)
    if isinstance(condition, E.LE):
        return arithmetic("-", arithmetic("-", a, b), 1)
    if isinstance(condition, E.GT):
        return arithmetic("-", b, a)
    return arithmetic("-", arithmetic("-", b, a), 1)


class CopyNest:
    """A copy nest read down to its store: its loops (extents) and conditions."""

    def __init__(self, copy: S.Stmt, loop: S.Stmt) -> None:
        self.loops: dict[E.Var, int] = {}
        self.conditions: list[E.PrimExpr] = []
        node = copy
        while not isinstance(node, S.BufferStore):
            if isinstance(node, S.For):
                if node.thread_binding is not None or not isinstance(node.extent, E.IntImm):
                    raise refuse(
                        copy,
                        loop,
                        f"its loop '{node.loop_var.name}' is not a serial loop of constant extent",
                    )
                if not E.is_const_int(node.min, 0):
                    raise refuse(copy, loop, f"its loop '{node.loop_var.name}' does not start at 0")
                self.loops[node.loop_var] = node.extent.value
                node = node.body
            elif isinstance(node, S.SBlockRealize) and not node.block.iter_vars:
                if not E.is_const_int(node.predicate, 1):
                    self.conditions.append(node.predicate)
                node = node.block
            elif (
                isinstance(node, S.SBlock)
                and not node.alloc_buffers
                and not node.match_buffers
                and node.init is None
            ):
                node = node.body
            elif isinstance(node, S.IfThenElse) and node.else_case is None:
                self.conditions.append(node.condition)
                node = node.then_case
            else:
                raise refuse(copy, loop, "it is not a nest of loops around one store")
        self.store = node


def uses_tma(loop: S.For) -> bool:
    """Whether the warp-specialized `loop` asks for TMA loads; a located error for a value
    other than 0 or 1, or beside cp.async stages."""
    value = loop.annotations.get(TMA)
    if value is None:
        return False
    if isinstance(value, E.IntImm):
        value = value.value
    if value not in (0, 1) or isinstance(value, bool):
        raise DiagnosticError.at(
            loop.span, f"the loop's '{TMA}' is 1 (TMA loads) or 0, not {value}"
        )
    if value and ASYNC_STAGES in loop.annotations:
        raise DiagnosticError.at(
            loop.span,
            f"'{TMA}' and '{ASYNC_STAGES}' both make the producer's copies asynchronous: "
            "choose one",
        )
    return value == 1


def box_copies(
    loop: S.For,
    copies: list[S.Stmt],
    threads: dict[E.Var, int],
    tensors: set[E.Var],
    analyzer: Analyzer,
) -> list[BoxCopy]:
    """The copies as TMA boxes (`box_copy`), each filling a buffer of its own."""
    boxes: list[BoxCopy] = []
    for copy in copies:
        box = box_copy(copy, loop, threads, tensors, analyzer)
        other = next((b for b in boxes if b.shared.data is box.shared.data), None)
        if other is not None:
            raise DiagnosticError.at(
                copy.span or loop.span,
                f"this copy cannot be a TMA load: another copy fills '{box.shared.name}' too",
                Note("the other copy", other.stmt.span),
            )
        boxes.append(box)
    return boxes


def box_copy(
    copy: S.Stmt,
    loop: S.For,
    threads: dict[E.Var, int],
    tensors: set[E.Var],
    analyzer: Analyzer,
) -> BoxCopy:
    """The TMA load that `copy` (a stage-0 statement of `loop`, run by the consumer threads
    `threads`: variable -> extent) makes, or a located error saying why it cannot be one.
    `tensors` are the data handles of the function's buffer parameters, whose tensor maps
    the host can build."""
    nest = CopyNest(copy, loop)
    store = nest.store
    at = store if store.span is not None else copy
    shared, value = store.buffer, store.value
    guarded = _guarded(value)
    if guarded is not None:
        condition, value, otherwise = guarded
        if not _is_zero(otherwise):
            raise refuse(
                at,
                loop,
                "it stores a value other than 0 where its condition fails "
                "(TMA fills zeros outside the tensor)",
            )
        nest.conditions.append(condition)
    if not isinstance(value, E.BufferLoad):
        raise refuse(
            at,
            loop,
            f"it stores a computed value into '{shared.name}', not an element of a global buffer",
        )
    tensor = value.buffer
    if tensor.dtype != shared.dtype:
        raise refuse(
            at,
            loop,
            f"it converts {tensor.dtype} to {shared.dtype}: a TMA load "
            "copies the elements as they are",
        )
    # the copy's iteration space: the consumer threads it names and the nest's loops (threads
    # it does not name store the same elements alike, which one load stands for)
    box = box_space(at, loop, shared, tensor, value.indices, tensors, copy, threads, nest, analyzer)
    shape, space, inner, corner, local = box.shape, box.space, box.inner, box.corner, box.local
    # a condition on the tensor's bounds is TMA's zero fill; one on the threads and the
    # copy's loops alone says which of them store
    masks: list[E.PrimExpr] = []
    for condition in nest.conditions:
        for conjunct in conjuncts(condition):
            if is_bound(conjunct, value.indices, tensor, inner):
                continue
            if variables(conjunct) <= space.keys():
                masks.append(conjunct)
                continue
            raise DiagnosticError.at(
                getattr(conjunct, "span", None) or at.span or loop.span,
                "this copy cannot be a TMA load: its condition is not the bounds of "
                f"'{tensor.name}' (a TMA load writes the whole box, zeros outside the "
                "tensor)",
                Note("the copy", at.span),
                Note("the loop whose 'software_pipeline_tma' asks for one", loop.span),
            )
    fit = fit_layout(at, loop, store, local, masks, shape, space, tensor.name)
    return BoxCopy(copy, shared, tensor, fit.box, corner, fit.swizzle, fit.slabs)


@dataclass(frozen=True)
class BoxSpace:
    """A copy between the shared buffer (its `shape`) and a box of a global tensor, read from
    the tensor's indices over the copy's iteration space (`space`: variable -> extent, bound in
    `inner`): each index is its `corner` (at the space's first point) plus `local`, which varies
    over the space alone."""

    shape: tuple[int, ...]
    space: dict[E.Var, int]
    inner: Analyzer
    corner: tuple[E.PrimExpr, ...]
    local: list[E.PrimExpr]


def box_space(
    at: S.Stmt,
    where: S.Stmt,
    shared: Buffer,
    tensor: Buffer,
    indices: tuple[E.PrimExpr, ...],
    tensors: set[E.Var],
    copy: S.Stmt,
    threads: dict[E.Var, int],
    nest: CopyNest,
    analyzer: Analyzer,
) -> BoxSpace:
    """The box a TMA load or store moves, or a located error (refusals name `where`, the loop
    or block that asks for TMA) saying why the copy is not one."""
    if shared.dtype.bits % 8 or shared.dtype.lanes != 1:
        raise refuse(at, where, f"TMA copies whole-byte scalar elements, not {shared.dtype}")
    check_dense(at, where, tensor, tensors)
    shape = shared_shape(at, where, shared)
    if not 1 <= len(indices) <= 5:
        raise refuse(at, where, f"'{tensor.name}' has {len(indices)} dimensions, not 1 to 5")
    named = variables(copy)
    space = {**{var: n for var, n in threads.items() if var in named}, **nest.loops}
    inner = Analyzer()
    inner.ranges.update(analyzer.ranges)
    for var, extent in space.items():
        inner.bind(var, Range(E.IntImm(0, var.dtype), E.IntImm(extent, var.dtype)))
    start = {var: E.IntImm(0, var.dtype) for var in space}
    corner = tuple(inner.simplify(substitute(index, start)) for index in indices)
    local = [
        inner.simplify(arithmetic("-", index, at_start))
        for index, at_start in zip(indices, corner, strict=True)
    ]
    for axis, (offset, at_start) in enumerate(zip(local, corner, strict=True)):
        outer = sorted(var.name for var in variables(offset) if var not in space)
        if outer:
            raise refuse(
                at,
                where,
                f"it is not a box: index {axis} of '{tensor.name}' moves with '{outer[0]}' "
                f"apart from its corner {at_start}",
            )
    return BoxSpace(shape, space, inner, corner, local)


def check_dense(at: S.Stmt, loop: S.Stmt, tensor: Buffer, tensors: set[E.Var]) -> None:
    if tensor.data not in tensors:
        raise refuse(
            at,
            loop,
            f"'{tensor.name}' is not a buffer parameter of the function "
            "(the host builds a TMA load's tensor map from one)",
        )
    dense: list[E.PrimExpr] = []
    stride: E.PrimExpr = E.IntImm(1, tensor.index_dtype)
    for extent in reversed(tensor.shape):
        dense.insert(0, stride)
        stride = arithmetic("*", stride, extent)
    simplify = Analyzer().simplify
    strided = tensor.strides and any(
        not E.is_const_int(simplify(arithmetic("-", given, want)), 0)
        for given, want in zip(tensor.strides, dense, strict=True)
    )
    offset = tensor.elem_offset is not None and not E.is_const_int(tensor.elem_offset, 0)
    if strided or offset:
        what = "strides" if strided else "an element offset"
        raise refuse(
            at, loop, f"'{tensor.name}' has {what}: a TMA load reads a dense (row-major) tensor"
        )


def shared_shape(at: S.Stmt, loop: S.Stmt, shared: Buffer) -> tuple[int, ...]:
    if not all(isinstance(extent, E.IntImm) for extent in shared.shape):
        raise refuse(at, loop, f"'{shared.name}' has a shape that is not constant")
    if shared.strides or (
        shared.elem_offset is not None and not E.is_const_int(shared.elem_offset, 0)
    ):
        raise refuse(
            at,
            loop,
            f"'{shared.name}' is padded (strides or an offset): a TMA load "
            "writes its box row-major, with no gaps",
        )
    return tuple(E.int_value(extent) for extent in shared.shape)


@dataclass(frozen=True)
class _Fit:
    """How TMA loads write a copy: boxes of one shape and swizzle, one a slab of the shared
    buffer in order, each at its corner's offset from the copy's (tensor axes)."""

    box: tuple[int, ...]
    swizzle: int
    slabs: tuple[tuple[int, ...], ...]


def fit_layout(
    at: S.Stmt,
    loop: S.Stmt,
    store: S.BufferStore,
    local: list[E.PrimExpr],
    masks: list[E.PrimExpr],
    shape: tuple[int, ...],
    space: dict[E.Var, int],
    tensor: str,
) -> _Fit:
    """The boxes the copy reads (`local`: its offsets from the corner, over the points of
    `space` where every mask holds) and the swizzle (bytes, 0: none) with which it stores them
    into the whole of `shared`, each element once, computed for every point: one box if it
    can, else the fewest equal slabs of `shared` that are each a box."""
    shared = store.buffer
    elements = math.prod(shape)
    grids = np.meshgrid(*(np.arange(extent) for extent in space.values()), indexing="ij")
    values = {var: grid.ravel() for var, grid in zip(space, grids, strict=True)}
    everywhere = (math.prod(space.values()),)
    try:
        stores = np.ones(everywhere, bool)
        for mask in masks:
            stores &= np.broadcast_to(evaluate(mask, values), everywhere) != 0
        offsets = [np.broadcast_to(evaluate(x, values), everywhere)[stores] for x in local]
        digits = [np.broadcast_to(evaluate(x, values), everywhere)[stores] for x in store.indices]
    except NotEvaluable as error:
        raise refuse(at, loop, f"its indices cannot be computed: {error}") from None
    points = int(stores.sum())
    if points == 0:
        raise refuse(at, loop, "its condition holds for none of the threads")
    if any(
        digit.min() < 0 or digit.max() >= extent
        for digit, extent in zip(digits, shape, strict=True)
    ):
        raise refuse(at, loop, f"it stores outside '{shared.name}'")
    if any(offset.min() < 0 for offset in offsets):
        raise refuse(at, loop, f"it is not a box: it reads '{tensor}' before its corner")
    written = np.zeros(points, np.int64)
    for digit, extent in zip(digits, shape, strict=True):
        written = written * extent + digit
    if points != elements or np.unique(written).size != points:
        raise refuse(
            at,
            loop,
            f"it does not store each of the {elements} elements of '{shared.name}' once "
            f"({points} stores): a TMA load fills the whole buffer",
        )
    element = shared.dtype.bits // 8
    # a slab starts where a load may write: 128 bytes aligned at least
    counts = [
        count
        for count in range(1, elements + 1)
        if elements % count == 0 and (count == 1 or elements // count * element % 128 == 0)
    ]
    whole = ""
    for count in counts:
        fit = _fit(offsets, written, count, elements // count, element, tensor, shared.name)
        if isinstance(fit, _Fit):
            return fit
        whole = whole or fit  # the reason one box does not do
    if len(counts) > 1:
        whole += f"; nor is '{shared.name}' equal slabs that are each a TMA box of '{tensor}'"
    raise refuse(at, loop, whole)


def _fit(
    offsets: list[np.ndarray],
    written: np.ndarray,
    count: int,
    size: int,
    element: int,
    tensor: str,
    shared: str,
) -> _Fit | str:
    """The copy (its read `offsets` from the corner and `written` elements of `shared`, for
    every point) as `count` TMA loads, each a box into a slab of `size` elements, or why not."""
    slab, inner = np.divmod(written, size)
    lows = np.full((count, len(offsets)), np.iinfo(np.int64).max, np.int64)
    highs = np.full((count, len(offsets)), -1, np.int64)
    for axis, offset in enumerate(offsets):
        np.minimum.at(lows[:, axis], slab, offset)
        np.maximum.at(highs[:, axis], slab, offset)
    extents = highs - lows + 1
    box = tuple(int(extent) for extent in extents[0])
    read = np.zeros(written.size, np.int64)
    for axis, offset in enumerate(offsets):
        read = read * box[axis] + offset - lows[slab, axis]
    if (
        (extents != extents[0]).any()
        or math.prod(box) != size
        or np.unique(slab * size + read).size != written.size
    ):
        return (
            f"it is not a box: it reads {written.size} elements of '{tensor}' spread over "
            f"{' x '.join(map(str, box))}"
        )
    row = box[-1] * element
    for swizzle in SWIZZLES:
        if (not swizzle or row == swizzle) and np.array_equal(
            inner * element, _swizzled(read * element, swizzle)
        ):
            break
    else:
        return (
            f"it stores the box into '{shared}' in an order no TMA load writes (the box "
            "row-major, or a 32, 64 or 128-byte swizzle of rows of that many bytes)"
        )
    problem = _box_problem(box, swizzle, size * element, shared)
    if problem:
        return problem
    return _Fit(box, swizzle, tuple(tuple(int(low) for low in corner) for corner in lows))


def _swizzled(offsets: np.ndarray, swizzle: int) -> np.ndarray:
    """tirc.ir.tma.swizzled_byte for every byte offset of `offsets`."""
    if swizzle == 0:
        return offsets
    mask = swizzle // 16 - 1
    return offsets ^ (((offsets >> 7) & mask) << 4)


def is_bound(
    condition: E.PrimExpr, indices: tuple[E.PrimExpr, ...], tensor: Buffer, analyzer: Analyzer
) -> bool:
    """Whether `condition` holds always, or says that one index of `tensor` is in bounds."""
    if analyzer.can_prove(condition):
        return True
    negative = _below_zero(condition)
    if negative is None:
        return False
    for index, extent in zip(indices, tensor.shape, strict=True):
        for bound in (arithmetic("-", index, extent), arithmetic("-", negate(index), 1)):
            difference = analyzer.simplify(arithmetic("-", negative, bound))
            if E.is_const_int(difference, 0):
                return True
    return False


def _box_problem(box: tuple[int, ...], swizzle: int, size: int, shared: str) -> str:
    """Why a load of `box` into `size` bytes of `shared` cannot be, or ''."""
    element = size // math.prod(box)
    if max(box) > MAX_BOX:
        return (
            f"its box is {' x '.join(map(str, box))}: a TMA box has at most {MAX_BOX} "
            "elements along each dimension"
        )
    if box[-1] * element % 16:
        return f"the box's rows are {box[-1] * element} bytes, not a multiple of 16"
    alignment = 1024 if swizzle else 128  # a swizzle is a function of the address
    if size % alignment:
        return (
            f"'{shared}' is {size} bytes, not a multiple of {alignment}: each version of it "
            f"must start where a{f' {swizzle}-byte swizzled' if swizzle else ''} TMA load may "
            "write"
        )
    return ""


def tma_loads(
    copies: list[BoxCopy],
    rings: dict[E.Var, Buffer],
    version: E.PrimExpr,
    full: Buffer,
) -> list[S.Stmt]:
    """The producer's work for one iteration: `full[version]` told the bytes to expect (its
    one arrival), then each copy as a TMA load into `version` of its ring buffer (`rings`:
    the copies' shared buffers' versions, by their data handle), counted on it."""
    span = copies[0].stmt.span
    expect = E.Call(
        dt.VOID,
        "ptx_mbarrier_arrive_expect_tx",
        (full.data, version, E.IntImm(sum(copy.bytes for copy in copies), dt.INT32)),
        span=span,
    )
    loads = [
        load for copy in copies for load in _tma_loads(copy, rings[copy.shared.data], version, full)
    ]
    return [S.Evaluate(expect, span=span), *loads]


def _tma_loads(
    copy: BoxCopy, ring: Buffer, version: E.PrimExpr, barrier: Buffer
) -> list[S.Evaluate]:
    """One load a slab of `copy`, into `version` of `ring`."""
    span = copy.stmt.span
    int32 = dt.INT32
    size = math.prod(copy.box)
    start = arithmetic("*", version, size * len(copy.slabs))
    loads = []
    for index, offsets in enumerate(copy.slabs):
        corner = tuple(
            arithmetic("+", at, offset) if offset else at
            for at, offset in zip(copy.corner, offsets, strict=True)
        )
        args: tuple[E.PrimExpr, ...] = (
            copy.tensor.data,
            E.IntImm(len(copy.box), int32),
            E.IntImm(copy.swizzle, int32),
            *copy.tensor.shape,
            *(E.IntImm(extent, int32) for extent in copy.box),
            ring.data,
            arithmetic("+", start, index * size) if index else start,
            barrier.data,
            version,
            *corner,
        )
        call = E.Call(copy.shared.dtype, "ptx_tma_load", args, span=span)
        loads.append(S.Evaluate(call, span=span))
    return loads

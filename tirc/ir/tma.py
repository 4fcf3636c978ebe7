"""Hopper's asynchronous copies as the IR states them: the operands of a TMA load, the tensor
map the compiler derives from them, and the shared-memory swizzle the copy writes.

    T.ptx_tma_load("float16", A.data, 2, 128, M, K, 64, 64, S.data, 0, bar.data, 0, y, x)
        dtype, global tensor, rank, swizzle bytes, shape (rank), box (rank),
        shared destination and element offset, mbarrier and index, box corner (rank)
    T.ptx_tma_load_multicast("float16", A.data, 2, 128, M, K, 64, 64, S.data, 0, bar.data, 0,
                             mask, y, x)
        a load with a 16-bit mask of the cluster's blocks (bit r: rank r) after the barrier: the
        box lands in each masked block's shared memory at the same offset, and completes on
        that block's barrier of the same address (.multicast::cluster; tirc.ir.cluster)
    T.ptx_tma_store("float16", C.data, 2, 0, M, N, 64, 64, S.data, 0, y, x)
        the same without the barrier: the box from shared memory into the tensor, in a bulk
        group (T.ptx_tma_store_commit(), T.ptx_tma_store_wait(n))

Shapes, boxes and coordinates are in the IR's row-major order (outermost first); the tensor
map and PTX take them innermost first. The global tensor is dense (row-major strides from its
shape). Every backend and the interpreter read the call through `tma_load`.
"""

from __future__ import annotations

from dataclasses import dataclass

from tirc.diagnostics import DiagnosticError, Note
from tirc.ir import expr as E
from tirc.ir.dtype import DataType
from tirc.ir.functor import walk
from tirc.ir.node import Node
from tirc.ir.structural import structural_equal
from tirc.ir.target import arch_number
from tirc.ir.wgmma import swizzled_handles

SWIZZLES = (0, 32, 64, 128)  # bytes: the span whose 16-byte chunks the swizzle permutes
MAX_BOX = 256  # elements along one box dimension
MBARRIER_OPS = (
    "ptx_mbarrier_init",
    "ptx_mbarrier_arrive",
    "ptx_mbarrier_arrive_expect_tx",
    "ptx_mbarrier_wait",
    "ptx_mbarrier_inval",
)

TMA_LOADS = ("ptx_tma_load", "ptx_tma_load_multicast")
TMA_COPIES = (*TMA_LOADS, "ptx_tma_store")
HOPPER_OPS = (*MBARRIER_OPS, *TMA_COPIES, "ptx_tma_store_commit", "ptx_tma_store_wait")
FIRST_ARCH = 90  # sm_90: the first with TMA, mbarrier transaction counts and try_wait


@dataclass(frozen=True, slots=True, eq=False)
class TmaLoad:
    """One `T.ptx_tma_load` or `T.ptx_tma_store` call, read."""

    call: E.Call
    dtype: DataType
    tensor: E.PrimExpr  # the global tensor's data handle
    swizzle: int
    shape: tuple[E.PrimExpr, ...]
    box: tuple[int, ...]
    shared: E.PrimExpr
    shared_offset: E.PrimExpr
    barrier: E.PrimExpr | None  # None for a store
    barrier_index: E.PrimExpr | None
    coords: tuple[E.PrimExpr, ...]
    multicast: E.PrimExpr | None = None  # the mask of the cluster's blocks it lands in

    @property
    def rank(self) -> int:
        return len(self.box)

    @property
    def box_bytes(self) -> int:
        """What the copy writes to shared memory, and completes on its mbarrier."""
        count = 1
        for extent in self.box:
            count *= extent
        return count * self.element_bytes

    @property
    def element_bytes(self) -> int:
        return self.dtype.bits // 8

    def same_map(self, other: TmaLoad) -> bool:
        """Whether the two loads read through one tensor map (a kernel parameter)."""
        return (
            self.dtype == other.dtype
            and self.swizzle == other.swizzle
            and self.box == other.box
            and _same(self.tensor, other.tensor)
            and len(self.shape) == len(other.shape)
            and all(_same(a, b) for a, b in zip(self.shape, other.shape, strict=True))
        )


def _same(a: E.PrimExpr, b: E.PrimExpr) -> bool:
    """The same expression of the same variables (structural equality alone would take any
    two variables of a type for each other)."""
    return structural_equal(a, b) and _variables(a) == _variables(b)


def _variables(expr: E.PrimExpr) -> list[int]:
    found: list[int] = []
    walk(expr, lambda node: found.append(id(node)) if isinstance(node, E.Var) else None)
    return found


def _constant(call: E.Call, index: int, what: str) -> int:
    arg = call.args[index]
    if not isinstance(arg, E.IntImm):
        raise DiagnosticError.at(call.span, f"T.{call.op}: the {what} must be a constant")
    return arg.value


def _expressions(call: E.Call) -> tuple[E.PrimExpr, ...]:
    found = []
    for arg in call.args:
        if not isinstance(arg, E.PrimExpr):
            raise DiagnosticError.at(call.span, f"T.{call.op}: {arg!r} is not an expression")
        found.append(arg)
    return tuple(found)


def tma_load(call: E.Call) -> TmaLoad:
    """The operands of a `T.ptx_tma_load` (or `T.ptx_tma_store`, which has no barrier) call;
    a located error where they cannot be a TMA copy (rank 1-5, a swizzle of 0/32/64/128
    bytes, constant boxes of 1-256 elements whose innermost row is a multiple of 16 bytes,
    and equal to the swizzle span where there is one)."""
    args = _expressions(call)
    op = f"T.{call.op}"
    is_load = call.op in TMA_LOADS
    is_multicast = call.op == "ptx_tma_load_multicast"
    rank = _constant(call, 1, "rank") if len(args) > 1 else 0
    if not 1 <= rank <= 5:
        raise DiagnosticError.at(call.span, f"{op} copies boxes of 1 to 5 dimensions, not {rank}")
    barrier = ("barrier, index, " if is_load else "") + ("mask, " if is_multicast else "")
    operands = 5 + 2 * is_load + is_multicast  # besides the rank's shape, box and corner
    if len(args) != 3 * rank + operands:
        raise DiagnosticError.at(
            call.span,
            f"{op} of rank {rank} takes {3 * rank + operands + 1} arguments (dtype, "
            f"tensor, rank, swizzle, {rank} extents, {rank} box extents, shared, offset, "
            f"{barrier}{rank} coordinates), not {len(args) + 1}",
        )
    dtype = call.dtype.element
    if dtype.bits % 8 or dtype.lanes != 1:
        raise DiagnosticError.at(call.span, f"{op} copies whole-byte elements, not {dtype}")
    swizzle = _constant(call, 2, "swizzle")
    if swizzle not in SWIZZLES:
        raise DiagnosticError.at(
            call.span, f"{op}: swizzle {swizzle} is not one of 0, 32, 64, 128 (bytes)"
        )
    box = tuple(_constant(call, 3 + rank + i, "box extent") for i in range(rank))
    for extent in box:
        if not 1 <= extent <= MAX_BOX:
            raise DiagnosticError.at(
                call.span, f"{op}: a box extent is 1 to {MAX_BOX} elements, not {extent}"
            )
    row = box[-1] * (dtype.bits // 8)
    if row % 16:
        raise DiagnosticError.at(
            call.span, f"{op}: the box's rows are {row} bytes, not a multiple of 16"
        )
    if swizzle and row != swizzle:
        raise DiagnosticError.at(
            call.span,
            f"{op}: with a {swizzle}-byte swizzle the box's rows must be {swizzle} bytes, "
            f"not {row}",
            Note("choose the innermost box extent to fill the swizzle span, or swizzle 0"),
        )
    start = 3 + 2 * rank
    corner = start + (4 if is_load else 2) + is_multicast
    return TmaLoad(
        call,
        dtype,
        args[0],
        swizzle,
        tuple(args[3 : 3 + rank]),
        box,
        args[start],
        args[start + 1],
        args[start + 2] if is_load else None,
        args[start + 3] if is_load else None,
        tuple(args[corner:]),
        args[start + 4] if is_multicast else None,
    )


def tensor_maps(body: Node) -> list[TmaLoad]:
    """One TMA load per distinct tensor map the code reads through, in order of appearance:
    the kernel parameters the host builds."""
    found: list[TmaLoad] = []

    def visit(node: Node) -> None:
        if isinstance(node, E.Call) and node.op in TMA_COPIES:
            load = tma_load(node)
            if not any(load.same_map(other) for other in found):
                found.append(load)

    walk(body, visit)
    return found


def map_index(maps: list[TmaLoad], load: TmaLoad) -> int:
    return next(i for i, other in enumerate(maps) if other.same_map(load))


def swizzled_byte(offset: int, swizzle: int) -> int:
    """Where the hardware puts byte `offset` of a box (row-major, from the 1024-byte aligned
    start of the destination) under a `swizzle`-byte swizzle: the 16-byte chunk index within
    each 128-byte line is XORed with the line's number modulo swizzle / 16 (CUTLASS's
    Swizzle<1|2|3, 4, 3>; the PTX ISA's tensor swizzling modes)."""
    if swizzle == 0:
        return offset
    mask = swizzle // 16 - 1
    return offset ^ (((offset >> 7) & mask) << 4)


def hopper_calls(body: Node) -> list[E.Call]:
    """The mbarrier and TMA calls of some code, in order."""
    found: list[E.Call] = []

    def visit(node: Node) -> None:
        if isinstance(node, E.Call) and node.op in HOPPER_OPS:
            found.append(node)

    walk(body, visit)
    return found


def check_hopper_arch(body: Node, arch: str) -> None:
    """A located error at the first mbarrier or TMA call when `arch` predates them."""

    calls = hopper_calls(body)
    if calls and arch_number(arch) < FIRST_ARCH:
        call = calls[0]
        raise DiagnosticError.at(
            call.span,
            f"T.{call.op} needs sm_90 or later (TMA and mbarrier transaction counts), but the "
            f"target is {arch}",
            Note("compile with --target 'cuda -arch=sm_90a' (or sm_90)"),
        )


def shared_alignment(body: Node, data: E.Var) -> int:
    """The byte alignment a shared array needs: 1024 as a swizzled TMA destination or source,
    or read by a wgmma through a swizzled descriptor (the swizzle is a function of the address),
    128 as another TMA destination or source, else 16 (a float4)."""
    if data in swizzled_handles(body):
        return 1024
    found = 16
    for call in hopper_calls(body):
        if call.op in TMA_COPIES:
            load = tma_load(call)
            if load.shared is data:
                found = max(found, 1024 if load.swizzle else 128)
    return found

"""What the arguments of the Hopper warpgroup MMA intrinsics mean (wgmma, sm_90a).

Shared by the CUDA backend and the interpreter. One `wgmma.mma_async` is issued by the 128
threads of a warpgroup (4 consecutive warps) and computes D (64 x N, float32) += A (64 x 16) x
B (16 x N), A and B in shared memory, each described by a matrix descriptor: a start address,
a leading and a stride byte offset (LBO, SBO) and a swizzle mode. The call spells those parts
out, and the backend packs them into the 64-bit descriptor:

    T.ptx_wgmma("m64n128k16", "fp16", "fp16", "fp32",
                A.data, a_offset, a_lbo, a_sbo, a_swizzle, a_trans,
                B.data, b_offset, b_lbo, b_sbo, b_swizzle, b_trans,
                C.data, c_offset, scale_d)

Offsets are in elements of the operand; LBO and SBO in bytes (multiples of 16); swizzle in
bytes (0: none, 32, 64, 128); trans 0 is K-major (A: row-major 64 x 16, B: 16 x N stored N x
K), 1 is MN-major. scale_d 0 ignores the accumulator's old value (D = A x B).

The accumulator is a per-thread register array (a "local" buffer of N / 2 floats, addressed
by `c_offset`), as mma.sync's are. Thread t of the warpgroup (warp w = t // 32, lane l) holds,
in register i:

    row 16 w + l // 4 + 8 ((i // 2) % 2),  column 8 (i // 4) + 2 (l % 4) + i % 2

A shared operand's element (mn, k) of 16-bit type lies at byte (from the start address):

    K-major,  no swizzle:   (mn % 8) 16 + (mn // 8) SBO + (k % 8) 2 + (k // 8) LBO
    K-major,  W-byte rows:  (mn % 8) W  + (mn // 8) SBO + k 2                 (k 2 < W)
    MN-major, no swizzle:   (mn % 8) 2  + (mn // 8) SBO + (k % 8) 16 + (k // 8) LBO
    MN-major, W-byte rows:  (mn % (W / 2)) 2 + (mn // (W / 2)) LBO + (k % 8) W + (k // 8) SBO

and a swizzled address then has its 16-byte chunk bits [4, 4 + s) XORed with bits [7, 7 + s)
(s = 1, 2, 3 for W = 32, 64, 128): a swizzled tile must start on a 1024-byte boundary (8 rows
of 128 bytes), where the pattern repeats.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from tirc.diagnostics import DiagnosticError
from tirc.ir import expr as E
from tirc.ir.functor import walk
from tirc.ir.node import Node
from tirc.ir.ptx import PTX_TYPES

WARPGROUP_SIZE = 128
SWIZZLE_MODES = {0: 0, 128: 1, 64: 2, 32: 3}  # bytes -> the descriptor's 2-bit mode
ARCHES = ("sm_90a",)  # architectures that have wgmma

# argument positions of ptx_wgmma
A_POINTER, B_POINTER, C_POINTER = 4, 10, 16
ARG_COUNT = 19


@dataclass(frozen=True, slots=True)
class WgmmaShape:
    name: str  # "m64n128k16"
    n: int
    a_type: str  # PTX type: f16 or bf16
    b_type: str
    c_type: str  # f32

    @property
    def registers(self) -> int:
        """Accumulator registers a thread holds."""
        return self.n // 2


_SHAPE = re.compile(r"m64n(\d+)k16")


def wgmma_shape(call: E.Call) -> WgmmaShape:
    """The shape and types of a ptx_wgmma call, or a located error."""

    def text(index: int) -> str:
        arg = call.args[index]
        if not isinstance(arg, E.StringImm):
            raise DiagnosticError.at(
                call.span, f"T.{call.op}: argument {index + 1} must be a string"
            )
        return arg.value

    if len(call.args) != ARG_COUNT:
        raise DiagnosticError.at(
            call.span, f"T.{call.op} takes {ARG_COUNT} arguments, not {len(call.args)}"
        )
    name = text(0)
    found = _SHAPE.fullmatch(name)
    n = int(found.group(1)) if found else 0
    if not found or not 8 <= n <= 256 or n % 8:
        raise DiagnosticError.at(
            call.span, f"T.{call.op}: shape '{name}' is not m64nNk16 with N in 8..256 by 8"
        )
    a_type, b_type, c_type = (PTX_TYPES.get(text(i), ("?", 0))[0] for i in (1, 2, 3))
    if a_type not in ("f16", "bf16") or b_type != a_type or c_type != "f32":
        raise DiagnosticError.at(
            call.span,
            f"T.{call.op} multiplies f16 or bf16 (both alike) into f32, not "
            f"{text(1)} x {text(2)} -> {text(3)}",
        )
    for index in (A_POINTER + 4, B_POINTER + 4):
        arg = call.args[index]
        if not isinstance(arg, E.IntImm) or arg.value not in SWIZZLE_MODES:
            raise DiagnosticError.at(
                call.span, f"T.{call.op}: the swizzle must be a constant 0, 32, 64 or 128 (bytes)"
            )
    return WgmmaShape(name, n, a_type, b_type, c_type)


def operand_handles(call: E.Call) -> list[tuple[E.Var, int]]:
    """The shared buffer handles a `T.ptx_wgmma` reads (A's, then B's: a handle, or a
    `T.tvm_access_ptr` into one) with each descriptor's swizzle in bytes; empty for another
    call, or where either is spelled otherwise (a computed pointer, a swizzle not constant)."""
    if call.op != "ptx_wgmma" or len(call.args) != ARG_COUNT:
        return []
    found = []
    for first in (A_POINTER, B_POINTER):
        pointer, width = call.args[first], call.args[first + 4]
        if isinstance(pointer, E.Call) and pointer.op == "tvm_access_ptr":
            pointer = pointer.args[1]
        if not isinstance(pointer, E.Var) or not isinstance(width, E.IntImm):
            return []
        found.append((pointer, width.value))
    return found


def swizzled_handles(body: Node) -> set[E.Var]:
    """The shared buffers some code's wgmmas read through a swizzled descriptor: the swizzle is
    a function of the address, so each must start on a 1024-byte boundary."""
    found: set[E.Var] = set()

    def visit(node: Node) -> None:
        if isinstance(node, E.Call):
            found.update(handle for handle, width in operand_handles(node) if width)

    walk(body, visit)
    return found


def accumulator_position(thread: int, register: int) -> tuple[int, int]:
    """(row, column) of D held by warpgroup thread `thread` in accumulator `register`."""
    warp, lane = divmod(thread % WARPGROUP_SIZE, 32)
    row = 16 * warp + lane // 4 + 8 * ((register // 2) % 2)
    column = 8 * (register // 4) + 2 * (lane % 4) + register % 2
    return row, column


def swizzle(address: int, width: int) -> int:
    """The byte address `address` of a `width`-byte swizzled layout (0: none)."""
    bits = {0: 0, 32: 1, 64: 2, 128: 3}[width]
    mask = (1 << bits) - 1
    return address ^ (((address >> 7) & mask) << 4)


def operand_byte(
    mn: int, k: int, *, lbo: int, sbo: int, width: int, mn_major: bool, element_bytes: int = 2
) -> int:
    """Byte offset from the descriptor's start of element (mn, k) of a 16-bit operand, before
    the swizzle (see the module docstring)."""
    per_chunk = 16 // element_bytes  # elements in 16 bytes
    if not mn_major:
        if width == 0:
            return (
                (mn % 8) * 16
                + (mn // 8) * sbo
                + (k % per_chunk) * element_bytes
                + (k // per_chunk) * lbo
            )
        return (mn % 8) * width + (mn // 8) * sbo + k * element_bytes
    if width == 0:
        return (
            (mn % per_chunk) * element_bytes
            + (mn // per_chunk) * sbo
            + (k % 8) * 16
            + (k // 8) * lbo
        )
    per_row = width // element_bytes
    return (mn % per_row) * element_bytes + (mn // per_row) * lbo + (k % 8) * width + (k // 8) * sbo


def operand_element(
    start: int, mn: int, k: int, *, lbo: int, sbo: int, width: int, mn_major: bool
) -> int:
    """The 16-bit element index (from the buffer's start, taken as 1024-byte aligned) of
    element (mn, k) of an operand whose descriptor starts `start` bytes into the buffer."""
    address = start + operand_byte(mn, k, lbo=lbo, sbo=sbo, width=width, mn_major=mn_major)
    return swizzle(address, width) // 2


def descriptor(start: int, lbo: int, sbo: int, width: int) -> int:
    """The 64-bit matrix descriptor (start address, LBO and SBO in bytes)."""
    return (
        ((start & 0x3FFFF) >> 4)
        | (((lbo & 0x3FFFF) >> 4) << 16)
        | (((sbo & 0x3FFFF) >> 4) << 32)
        | (SWIZZLE_MODES[width] << 62)
    )


# setmaxnreg (sm_90a): a warpgroup raises or lowers the registers each of its threads may use,
# so that the producer warpgroup of a warp-specialized kernel hands its registers to the
# consumers' accumulators. T.ptx_setmaxnreg("dec", 40) / T.ptx_setmaxnreg("inc", 232); the
# count is a constant the ISA bounds to [24, 256], a multiple of 8.
SETMAXNREG_RANGE = (24, 256)


def setmaxnreg_operands(call: E.Call) -> tuple[str, int]:
    """("inc" or "dec", the register count) of a T.ptx_setmaxnreg call; a located error where
    either is not a constant the instruction takes."""
    direction, count = call.args
    if not isinstance(direction, E.StringImm) or direction.value not in ("inc", "dec"):
        raise DiagnosticError.at(
            call.span, 'T.ptx_setmaxnreg: the first argument must be "inc" or "dec"'
        )
    low, high = SETMAXNREG_RANGE
    if not isinstance(count, E.IntImm) or not low <= count.value <= high or count.value % 8:
        raise DiagnosticError.at(
            call.span,
            f"T.ptx_setmaxnreg: the register count must be a constant multiple of 8 in "
            f"[{low}, {high}]",
        )
    return direction.value, count.value

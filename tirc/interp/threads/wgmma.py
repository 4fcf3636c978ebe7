"""The Hopper warpgroup MMA, thread by thread (the arguments as in tirc.ir.wgmma).

Each thread of the warpgroup computes its own N / 2 accumulator elements when it issues the
call: the rows and columns it holds (tirc.ir.wgmma.accumulator_position), from A and B read
through their descriptors' layouts in shared memory, in float64, rounded once to float32. On
a GPU the result is there only after `wgmma.wait_group`; a program that reads its accumulators
before waiting is wrong there and is not caught here. Fences and commits have nothing to do
in this model; the shared tile must have been written (and a barrier passed) before the call,
which the race tracker checks like any other shared read.
"""

from __future__ import annotations

from tirc.interp.fault import Fault
from tirc.interp.memory.storage import storage_of, view_of
from tirc.interp.threads.ptx import Registers
from tirc.interp.threads.scheduler import BlockContext
from tirc.ir.dtype import parse_dtype
from tirc.ir.ptx import ELEMENT_DTYPES
from tirc.ir.wgmma import WARPGROUP_SIZE, WgmmaShape, accumulator_position, operand_element

_F32 = parse_dtype("float32")


class Operand:
    """A shared operand: element (mn, k) read through the descriptor's layout."""

    def __init__(self, parts: tuple, ptx_type: str, thread: int, site: int):
        """parts: (pointer, offset, lbo, sbo, swizzle, trans), as the call gives them."""
        handle, offset, lbo, sbo, width, trans = parts
        dtype = parse_dtype(ELEMENT_DTYPES[ptx_type])
        _, base = view_of(handle, dtype)
        self.start = (base + offset) * 2  # bytes from the storage's start
        self.registers = Registers(storage_of(handle), 0, dtype, thread, site)
        self.lbo, self.sbo, self.width, self.mn_major = lbo, sbo, width, bool(trans)

    def __call__(self, mn: int, k: int) -> float:
        index = operand_element(
            self.start, mn, k, lbo=self.lbo, sbo=self.sbo, width=self.width, mn_major=self.mn_major
        )
        return float(self.registers[index])


def wgmma(
    shape: WgmmaShape,
    a: tuple,
    b: tuple,
    c: object,
    c_offset: int,
    scale_d: int,
    thread: int,
    block: BlockContext | None,
    site: int,
) -> None:
    """a and b: (pointer, offset, lbo, sbo, swizzle, trans) of the shared operands."""
    if block is None or thread < 0:
        raise Fault(site, "wgmma is a warpgroup instruction: it runs only inside a GPU kernel")
    threads = block.dims[0] * block.dims[1] * block.dims[2]
    if threads % WARPGROUP_SIZE:
        raise Fault(
            site,
            f"wgmma needs whole warpgroups of {WARPGROUP_SIZE} threads; the block has {threads}",
        )
    left = Operand(a, shape.a_type, thread, site)
    right = Operand(b, shape.b_type, thread, site)
    accumulator = Registers(c, c_offset, _F32, thread, site)
    for register in range(shape.registers):
        row, column = accumulator_position(thread, register)
        total = sum(left(row, k) * right(column, k) for k in range(16))
        if scale_d:
            total += float(accumulator[register])
        accumulator[register] = total

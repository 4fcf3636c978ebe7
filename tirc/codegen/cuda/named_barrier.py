"""Named barriers as CUDA C inline PTX (tirc.ir.named_barrier says what the arguments mean):

    T.ptx_bar_sync(1, 128)    ->  asm volatile("bar.sync %0, %1;" :: "r"(1), "r"(128) : "memory")
    T.ptx_bar_arrive(1, 128)  ->  asm volatile("bar.arrive %0, %1;" :: "r"(1), "r"(128) : "memory")

The "memory" clobber keeps the compiler from moving shared memory accesses across them.
"""

from __future__ import annotations

from tirc.codegen.cuda.expr import PRIMARY, Code, ExprPrinter
from tirc.ir import expr as E
from tirc.ir.named_barrier import SYNC, barrier_operands


def print_barrier(p: ExprPrinter, call: E.Call, lane: int | None) -> Code:
    barrier, count = barrier_operands(call)
    instruction = "bar.sync" if call.op == SYNC else "bar.arrive"
    return (
        f'asm volatile("{instruction} %0, %1;" :: "r"((int)({p(barrier)})), "r"({count}) '
        ': "memory")',
        PRIMARY,
    )


HANDLERS = {"ptx_bar_sync": print_barrier, "ptx_bar_arrive": print_barrier}

"""unify-thread-binding: one variable per thread tag in each kernel.

TVM 0.27 runs it after compact-buffer-allocation, with lift-thread-binding before it; in 0.27
both leave each kernel with one loop per tag at its top, so this pass applies the same
rewrite (see lift_thread_binding.py), and after lift-thread-binding it changes nothing.
Where one tag's loops differ in extent both stop with an error. Unlike TVM, `vthread` loops
are not unified (see lift_thread_binding.py): two nested `vthread.x` loops stay two virtual
threads, each running all its values, as the s-tir program means; TVM makes them one.

Expects s-tir with opaque blocks or later; leaves the same dialect:

    for bx in T.thread_binding(8, "blockIdx.x"):     for blockIdx_x in T.thread_binding(8, ...):
        for tx in T.thread_binding(32, ...):  ->          for threadIdx_x in T.thread_binding(32):
            ...                                                ...
        for tx in T.thread_binding(32, ...):                  ...
            ...
"""

from __future__ import annotations

from dataclasses import dataclass

from tirc.ir.function import PrimFunc
from tirc.transform.pass_base import Dialect, FunctionPass
from tirc.transform.passes.lift_thread_binding import lift_kernels


@dataclass(frozen=True)
class UnifyThreadBinding(FunctionPass):
    name = "unify-thread-binding"
    expects = Dialect.OPAQUE_BLOCKS
    leaves = Dialect.OPAQUE_BLOCKS

    def run_function(self, func: PrimFunc) -> PrimFunc:
        return lift_kernels(func)

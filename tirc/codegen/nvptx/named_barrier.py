"""Named barriers for --ptx-via llvm (tirc.ir.named_barrier; CUDA C's spelling is
tirc/codegen/cuda/named_barrier.py), as NVVM's convergent barrier intrinsics, which LLVM
prints as `barrier.sync.aligned` / `barrier.arrive.aligned` (what `bar.sync` / `bar.arrive`
mean):

    T.ptx_bar_sync(1, 128)
    ->  call void @llvm.nvvm.barrier.cta.sync.aligned.count(i32 1, i32 128)
    T.ptx_bar_arrive(1, 128)
    ->  call void @llvm.nvvm.barrier.cta.arrive.aligned.count(i32 1, i32 128)
"""

from __future__ import annotations

import llvmlite.ir as ir

from tirc.codegen.nvptx import types
from tirc.codegen.nvptx.ptx import _ZERO
from tirc.codegen.nvptx.values import ValueBuilder
from tirc.ir import expr as E
from tirc.ir.dtype import parse_dtype
from tirc.ir.named_barrier import SYNC, barrier_operands

_I32 = parse_dtype("int32")


def lower_barrier(v: ValueBuilder, call: E.Call) -> ir.Value:
    barrier, count = barrier_operands(call)
    half = "sync" if call.op == SYNC else "arrive"
    name = f"llvm.nvvm.barrier.cta.{half}.aligned.count"
    function = v.function(name, ir.VoidType(), [types.I32, types.I32])
    v.b.call(function, [v.cast(v(barrier), barrier.dtype, _I32), ir.Constant(types.I32, count)])
    return _ZERO


LOWERINGS = {"ptx_bar_sync": lower_barrier, "ptx_bar_arrive": lower_barrier}

"""compact-buffer-allocation on a register array that transform_layout gave a lane's slice of a
row (`(i, k // 128, k % 128 // 4, k % 4)`, the lanes on the third axis): its accesses,
simplified with the loops' ranges, touch one lane's element on that axis, so the array holds
that lane's 32 floats. Relaxing the indices as written spans all 32 lanes there (TVM 0.27
keeps 1024 floats a thread, which the CUDA compiler puts in local memory); tirc simplifies a
local buffer's index first where that gives a smaller constant extent."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from tirc.driver.lower import lower_module
from tirc.driver.schedule import apply_plan_file
from tirc.interp import run
from tirc.ir import expr as E
from tirc.ir import stmt as S
from tirc.ir.function import IRModule
from tirc.ir.functor import walk
from tirc.text import parse

SAMPLES = Path(__file__).resolve().parents[2] / "samples" / "gpu"


def _local_shapes(plan: str, **defines: str) -> tuple[dict[str, tuple[int, ...]], IRModule]:
    module = parse((SAMPLES / "softmax_rows.tir").read_text(), defines=defines)
    scheduled, _ = apply_plan_file(module, str(SAMPLES / plan))
    lowered = lower_module(scheduled, target="cuda")
    shapes: dict[str, tuple[int, ...]] = {}

    def record(node: object) -> None:
        if isinstance(node, S.AllocBuffer) and node.buffer.scope == "local":
            extents = node.buffer.shape
            shapes[node.buffer.name] = tuple(e.value for e in extents if isinstance(e, E.IntImm))

    walk(lowered, record)
    return shapes, lowered


def test_a_lanes_slice_of_a_row_is_its_registers_alone() -> None:
    shapes, _ = _local_shapes("softmax_rows.regs.plan.json", M="8", N="1024")
    assert shapes["A_local"] == (32,)  # 1024 floats / 32 lanes, flattened
    shapes, _ = _local_shapes("softmax_rows.block_regs.plan.json", M="2", N="4096")
    assert shapes["A_local"] == (16,)  # 4096 / 256 threads


def test_the_compacted_program_computes_the_softmax() -> None:
    _, lowered = _local_shapes("softmax_rows.regs.plan.json", M="8", N="256")
    a = np.random.default_rng(0).uniform(-4, 4, (8, 256)).astype(np.float32)
    args = {"A": a.copy(), "B": np.zeros_like(a)}
    run(lowered["main"], args, module=lowered)
    e = np.exp(a - a.max(axis=1, keepdims=True))
    np.testing.assert_allclose(args["B"], e / e.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-7)

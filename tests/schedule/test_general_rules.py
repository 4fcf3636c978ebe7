"""Where tirc departs on purpose from TVM 0.27's result for a rule it otherwise follows (the
random-plan differential, tests/schedule/tvm_random_plans.py, lists these as deliberate):
TVM's program there would be wrong, so tirc cuts or refuses instead.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

import numpy as np
import pytest

from tirc.diagnostics import DiagnosticError
from tirc.interp import random_inputs, run
from tirc.ir.buffer import BufferRegion
from tirc.ir.expr import IntImm
from tirc.ir.function import IRModule
from tirc.ir.functor import walk
from tirc.ir.stmt import SBlock
from tirc.schedule.apply import apply_plan
from tirc.schedule.plan import read_plan
from tirc.text import parse

Value = np.ndarray | int | float | bool

PADDING = """
@T.prim_func(s_tir=True)
def main(X: T.Buffer((4, 14), "float32"), P: T.Buffer((4, 16), "float32")):
    for c, w in T.grid(4, 16):
        with T.sblock("P"):
            vc, vw = T.axis.remap("SS", [c, w])
            T.reads(X[vc, vw - 1])
            T.writes(P[vc, vw])
            P[vc, vw] = T.if_then_else(1 <= vw and vw < 15, X[vc, vw - 1], T.float32(0.0))
"""

MATMUL = """
@T.prim_func(s_tir=True)
def main(A: T.Buffer((8, 8)), B: T.Buffer((8, 8)), C: T.Buffer((8, 8))):
    for i, j, k in T.grid(8, 8, 8):
        with T.sblock("C"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                C[vi, vj] = T.float32(0.0)
            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]
"""


def _apply(text: str, plan: list[object]) -> IRModule:
    return apply_plan(parse(text), read_plan(json.dumps([plan, []])))[0]


def _block(module: IRModule, name: str) -> SBlock:
    found: list[SBlock] = []
    walk(module["main"].body, lambda n: found.append(n) if isinstance(n, SBlock) else None)
    return next(block for block in found if block.name == name)


def _outputs(module: IRModule, inputs: Mapping[str, Value]) -> dict[str, np.ndarray]:
    args = {k: v.copy() if isinstance(v, np.ndarray) else v for k, v in inputs.items()}
    run(module["main"], args)
    return {k: v for k, v in args.items() if isinstance(v, np.ndarray)}


def test_read_at_cuts_a_padding_region_to_the_buffer() -> None:
    # TVM 0.27 copies X[c, -1:15], reading one element past each end of X
    plan = [
        ["GetSBlock", [], ["P", "main"], ["b0"]],
        ["GetLoops", ["b0"], [], ["l1", "l2"]],
        ["ReadAt", ["l1", "b0"], [0, "shared"], ["b3"]],
    ]
    scheduled = _apply(PADDING, plan)
    (read,) = _block(scheduled, "X_shared").reads
    assert isinstance(read, BufferRegion)
    last = read.region[1]
    assert isinstance(last.min, IntImm) and isinstance(last.extent, IntImm)
    assert (last.min.value, last.extent.value) == (0, 14)
    inputs = random_inputs(parse(PADDING)["main"], 0)
    want, got = _outputs(parse(PADDING), inputs), _outputs(scheduled, inputs)
    np.testing.assert_array_equal(got["P"], want["P"])


def test_reindex_refuses_an_index_over_a_loop_inside_the_block() -> None:
    # read_at's copy block indexes A by `v0 + ax0`, ax0 a loop inside it: TVM 0.27's reindex
    # stage would use ax0 outside that loop, undefined
    plan = [
        ["GetSBlock", [], ["C", "main"], ["b0"]],
        ["GetLoops", ["b0"], [], ["l1", "l2", "l3"]],
        ["ReadAt", ["l3", "b0"], [0, "shared"], ["b4"]],
        ["ReIndex", ["b4"], [0, 0], ["b5"]],
    ]
    with pytest.raises(DiagnosticError) as caught:
        _apply(MATMUL, plan)
    assert "is indexed by the loop variable ax0 inside" in str(caught.value)

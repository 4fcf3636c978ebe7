"""Predicated contiguous loads and stores become LLVM's masked load and store: the lanes the
predicate masks touch no memory (a load reads them as zero, a store leaves them alone), so a
vector loop can run past the end of a buffer; checked against the interpreter."""

from __future__ import annotations

import numpy as np

from tests.codegen.helpers import parse_text, run_both
from tirc.codegen.llvm import compile_module
from tirc.driver.lower import lower_module
from tirc.driver.target import parse_target

# 20 elements in vectors of 16: the second vector's last 12 lanes lie past the end, masked off
KERNEL = """
# from tvm.script import ir as I
# from tvm.script import tirx as T

@I.ir_module
class Module:
    @T.prim_func
    def main(A: T.Buffer((20,), "float32"), B: T.Buffer((20,), "float32")):
        T.func_attr({"tirx.noalias": True})
        for i in range(2):
            B.vstore(
                [T.Ramp(i * 16, 1, 16)],
                A.vload([T.Ramp(i * 16, 1, 16)], predicate=T.Ramp(i * 16, 1, 16) < T.Broadcast(20, 16))
                * T.Broadcast(T.float32(2.0), 16),
                predicate=T.Ramp(i * 16, 1, 16) < T.Broadcast(20, 16),
            )
"""  # noqa: E501


def test_predicated_vector_access_is_a_masked_load_and_store() -> None:
    lowered = lower_module(parse_text(KERNEL), target="cpu")
    text = compile_module(lowered, parse_target("cpu"), 0).llvm_ir()
    assert "@llvm.masked.load.v16f32.p0" in text
    assert "@llvm.masked.store.v16f32.p0" in text


def test_masked_lanes_touch_no_memory() -> None:
    args = {"A": np.arange(20, dtype=np.float32), "B": np.full(20, -1.0, dtype=np.float32)}
    result = run_both(parse_text(KERNEL), args)
    assert np.array_equal(result["B"], np.arange(20, dtype=np.float32) * 2)


# the last pair lies past the end of A; the one condition of T.if_then_else skips it
GUARDED_PAIR = """
# from tvm.script import ir as I
# from tvm.script import tirx as T

@I.ir_module
class Module:
    @T.prim_func
    def main(A: T.Buffer((62,), "float32"), B: T.Buffer((64,), "float32")):
        T.func_attr({"tirx.noalias": True})
        for i in range(32):
            B[T.Ramp(i * 2, 1, 2)] = T.if_then_else(
                i * 2 + 2 <= 62, A[T.Ramp(i * 2, 1, 2)], T.Broadcast(T.float32(-1.0), 2)
            )
"""


def test_a_vector_if_then_else_with_one_condition_branches_around_the_load() -> None:
    lowered = lower_module(parse_text(GUARDED_PAIR), target="cpu")
    text = compile_module(lowered, parse_target("cpu"), 0).llvm_ir()
    assert "phi <2 x float>" in text  # a branch per value, not a select of both loads
    a = np.arange(62, dtype=np.float32)
    result = run_both(parse_text(GUARDED_PAIR), {"A": a, "B": np.zeros(64, np.float32)})
    assert np.array_equal(result["B"], np.concatenate([a, [-1.0, -1.0]]).astype(np.float32))

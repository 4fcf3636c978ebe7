"""loop-partition's options and the loops it must leave alone; the goldens in
golden/loop_partition/ hold the rewrites TVM 0.27 agrees with."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests.transform.helpers import run_passes
from tirc import interp
from tirc.ir import stmt as S
from tirc.ir.functor import walk
from tirc.text import parse, print_module
from tirc.transform import read_pipeline
from tirc.transform.passes.loop_partition import LoopPartition

GOLDEN = Path(__file__).parent / "golden" / "loop_partition"

TAIL = """
@I.ir_module
class Module:
    @T.prim_func
    def main(A: T.Buffer((30,), "float32"), B: T.Buffer((30,), "float32")):
        for io in range(8):
            for ii in range(4):
                if T.likely(io * 4 + ii < 30):
                    B[io * 4 + ii] = A[io * 4 + ii]
"""

THREADS = """
@I.ir_module
class Module:
    @T.prim_func
    def main(A: T.Buffer((16,), "float32"), B: T.Buffer((20,), "float32")):
        for i in T.thread_binding(20, thread="threadIdx.x"):
            if T.likely(i < 16):
                B[i] = A[i]
"""


def loops(module) -> list[S.For]:  # type: ignore[no-untyped-def]
    found: list[S.For] = []
    walk(module.functions[0][1].body, lambda n: found.append(n) if isinstance(n, S.For) else None)
    return found


def test_options_spelled_in_a_pipeline() -> None:
    spelled = "loop-partition{partition_const_loop=true,no_unroll_loop_with_extent_one=true}"
    (pass_,) = read_pipeline(f"passes = ['{spelled}']").passes
    assert pass_ == LoopPartition(partition_const_loop=True, no_unroll_loop_with_extent_one=True)
    assert pass_.spelling() == spelled
    assert LoopPartition().spelling() == "loop-partition"


def test_constant_loops_need_the_option() -> None:
    module = parse(TAIL)
    plain = run_passes(module, "loop-partition")
    assert len(loops(plain)) == 2
    assert "likely" not in print_module(plain)  # the tags go all the same
    split = run_passes(module, "loop-partition{partition_const_loop=true}")
    # io in [0, 7) x ii, then io = 7 inlined: ii in [0, 2) and ii in [2, 4)
    assert [loop.extent.value for loop in loops(split)] == [7, 4, 2, 2]  # type: ignore[attr-defined]


def test_extent_one_piece_kept_with_the_option() -> None:
    spelled = "loop-partition{partition_const_loop=true,no_unroll_loop_with_extent_one=true}"
    extents = [loop.extent.value for loop in loops(run_passes(parse(TAIL), spelled))]  # type: ignore[attr-defined]
    assert extents == [7, 4, 1, 2, 2]


def assert_same_result(module, after, sizes: dict[str, int]) -> None:  # type: ignore[no-untyped-def]
    want = interp.random_inputs(module.functions[0][1], 3, sizes=sizes)
    have = {k: v.copy() if isinstance(v, np.ndarray) else v for k, v in want.items()}
    interp.run(module.functions[0][1], want)
    interp.run(after.functions[0][1], have)
    for name, value in want.items():
        np.testing.assert_array_equal(have[name], value)  # type: ignore[arg-type]


def test_pieces_compute_the_same() -> None:
    module = parse(TAIL)
    assert_same_result(module, run_passes(module, "loop-partition{partition_const_loop=true}"), {})


@pytest.mark.parametrize("n", [0, 1, 30, 32])
def test_symbolic_pieces_compute_the_same(n: int) -> None:
    module = parse((GOLDEN / "symbolic.before.tir").read_text())
    assert_same_result(module, run_passes(module, "loop-partition"), {"n": n})


def test_thread_bindings_are_left_alone() -> None:
    after = run_passes(parse(THREADS), "loop-partition{partition_const_loop=true}")
    (loop,) = loops(after)
    assert loop.kind is S.ForKind.THREAD_BINDING and loop.extent.value == 20  # type: ignore[attr-defined]

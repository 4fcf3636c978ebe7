"""Compaction of dimensions with symbolic extents: a constant region no larger than the least
value the extent can take (each variable at least 1) replaces it, a larger one leaves it."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from tests.transform.helpers import run_passes
from tirc.driver.lower import lower_module
from tirc.interp import random_inputs, run
from tirc.ir import stmt as S
from tirc.ir.functor import walk
from tirc.text import parse, print_module, script

PROGRAM = Path(__file__).parent / "programs" / "guarded_cross_thread_sum.tir"


def _shapes(func: object) -> dict[str, str]:
    shapes: dict[str, str] = {}

    def record(node: object) -> None:
        if isinstance(node, S.SBlock):
            for buffer in node.alloc_buffers:
                shapes[buffer.name] = ", ".join(script(e) for e in buffer.shape)
        if isinstance(node, S.AllocBuffer):
            shapes[node.buffer.name] = ", ".join(script(e) for e in node.buffer.shape)

    walk(func.body, record)  # type: ignore[attr-defined]
    return shapes


def test_unguarded_write_back_stays_in_bounds_with_threads_past_n() -> None:
    original = parse(PROGRAM.read_text(), name=str(PROGRAM))
    lowered = lower_module(original, target="cuda")
    # n = 20: the one block runs 32 threads in x, 12 of them past n
    inputs = random_inputs(original["main"], 3, sizes={"n": 20})
    got = {k: np.array(v, copy=True) if isinstance(v, np.ndarray) else v for k, v in inputs.items()}
    run(lowered["main"], got, module=lowered)  # an out-of-bounds store would be an error
    np.testing.assert_allclose(got["B"], inputs["A"].sum(axis=0), rtol=1e-6)
    prefix = (
        "canonicalize-loop,lower-cross-thread-reduction,lower-init-block,plan-buffer-allocation,"
        "convert-blocks-to-opaque,lift-thread-binding,compact-buffer-allocation"
    )
    assert _shapes(run_passes(original, prefix)["main"])["C_local"] == "T.int64(1)"


SMALL = """
n = TypeVar("n")
@I.ir_module
class Module:
    @T.prim_func(s_tir=True)
    def main(A: T.Buffer((n,), "float32"), B: T.Buffer((n,), "float32")):
        for tx in T.thread_binding(T.int64(4), thread="threadIdx.x"):
            with T.sblock(""):
                T.reads(A[T.int64(0):T.int64(8)])
                T.writes(B[T.int64(0):T.int64(8)])
                L = T.sblock_alloc_buffer((n,), scope="local")
                M = T.sblock_alloc_buffer((n * T.int64(4), n + T.int64(8)), scope="local")
                for k in range(T.int64(8)):
                    with T.sblock("L"):
                        T.where(k < n)
                        T.reads(A[k])
                        T.writes(L[k], M[T.int64(3), k])
                        L[k] = A[k]
                        M[T.int64(3), k] = A[k]
                for k in range(T.int64(8)):
                    with T.sblock("B"):
                        T.where(k < n)
                        T.reads(L[k], M[T.int64(3), k])
                        T.writes(B[k])
                        B[k] = L[k] + M[T.int64(3), k]
"""


def test_a_region_larger_than_the_least_extent_keeps_it() -> None:
    """8 elements of a dimension of n: n may be smaller, so it stays n (TVM writes
    min(n, 8)); 1 row of n * 4 shrinks to 1, 8 columns of n + 8 (at least 9) to 8."""
    module = parse(SMALL, name="small.tir")
    got = run_passes(module, "convert-blocks-to-opaque,compact-buffer-allocation")
    assert _shapes(got["main"]) == {"L": "n", "M": "T.int64(1), T.int64(8)"}, print_module(got)


PADDED = SMALL.replace(
    'M = T.sblock_alloc_buffer((n * T.int64(4), n + T.int64(8)), scope="local")',
    "M = T.sblock_alloc_buffer((n * T.int64(4), (n + T.int64(15)) // T.int64(16) * T.int64(16)),"
    ' scope="local")',
)


def test_a_padded_extent_counts_as_at_least_its_multiple() -> None:
    """(n + 15) // 16 * 16 is at least 16: 8 columns of it shrink to 8, as TVM does. Kept at
    its symbolic size, a per-thread buffer became a stack allocation that a dlight matmul
    indexed past (an illegal address on an H100)."""
    module = parse(PADDED, name="padded.tir")
    got = run_passes(module, "convert-blocks-to-opaque,compact-buffer-allocation")
    assert _shapes(got["main"]) == {"L": "n", "M": "T.int64(1), T.int64(8)"}, print_module(got)
    lowered = lower_module(module, target="cuda")
    inputs = random_inputs(module["main"], 1, sizes={"n": 5})
    want = {
        k: np.array(v, copy=True) if isinstance(v, np.ndarray) else v for k, v in inputs.items()
    }
    run(module["main"], want, module=module)
    run(lowered["main"], inputs, module=lowered)
    np.testing.assert_array_equal(inputs["B"], want["B"])

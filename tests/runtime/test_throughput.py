"""Static FLOP counts for `tirc run --bench`, on s-tir (blocks) and on lowered tir."""

from __future__ import annotations

from pathlib import Path

from tirc.driver.lower import lower_module
from tirc.runtime.throughput import count_flops
from tirc.text import parse

SAMPLES = Path(__file__).resolve().parents[2] / "samples"


def test_a_matmul_counts_two_flops_per_multiply_add_before_and_after_lowering() -> None:
    # the unscheduled program is all blocks: they were counted as nothing, and the GPU bench
    # line said GB/s for a matmul
    text = (SAMPLES / "gpu" / "matmul_fp16_tc.tir").read_text().replace("N = 1024", "N = 64")
    module = parse(text)
    assert count_flops(module["main"]) == 2 * 64**3
    assert count_flops(lower_module(module, target="cpu")["main"]) == 2 * 64**3


def test_an_unknown_extent_gives_none() -> None:
    module = parse(
        """
@T.prim_func
def main(a: T.handle):
    n = T.int32()
    A = T.match_buffer(a, (n,))
    for i in range(n):
        A[i] = A[i] * T.float32(2.0)
"""
    )
    assert count_flops(module["main"]) is None

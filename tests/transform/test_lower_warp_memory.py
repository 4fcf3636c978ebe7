"""lower-warp-memory: what it rejects, with located messages (its golden pairs are in
golden/lower_warp_memory, run by test_golden_passes and test_differential_passes)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.transform.helpers import run_passes
from tirc.diagnostics import DiagnosticError
from tirc.driver.lower import lower_module
from tirc.text import parse

MARK = "# error"
TENSORIZE = Path(__file__).parents[1] / "schedule" / "golden" / "tensorize"


def _kernel(body: str, threads: int = 32, size: int = 128) -> str:
    return f"""@T.prim_func
def main(A: T.Buffer((128,), "float32"), B: T.Buffer((128,), "float32")):
    W = T.alloc_buffer(({size},), scope="warp")
    with T.launch_thread("threadIdx.x", {threads}) as tx:
{body}
"""


REJECTED = {
    "threads_not_dividing_the_warp": (
        _kernel("        W[tx] = A[tx]\n", threads=64),
        "needs threadIdx.x to be a constant number of lanes that divides the warp size (32)",
    ),
    "size_not_a_multiple_of_the_lanes": (
        _kernel("        W[tx] = A[tx]\n", size=100),
        "must have a constant flat size that is a multiple of 32 lanes",
    ),
    "store_into_another_lane": (
        _kernel(
            "        for j in range(4):\n"
            "            W[tx * 4 + j] = A[tx]\n"
            "        W[tx * 4 + 4] = A[tx]  # error\n"
        ),
        "a lane can only write its own registers",
    ),
    "nonlinear_store_index": (
        _kernel("        W[tx * tx % 128] = A[tx]  # error\n"),
        "lower-warp-memory needs c * threadIdx.x + (an offset free of threadIdx.x)",
    ),
    "shuffle_at_a_lane_dependent_register": (
        _kernel(
            "        for j in range(4):\n"
            "            W[tx * 4 + j] = A[tx]\n"
            "        B[tx] = W[(tx + 1) % 32 * 4 + tx % 4]  # error\n"
        ),
        "at a register index (tx % 4) that depends on threadIdx.x",
    ),
    "mixed_layouts": (
        _kernel(
            "        for j in range(4):\n"
            "            W[tx * 4 + j] = A[tx]\n"
            "        for j in range(4):\n"
            "            W[j * 32 + tx] = A[tx]\n"
        ),
        "is written with threadIdx.x coefficients 1 and 4",
    ),
}


@pytest.mark.parametrize("name", sorted(REJECTED))
def test_rejected(name: str) -> None:
    text, message = REJECTED[name]
    with pytest.raises(DiagnosticError) as caught:
        run_passes(parse(text, name=name), "lower-warp-memory")
    (diagnostic,) = caught.value.diagnostics
    assert message in diagnostic.message, diagnostic.message
    marked = [n for n, line in enumerate(text.splitlines(), 1) if line.endswith(MARK)]
    line = marked[-1] if marked else 3  # else the allocation's
    assert diagnostic.span is not None and diagnostic.span.line == line


def test_registers_do_not_outlive_a_kernel() -> None:
    """The s-tir mma tile tensorizes each stage in its own threadIdx.x loop outside any kernel:
    lowered, those are five kernels, and warp registers cannot pass from one to the next."""
    path = TENSORIZE / "mma_tile.after.tir"
    with pytest.raises(DiagnosticError) as caught:
        lower_module(parse(path.read_text(), name=str(path)), target="cuda")
    (diagnostic,) = caught.value.diagnostics
    assert "warp memory 'A_warp' is used by 2 kernels" in diagnostic.message
    assert diagnostic.span is not None and diagnostic.span.line == 11
    assert [note.span.line for note in diagnostic.notes if note.span] == [21, 49]

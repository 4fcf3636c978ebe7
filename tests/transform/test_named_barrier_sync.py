"""thread-sync inside a warp-specialized split: the barriers the consumers need among
themselves, and the block barriers their code already had, are their named barrier
`bar.sync 1, <consumer threads>`; the producer branch gets none, and what would need one
there is refused, located, as is a split whose consumers are not whole warps.

- the golden pair (golden/thread_sync/warp_specialized) runs in the thread model and matches
  numpy, where its input races;
- the sample plan samples/gpu/gemm_wgmma_tensorize.named_barrier_ws.plan.json (the wgmma
  tensorize GEMM, whose wgmma intrinsic syncs the block, warp-specialized with a producer
  warpgroup) needs no barrier in its split at all: its consumers run the fast wgmma k loop
  (tests/transform/test_warp_specialize_wgmma.py), whose own waits on `full` order the
  producers' stores; it matches numpy in the thread model, and both backends' PTX assembles
  for sm_90a;
- each refusal comes through `tirc compile` at its line, exit status 1, no output.
"""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import numpy as np
import pytest

from tests.codegen_cuda.gpu_plans import GpuPlan, gpu_plans
from tests.codegen_cuda.helpers import ptxas_accepts
from tests.codegen_cuda.test_named_barrier import ptx_of_cuda
from tirc.cli.main import main
from tirc.codegen.cuda import emit_cuda
from tirc.codegen.nvptx import emit_ptx
from tirc.diagnostics import DiagnosticError
from tirc.interp import run
from tirc.ir import expr as E
from tirc.ir import stmt as S
from tirc.ir.functor import walk
from tirc.ir.node import Node
from tirc.text import parse

GOLDEN = Path(__file__).parent / "golden" / "thread_sync"


def _calls(node: Node, op: str) -> list[E.Call]:
    found: list[E.Call] = []
    walk(
        node,
        lambda item: found.append(item) if isinstance(item, E.Call) and item.op == op else None,
    )
    return found


def _split(node: Node) -> S.AttrStmt:
    found: list[S.AttrStmt] = []

    def look(item: Node) -> None:
        if isinstance(item, S.AttrStmt) and item.key == "warp_specialize_scope":
            found.append(item)

    walk(node, look)
    (split,) = found
    return split


def _run_golden(name: str) -> tuple[np.ndarray, np.ndarray]:
    path = GOLDEN / f"warp_specialized.{name}.tir"
    module = parse(path.read_text(), name=str(path))
    a = np.random.default_rng(4).standard_normal(256).astype("float32")
    b = np.zeros(256, "float32")
    run(module["main"], {"A": a, "B": b}, module=module, gpu_model="threads")
    return a, b


def test_the_golden_result_matches_numpy_where_its_input_races() -> None:
    a, b = _run_golden("after")
    want = a.reshape(4, 64)[:, ::-1].reshape(-1).copy()
    want[:64] += 1
    np.testing.assert_array_equal(b, want)
    with pytest.raises(DiagnosticError) as error:
        _run_golden("before")
    assert error.value.diagnostics[0].message.startswith("data race on shared memory 'S'")


# --- the sample plan


def _sample_plan() -> GpuPlan:
    (plan,) = [p for p in gpu_plans("gemm_wgmma_tensorize") if p.id.endswith("named_barrier_ws")]
    return plan


def test_the_sample_plans_split_needs_no_block_or_named_barrier() -> None:
    """The wgmma intrinsic's barrier went with the fast k loop; what is left are the warps'
    own (__syncwarp before each release)."""
    lowered = _sample_plan().lowered()
    split = _split(lowered)
    assert E.int_value(split.value) == 128
    scopes = {str(call.args[0]) for call in _calls(split, "tvm_storage_sync")}
    assert scopes == {str(E.StringImm("warp"))}
    assert not _calls(split, "ptx_bar_sync")


def test_the_sample_plan_matches_numpy_in_the_thread_model() -> None:
    plan = _sample_plan()
    m, n, k = (int(dict(plan.defines)[name]) for name in "MNK")
    rng = np.random.default_rng(3)
    a = rng.uniform(-1, 1, (m, k)).astype(np.float16)
    b = rng.uniform(-1, 1, (k, n)).astype(np.float16)
    args = {"A": a, "B": b, "C": np.full((m, n), np.nan, np.float32)}
    lowered = plan.lowered()
    run(lowered["main"], args, module=lowered, gpu_model="threads")
    np.testing.assert_allclose(
        args["C"], a.astype(np.float64) @ b.astype(np.float64), rtol=1e-4, atol=1e-4
    )


@pytest.mark.slow  # nvcc
def test_the_sample_plan_assembles_for_sm_90a(tmp_path: Path) -> None:
    lowered = _sample_plan().lowered()
    source = emit_cuda(lowered)
    assert '"bar.sync %0, %1;"' not in source  # no named barrier
    assert ptxas_accepts(ptx_of_cuda(source, "sm_90a", tmp_path), tmp_path, "sm_90a") == ""
    ptx = emit_ptx(lowered, arch="sm_90a")
    assert "bar.sync \t1" not in ptx
    assert ptxas_accepts(ptx, tmp_path, "sm_90a") == ""


# --- refusals, through the CLI

# a hand-written split of a block of 96 threads, 32 of them producers
SPLIT = """
@T.prim_func
def main(A: T.Buffer((64,), "float32"), B: T.Buffer((128,), "float32")):
    bx = T.launch_thread("blockIdx.x", 1)
    tx = T.launch_thread("threadIdx.x", 96)
    S = T.alloc_buffer((64,), "float32", scope="shared")
    P = T.alloc_buffer((32,), "float32", scope="shared")
    with T.attr(0, "warp_specialize_scope", 32):
        if tx >= 64:
            P[tx - 64] = A[tx - 64]
            PRODUCER
        else:
            S[tx] = A[tx]
            B[tx] = S[63 - tx]
"""


def _cli(*args: str) -> tuple[int, str]:
    output = io.StringIO()
    with contextlib.redirect_stdout(output), contextlib.redirect_stderr(output):
        code = main(list(args))
    return code, output.getvalue()


def _compile(text: str, directory: Path) -> tuple[int, str, Path, Path]:
    source, out = directory / "split.tir", directory / "split.cu"
    source.write_text(text)
    code, output = _cli(
        "compile", str(source), "--target", "cuda -arch=sm_90a", "--emit", "cu", "-o", str(out)
    )
    return code, output, source, out


def _line(text: str, marker: str) -> int:
    (line,) = [i for i, item in enumerate(text.splitlines(), 1) if marker in item]
    return line


def test_the_consumers_barrier_compiles_through_the_cli(tmp_path: Path) -> None:
    code, output, _, out = _compile(SPLIT.replace("PRODUCER", ""), tmp_path)
    assert code == 0, output
    assert 'asm volatile("bar.sync %0, %1;" :: "r"((int)(1)), "r"(64) : "memory");' in (
        out.read_text()
    )


def test_a_split_that_needs_no_barrier_is_not_refused(tmp_path: Path) -> None:
    """Consumers that are not whole warps, and a barrier 1 of the program's own, are refused
    only where the consumers need their barrier."""
    text = SPLIT.replace("PRODUCER", "T.ptx_bar_arrive(1, 96)").replace("S[63 - tx]", "A[tx]")
    text = text.replace('"warp_specialize_scope", 32', '"warp_specialize_scope", 48')
    code, output, _, out = _compile(text, tmp_path)
    assert code == 0, output
    assert "bar.sync" not in out.read_text()


@pytest.mark.parametrize(
    ("edit", "message", "marker"),
    [
        (
            ("PRODUCER", "B[64 + tx] = P[95 - tx]"),
            "needs a barrier after the shared memory accesses before it, in the producer "
            "branch of a warp-specialized split",
            "B[64 + tx] = P[95 - tx]",
        ),
        (
            ("PRODUCER", 'T.tvm_storage_sync("shared")'),
            "this block barrier is in the producer branch of a warp-specialized split",
            "T.tvm_storage_sync",
        ),
        (
            ('"warp_specialize_scope", 32', '"warp_specialize_scope", 48'),
            "the consumers of a warp-specialized split (96 threads but 48 producers) must be "
            "whole warps",
            "warp_specialize_scope",
        ),
        (
            ("PRODUCER", "T.ptx_bar_arrive(0, 32)"),
            "T.ptx_bar_arrive: barrier 0 is __syncthreads'",
            "T.ptx_bar_arrive",
        ),
        (
            ("PRODUCER", "T.ptx_bar_arrive(1, 96)"),
            "named barrier 1 is the consumers' barrier in a warp-specialized split (bar.sync 1, "
            "64): this use of it in the producer branch would mix with it",
            "T.ptx_bar_arrive",
        ),
        (
            (
                "            S[tx] = A[tx]",
                "            T.ptx_bar_sync(1, 32)\n            S[tx] = A[tx]",
            ),
            "this use of it with another count would mix with it",
            "T.ptx_bar_sync",
        ),
    ],
    ids=[
        "producer_needs_a_barrier",
        "producer_block_barrier",
        "partial_warps",
        "barrier_0",
        "producer_uses_barrier_1",
        "consumers_use_barrier_1_otherwise",
    ],
)
def test_refused_through_the_cli(
    edit: tuple[str, str], message: str, marker: str, tmp_path: Path
) -> None:
    text = SPLIT.replace(*edit).replace("PRODUCER", "")
    code, output, source, out = _compile(text, tmp_path)
    assert code == 1, output
    assert message in output
    assert f"{source}:{_line(text, marker)}:" in output
    assert not out.exists()

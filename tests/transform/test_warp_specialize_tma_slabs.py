"""TMA producer copies of several boxes (inject-warp-specialization with `software_pipeline_tma`
1, tirc/transform/passes/_tma_copy.py): a copy whose shared buffer is equal slabs, each a box
of the tensor, becomes one T.ptx_tma_load a slab, all counted in the iteration's
arrive_expect_tx.

- two 16 x 32 slabs of a 16 x 64 tile (golden inject_warp_specialization/tma_slabs) compute in
  the thread model what the producer threads' own copies compute, zero fill included, and
  slabs from columns apart (0..31, 48..79) load from their own corners;
- a tile past TMA's 256 elements a dimension (512 rows, or a row of 512) is two boxes;
- a tile of pieces of 5, 8 and 3 rows (no equal slabs that are boxes) is refused at the copy;
- the sample plan gemm_wgmma_tensorize_128x256 (two consumer warpgroups, B four 64 x 64 slabs,
  a 4-deep ring) loads what it should, matches numpy in the thread model and assembles for
  sm_90a without spills.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from tests.codegen_cuda.gpu_plans import GpuPlan, gpu_plans
from tests.transform.test_warp_specialize_tma import ROWS, STORE, TMA, _cli, _line_of, calls
from tirc.analysis.arith.analyzer import Analyzer
from tirc.driver.compile_cuda import cuda_artifact
from tirc.driver.lower import lower_module
from tirc.interp import run
from tirc.ir import expr as E
from tirc.ir.function import IRModule
from tirc.ir.structural import find_difference
from tirc.text import parse

GOLDEN = Path(__file__).parent / "golden" / "inject_warp_specialization"

# 64 threads copy R x 2W tiles of A into S, two R x W slabs (columns 0..W-1, then W..2W-1),
# rows past N as 0; the compute stage doubles each element into C
SLABS = """\
# from tvm.script import ir as I
# from tvm.script import tirx as T
N = 100
R = 16
W = 32

@I.ir_module
class Module:
    @T.prim_func(s_tir=True)
    def main(A: T.Buffer((N, 2 * W), "float16"), C: T.Buffer(((N + R - 1) // R * R, 2 * W), "float32")):
        for tx in T.thread_binding(64, thread="threadIdx.x"):
            for k in T.serial((N + R - 1) // R, annotations={ANNOTATIONS}):
                with T.sblock(""):
                    S = T.sblock_alloc_buffer((2, R, W), "float16", scope="shared")
                    for i in range(2 * R * W // 64):
                        with T.sblock("S"):
                            S[(i * 64 + tx) % (2 * W) // W, (i * 64 + tx) // (2 * W), (i * 64 + tx) % W] = T.if_then_else(k * R + (i * 64 + tx) // (2 * W) < N, A[k * R + (i * 64 + tx) // (2 * W), (i * 64 + tx) % (2 * W)], T.float16(0.0))
                    for i in range(2 * R * W // 64):
                        with T.sblock("C"):
                            C[k * R + (i * 64 + tx) // (2 * W), (i * 64 + tx) % (2 * W)] = T.Cast("float32", S[(i * 64 + tx) % (2 * W) // W, (i * 64 + tx) // (2 * W), (i * 64 + tx) % W]) * T.float32(2.0)
"""  # noqa: E501


def _doubled(module: IRModule, a: np.ndarray, rows: int) -> np.ndarray:
    lowered = lower_module(module, target="cuda")
    c = np.full((rows, a.shape[1]), np.nan, "float32")
    run(lowered["main"], {"A": a, "C": c}, module=lowered, gpu_model="threads")
    return c


def test_two_slabs_are_two_loads_that_compute_what_the_copy_did() -> None:
    """The last tile's rows 100..111 lie outside A: each slab's load fills them with zeros."""
    module = parse(SLABS.replace("ANNOTATIONS", TMA), name="slabs.tir")
    lowered = lower_module(module, target="cuda")
    loads = calls(lowered, "ptx_tma_load")
    assert [E.int_value(load.args[-1]) for load in loads] == [0, 32]  # the slabs' columns
    assert all([E.int_value(arg) for arg in load.args[5:7]] == [16, 32] for load in loads)
    (expect,) = calls(lowered, "ptx_mbarrier_arrive_expect_tx")
    assert E.int_value(expect.args[2]) == 2 * 16 * 32 * 2
    a = np.random.default_rng(11).standard_normal((100, 64)).astype("float16")
    loaded = _doubled(module, a, 112)
    want = np.zeros((112, 64), "float32")
    want[:100] = a.astype("float32") * 2
    np.testing.assert_array_equal(loaded, want)
    threads = TMA.replace('"software_pipeline_tma": 1, ', "")  # the producer threads copy
    copied = parse(SLABS.replace("ANNOTATIONS", threads), name="slabs.tir")
    np.testing.assert_array_equal(_doubled(copied, a, 112), loaded)


def test_slabs_read_from_any_constant_offsets() -> None:
    """S[1] from columns 48..79 of A, a gap after S[0]'s 0..31: each slab its own corner."""
    column = "(i * 64 + tx) % (2 * W)], T.float16"
    assert SLABS.count(column) == 1
    text = SLABS.replace(
        column, "(i * 64 + tx) % (2 * W) // W * 48 + (i * 64 + tx) % W], T.float16"
    )
    text = text.replace('A: T.Buffer((N, 2 * W), "float16")', 'A: T.Buffer((N, 80), "float16")')
    module = parse(text.replace("ANNOTATIONS", TMA), name="slabs.tir")
    lowered = lower_module(module, target="cuda")
    assert [E.int_value(load.args[-1]) for load in calls(lowered, "ptx_tma_load")] == [0, 48]
    a = np.random.default_rng(12).standard_normal((100, 80)).astype("float16")
    want = np.zeros((112, 64), "float32")
    want[:100, :32] = a[:, :32].astype("float32") * 2
    want[:100, 32:] = a[:, 48:].astype("float32") * 2
    c = np.full((112, 64), np.nan, "float32")
    run(lowered["main"], {"A": a, "C": c}, module=lowered, gpu_model="threads")
    np.testing.assert_array_equal(c, want)


def test_the_golden_is_the_slabs_program() -> None:
    """golden tma_slabs.before.tir is SLABS with its constants: the pair tests this pass's
    output, this file the program's meaning."""
    golden = parse((GOLDEN / "tma_slabs.before.tir").read_text(), name="tma_slabs.before.tir")
    module = parse(SLABS.replace("ANNOTATIONS", TMA), name="slabs.tir")
    assert find_difference(golden, module) is None


@pytest.mark.parametrize(
    ("rows", "width", "boxes"),
    [(512, 32, [256, 32]), (1, 512, [1, 256])],
    ids=["512_rows", "row_of_512"],
)
def test_a_tile_past_256_elements_a_dimension_is_two_boxes(
    rows: int, width: int, boxes: list[int]
) -> None:
    """What one box cannot hold (TMA boxes have at most 256 elements a dimension), two boxes
    of half the tile do, the second from the middle of the tile."""
    text = ROWS.replace("ANNOTATIONS", TMA)
    module = parse(
        text, name="rows.tir", defines={"N": str(2 * rows), "R": str(rows), "W": str(width)}
    )
    lowered = lower_module(module, target="cuda")
    first, second = calls(lowered, "ptx_tma_load")
    assert [E.int_value(arg) for arg in first.args[5:7]] == boxes
    assert [E.int_value(arg) for arg in second.args[5:7]] == boxes
    offset = Analyzer().simplify(E.Sub(second.args[8], first.args[8]))
    assert E.int_value(offset) == rows * width // 2
    a = np.random.default_rng(5).standard_normal((2 * rows, width)).astype("float16")
    c = np.full((2 * rows, width), np.nan, "float32")
    run(lowered["main"], {"A": a, "C": c}, module=lowered, gpu_model="threads")
    np.testing.assert_array_equal(c, a.astype("float32") * 2)


def test_pieces_of_uneven_rows_are_refused_at_the_copy(tmp_path: Path) -> None:
    """S's rows 0..4, 5..12 and 13..15 read A's rows 0..4, 8..15 and 19..21 of the tile: no box,
    and slabs of 64-byte rows start 128-byte aligned only two rows at a time, which pieces of 5
    and 3 rows do not make."""
    text = ROWS.replace("ANNOTATIONS", TMA)
    row = "k * R + (i * 64 + tx) // W"
    uneven = f"{row} + ((i * 64 + tx) // W + 3) // 8 * 3"
    lines = text.splitlines(keepends=True)
    (index,) = [n for n, line in enumerate(lines) if STORE in line]
    assert lines[index].count(row) == 2  # the bound and the index
    lines[index] = lines[index].replace(row, uneven)
    text = "".join(lines)
    source, out = tmp_path / "uneven.tir", tmp_path / "uneven.cu"
    source.write_text(text)
    code, output = _cli(
        "compile", str(source), "--target", "cuda -arch=sm_90a", "--emit", "cu", "-o", str(out)
    )
    assert code == 1, output
    assert (
        "this copy cannot be a TMA load: it is not a box: it reads 512 elements of 'A' spread "
        "over 22 x 32; nor is 'S' equal slabs that are each a TMA box of 'A'"
    ) in output
    assert f"{source}:{_line_of(text, STORE)}:" in output
    assert not out.exists()


# --- the sample plan


def _sample() -> GpuPlan:
    (plan,) = [p for p in gpu_plans("gemm_wgmma_tensorize_128x256") if "." not in p.id]
    return plan


def test_sample_loads_a_box_of_a_and_four_slabs_of_b() -> None:
    """At its test shape: A's copy, which both consumer warpgroups run alike, is one 128 x 64
    box; B's (4, 64, 64) tile four 64 x 64 boxes 64 columns apart; 128-byte swizzled, 48 KB
    an iteration; the block is the two consumer warpgroups and the producer's, whose
    registers setmaxnreg moves; 4 versions of 48 KB and the 8 mbarriers are dynamic shared."""
    lowered = _sample().lowered()
    loads = calls(lowered, "ptx_tma_load")
    assert [E.int_value(load.args[1]) for load in loads] == [2] * 5
    boxes = [[E.int_value(arg) for arg in load.args[5:7]] for load in loads]
    assert boxes == [[128, 64]] + [[64, 64]] * 4
    assert {E.int_value(load.args[2]) for load in loads} == {128}
    b_columns = [load.args[-1] for load in loads[1:]]
    simplify = Analyzer().simplify
    offsets = [E.int_value(simplify(E.Sub(column, b_columns[0]))) for column in b_columns]
    assert offsets == [0, 64, 128, 192]
    (expect,) = calls(lowered, "ptx_mbarrier_arrive_expect_tx")
    assert E.int_value(expect.args[2]) == (128 * 64 + 4 * 64 * 64) * 2
    text = str(cuda_artifact(lowered, "cu", arch="sm_90a"))
    assert "main_kernel_block(128, 3, 1)" in text
    # the consumers' k loop: wait full, one fenced group of 4 wgmmas, wait_group(1), release
    # the previous version; no barrier or proxy fence (the mbarrier wait acquires TMA's tiles)
    assert "bar.sync" not in text
    assert text.count("fence.proxy.async") == 1  # the mbarriers' initialization's
    for once in ("wgmma.fence", "wgmma.commit_group", "wgmma.wait_group.sync.aligned 1;"):
        assert text.count(once) == 1, once
    assert "setmaxnreg.dec.sync.aligned.u32 40;" in text
    assert "setmaxnreg.inc.sync.aligned.u32 232;" in text
    assert "cudaFuncAttributeMaxDynamicSharedMemorySize, (int)(196672LL)" in text
    assert "cp.async.cg" not in text


@pytest.mark.sweep  # the thread model's wgmma, element by element: about 70 s
def test_sample_matches_numpy_in_the_thread_model() -> None:
    """Five k tiles in the 4-deep ring: the producer waits for a version to be released."""
    plan = _sample()
    m, n, k = (int(dict(plan.defines)[name]) for name in "MNK")
    assert (m, n, k) == (128, 256, 320)
    lowered = plan.lowered()
    rng = np.random.default_rng(4)
    a = rng.uniform(-1, 1, (m, k)).astype(np.float16)
    b = rng.uniform(-1, 1, (k, n)).astype(np.float16)
    c = np.full((m, n), np.nan, np.float32)
    run(lowered["main"], {"A": a, "B": b, "C": c}, module=lowered, gpu_model="threads")
    np.testing.assert_allclose(c, a.astype(np.float64) @ b.astype(np.float64), atol=1e-4)


@pytest.mark.slow  # nvcc: about 5 s
def test_sample_assembles_for_sm_90a_without_spills(tmp_path: Path) -> None:
    """At the benchmark size (4096^3), CUDA C through nvcc and LLVM's PTX through ptxas."""
    nvcc, ptxas = shutil.which("nvcc"), shutil.which("ptxas")
    if nvcc is None or ptxas is None:
        pytest.skip("the CUDA toolkit (nvcc, ptxas) is not installed")
    plan = _sample()
    args = [str(plan.program), "--plan", str(plan.plan), "--target", "cuda -arch=sm_90a"]
    cu, ptx = tmp_path / "k.cu", tmp_path / "k.ptx"
    assert _cli("compile", *args, "--emit", "cu", "-o", str(cu))[0] == 0
    assert _cli("compile", *args, "--emit", "ptx", "--ptx-via", "llvm", "-o", str(ptx))[0] == 0
    for command in (
        [nvcc, "-arch=sm_90a", "-cubin", "-Xptxas", "-v", str(cu), "-o", str(tmp_path / "c")],
        [ptxas, "-arch=sm_90a", "-v", str(ptx), "-o", str(tmp_path / "p")],
    ):
        done = subprocess.run(command, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        assert "0 bytes spill stores, 0 bytes spill loads" in done.stderr

"""wgmma from tensorize over 128- and 64-byte-swizzled shared tiles (cuda_wgmma.tir's
`_swizzle{W}` intrinsics): the descriptors the intrinsics build address, under the PTX ISA's
swizzled canonical layouts, exactly the elements that TMA's swizzle (tirc.ir.tma) and
inject-permuted-layout put there, worked by hand on small cases and then for every element;
the sample plan gemm_wgmma_tensorize.swizzle128 (and its 64-byte sibling) computes A x B in the
thread model; and the located refusals where the tile's layout is not the descriptor's."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from tirc.analysis.arith import Analyzer
from tirc.codegen.cuda import emit_cuda
from tirc.diagnostics import DiagnosticError
from tirc.driver.compile_cuda import cuda_artifact
from tirc.driver.lower import lower_module
from tirc.interp import run
from tirc.ir import expr as E
from tirc.ir.function import IRModule
from tirc.ir.functor import walk
from tirc.ir.substitute import substitute
from tirc.ir.tma import swizzled_byte
from tirc.ir.wgmma import A_POINTER, B_POINTER, operand_element
from tirc.schedule.apply import apply_plan
from tirc.schedule.intrinsics import builtin_intrinsics
from tirc.schedule.plan import read_plan
from tirc.text import parse

SAMPLES = Path(__file__).parents[2] / "samples" / "gpu"
PROGRAM = SAMPLES / "gemm_wgmma_tensorize.tir"
PLAN = SAMPLES / "gemm_wgmma_tensorize.swizzle128.plan.json"


def test_swizzled_addressing_by_hand() -> None:
    """Single elements worked out from the PTX ISA's K-major and MN-major swizzled layouts
    (descriptor start, SBO between 8-row groups, LBO between MN slabs, then the 16-byte chunk
    bits XORed with the 128-byte line number's low bits) against the tile as TMA writes it."""
    # A, 128 B: element (m 9, k 5) of the second k16 step (start 32 bytes) is tile (9, 21):
    # byte 32 + 1 * 128 + 1 * 1024 + 10 = 1194, line 9: chunk 2 -> 2 ^ 1 = 3 -> byte 1210
    assert operand_element(32, 9, 5, lbo=16, sbo=1024, width=128, mn_major=False) == 605
    assert 9 * 64 + (2 ^ 1) * 8 + 5 == 605  # the tile's row 9, chunk 21 // 8 = 2 moved to 3
    # B, 128 B, MN-major: (n 70, k 3) of the third step (start 2 * 16 rows * 128 B = 4096) is
    # slab 1, row 35, column 6: 4096 + 6 * 2 + 8192 + 3 * 128 = 12684, line 99: chunk 0 ^ 3
    assert operand_element(4096, 70, 3, lbo=8192, sbo=1024, width=128, mn_major=True) == 6366
    assert 4096 + 35 * 64 + (0 ^ 3) * 8 + 6 == 6366
    # A, 64 B (rows of 32 halves): (m 5, k 9) of the second step is tile (5, 25): byte 32 +
    # 5 * 64 + 18 = 370, line 2: chunk 3 -> 3 ^ 2 = 1 -> byte 338
    assert operand_element(32, 5, 9, lbo=16, sbo=512, width=64, mn_major=False) == 169
    assert 5 * 32 + (3 ^ (5 % 8 // 2)) * 8 + 1 == 169
    # TMA's definition of the same places (tirc.ir.tma.swizzled_byte, CUTLASS's Swizzle<3,4,3>)
    assert swizzled_byte((9 * 64 + 21) * 2, 128) // 2 == 605
    assert swizzled_byte((5 * 32 + 25) * 2, 64) // 2 == 169


def _descriptor_arguments(
    name: str, strides: dict[str, tuple[int, ...]], offsets: dict[str, int]
) -> dict[str, tuple[int, ...]]:
    """The constant (start element, LBO, SBO, swizzle, trans) of A and B that the library
    intrinsic `name`'s impl passes to T.ptx_wgmma, its buffers given strides and offsets."""
    impl = builtin_intrinsics()[name].impl
    buffers = {buffer.name: buffer for _, buffer in impl.buffer_map}
    mapping: dict[E.Var, E.PrimExpr] = {}
    for key in ("A", "B"):
        buffer = buffers[key]
        for var, stride in zip(buffer.strides, strides[key], strict=True):
            assert isinstance(var, E.Var)
            mapping[var] = E.IntImm(stride, var.dtype)
        assert isinstance(buffer.elem_offset, E.Var)
        mapping[buffer.elem_offset] = E.IntImm(offsets[key], buffer.elem_offset.dtype)
    calls: list[E.Call] = []
    walk(impl.body, lambda node: _collect_wgmma(node, calls))
    (call,) = calls
    analyzer = Analyzer()

    def value(expr: object) -> int:
        assert isinstance(expr, E.PrimExpr)
        folded = analyzer.simplify(substitute(expr, mapping))
        assert isinstance(folded, E.IntImm), folded
        return folded.value

    found = {}
    for key, first in (("A", A_POINTER), ("B", B_POINTER)):
        pointer = call.args[first]
        assert isinstance(pointer, E.Call) and pointer.op == "tvm_access_ptr"
        start = value(pointer.args[2]) + value(call.args[first + 1])
        found[key] = (start, *(value(call.args[first + i]) for i in range(2, 6)))
    return found


def _collect_wgmma(node: object, calls: list[E.Call]) -> None:
    if isinstance(node, E.Call) and node.op == "ptx_wgmma":
        calls.append(node)


@pytest.mark.parametrize(("width", "n"), [(128, 128), (128, 64), (64, 128), (64, 256)])
def test_descriptors_read_the_tma_swizzled_tiles(width: int, n: int) -> None:
    """Every element (m, k) of A and (k, n) of B, for each k16 step of a K tile of R = W / 2
    (the tile's row), read through the intrinsic's descriptors in the PTX layout, is the
    element TMA's W-byte swizzle stores there: A a row-major (64, R) box, B N / R row-major
    (R, R) boxes of (k, n)."""
    rows = width // 2
    b_slab = rows * rows  # one (k, n) box of B
    for step in range(rows // 16):
        arguments = _descriptor_arguments(
            f"wgmma_m64n{n}k16_f16f32_swizzle{width}",
            {"A": (rows, 1), "B": (b_slab, rows, 1)},
            {"A": step * 16, "B": step * 16 * rows},
        )
        (a_start, a_lbo, a_sbo, a_width, a_trans) = arguments["A"]
        (b_start, b_lbo, b_sbo, b_width, b_trans) = arguments["B"]
        assert (a_width, a_trans, b_width, b_trans) == (width, 0, width, 1)
        assert (a_sbo, b_sbo, b_lbo) == (8 * rows * 2, 8 * rows * 2, b_slab * 2)
        for m in range(64):
            for k in range(16):
                got = operand_element(
                    a_start * 2, m, k, lbo=a_lbo, sbo=a_sbo, width=width, mn_major=False
                )
                assert got == swizzled_byte((m * rows + step * 16 + k) * 2, width) // 2
        for column in range(n):
            slab, inner = divmod(column, rows)
            for k in range(16):
                got = operand_element(
                    b_start * 2, column, k, lbo=b_lbo, sbo=b_sbo, width=width, mn_major=True
                )
                box = slab * b_slab + (step * 16 + k) * rows + inner
                assert got == swizzled_byte(box * 2, width) // 2


def _plan(width: int = 128, dtype: str = "f16") -> dict:
    """The sample plan, or its 64-byte sibling (K tile 32, B in slabs of 32 columns)."""
    plan = json.loads(PLAN.read_text())
    rows = width // 2
    for step in plan["steps"]:
        if step["op"] == "split" and step["loop"] == "k":
            step["factors"] = [None, rows // 16, 16]
        elif step["op"] == "transform_layout" and step["block"] == "B_shared":
            step["index_map"] = f"lambda k, j: (k // {rows}, j // {rows}, k % {rows}, j % {rows})"
        elif step["op"] == "tensorize" and "k16" in step["intrin"]:
            step["intrin"] = f"wgmma_m64n128k16_{dtype}f32_swizzle{width}"
    return plan


def _program(shape: tuple[int, int, int], dtype: str = "float16") -> IRModule:
    text = PROGRAM.read_text().replace('"float16"', f'"{dtype}"')
    defines = dict(zip("MNK", map(str, shape), strict=True))
    return parse(text, name=str(PROGRAM), defines=defines)


def _lowered(plan: dict, shape: tuple[int, int, int], dtype: str = "float16") -> IRModule:
    scheduled, _ = apply_plan(_program(shape, dtype), read_plan(json.dumps(plan)), {})
    return lower_module(scheduled, target="cuda")


@pytest.mark.parametrize(
    ("width", "ab", "shape"),
    [
        # 2 x 2 blocks, two k tiles of 64 (about 20 s): make test-sweep
        pytest.param(128, "f16", (128, 256, 128), marks=pytest.mark.sweep),
        (64, "f16", (64, 128, 96)),  # three k tiles of 32
        (128, "bf16", (64, 128, 128)),
    ],
)
def test_the_plan_matches_numpy_in_the_thread_model(
    width: int, ab: str, shape: tuple[int, int, int]
) -> None:
    dtype, element = {"f16": ("float16", np.float16), "bf16": ("bfloat16", ml_dtypes.bfloat16)}[ab]
    lowered = _lowered(_plan(width, ab), shape, dtype)
    source = emit_cuda(lowered)
    assert f"{1 if width == 128 else 2}ULL << 62" in source  # the descriptors' swizzle mode
    assert "__shared__ __align__(1024)" in source  # the swizzle is a function of the address
    m, n, k = shape
    rng = np.random.default_rng(width)
    a = rng.uniform(-1, 1, (m, k)).astype(element)
    b = rng.uniform(-1, 1, (k, n)).astype(element)
    c = np.zeros((m, n), np.float32)
    run(lowered["main"], {"A": a, "B": b, "C": c}, module=lowered, gpu_model="threads")
    np.testing.assert_allclose(c, a.astype(np.float64) @ b.astype(np.float64), atol=1e-5)


def test_the_copies_store_the_swizzle() -> None:
    """The tiles' cp.async destinations carry the permutation (chunk ^ row % 8) and the
    wgmmas read 8-row groups 1024 bytes apart, B's 64-column slabs 8192 bytes apart."""
    text = emit_cuda(_lowered(_plan(), (64, 128, 128)))
    assert text.count("cp.async.cg.shared.global") == 4  # A and B, prologue and loop
    assert "((unsigned long long)((1024) & 0x3FFFF) >> 4) << 32" in text  # SBO
    assert "((unsigned long long)((8192) & 0x3FFFF) >> 4) << 16" in text  # B's LBO
    assert text.count(" ^ ") >= 2


def _without_annotations(plan: dict) -> dict:
    steps = [step for step in plan["steps"] if step.get("key") != "permuted_layout"]
    return dict(plan, steps=steps)


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (
            _without_annotations,
            "a wgmma reads shared buffer A_shared with the 128-byte swizzle, but its stores "
            "are not permuted",
        ),
        (  # A's rows of 64 halves (K tile 64) read through 64-byte swizzle descriptors
            lambda plan: _replace_intrin(
                _replace_layout(plan, "lambda k, j: (k // 64, j // 32, k % 64, j % 32)"),
                "swizzle64",
            ),
            "shared buffer A_shared is permuted for rows of 64 elements, which a wgmma reads "
            "with the 128-byte swizzle, but this wgmma's descriptor says 64 bytes",
        ),
    ],
    ids=["not permuted", "other swizzle"],
)
def test_a_tile_the_descriptor_misreads_is_refused_at_the_wgmma(
    edit: Callable[[dict], dict], message: str
) -> None:
    with pytest.raises(DiagnosticError) as error:
        _lowered(edit(_plan()), (64, 128, 128))
    assert message in str(error.value)
    (diagnostic,) = error.value.diagnostics
    assert diagnostic.span is not None  # the intrinsic's T.ptx_wgmma, as tensorize placed it


def _replace_layout(plan: dict, index_map: str) -> dict:
    for step in plan["steps"]:
        if step["op"] == "transform_layout" and step["block"] == "B_shared":
            step["index_map"] = index_map
    return plan


def _replace_intrin(plan: dict, suffix: str) -> dict:
    for step in plan["steps"]:
        if step["op"] == "tensorize" and "k16" in step["intrin"]:
            step["intrin"] = step["intrin"].replace("swizzle128", suffix)
    return plan


def test_rows_no_swizzle_reads_are_refused() -> None:
    """A K tile of 128 makes rows of 128 halves, whose permutation no wgmma swizzle reads."""
    plan = _plan()
    for step in plan["steps"]:
        if step["op"] == "split" and step["loop"] == "k":
            step["factors"] = [None, 8, 16]
    with pytest.raises(DiagnosticError) as error:
        _lowered(plan, (64, 128, 256))
    assert "is permuted for rows of 128 elements, which no wgmma swizzle reads" in str(error.value)


@pytest.mark.parametrize(
    ("plan", "shared"),
    [  # two stages of A (64 x 64) and B (64 x 128) in 48 KB; the TMA ring is dynamic shared
        ("gemm_wgmma_tensorize.swizzle128", "49152 bytes smem"),
        # the __syncthreads after the mbarriers' initialization only: no consumer barrier
        ("gemm_wgmma_tensorize.swizzle128_tma", "used 1 barriers"),
    ],
)
def test_nvcc_accepts_it_for_sm_90a_without_spills(plan: str, shared: str, tmp_path: Path) -> None:
    """At the benchmark size (4096^3): ptxas's registers and spills for sm_90a."""
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        pytest.skip("nvcc is not installed")
    steps = json.loads((SAMPLES / f"{plan}.plan.json").read_text())
    module = _lowered(steps, (4096, 4096, 4096))
    (tmp_path / "k.cu").write_text(str(cuda_artifact(module, "cu", arch="sm_90a")))
    command = [nvcc, "-arch=sm_90a", "-cubin", "-Xptxas", "-v", str(tmp_path / "k.cu")]
    command += ["-o", str(tmp_path / "k.cubin")]
    done = subprocess.run(command, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "0 bytes spill stores, 0 bytes spill loads" in done.stderr
    assert shared in done.stderr


def test_the_tma_plan_feeds_the_swizzled_tiles_by_tma() -> None:
    """gemm_wgmma_tensorize.swizzle128_tma: the same layout (64 x 64 block tiles: A and B one
    64 x 64 box each) loaded by a producer warpgroup's TMA with the 128-byte swizzle that
    inject-permuted-layout gave the copies, in a 3-deep ring, the consumer warpgroup's wgmmas
    reading it through the same descriptors; the thread model against numpy (three k tiles:
    every stage of the ring), and in the CUDA C the tensor maps, no consumer barrier, one k
    tile's wgmmas left in flight, and the dynamic shared memory."""
    path = SAMPLES / "gemm_wgmma_tensorize.swizzle128_tma.plan.json"
    lowered = _lowered(json.loads(path.read_text()), (64, 128, 192))
    text = str(cuda_artifact(lowered, "cu", arch="sm_90a"))
    assert text.count("cp.async.bulk.tensor.2d.shared::cluster.global") == 2  # A's box, B's
    assert text.count("tirc_box, 128);") == 2  # both tensor maps 128-byte swizzled
    assert text.count("tirc_box[2] = {64, 64}") == 2
    assert "cp.async.cg" not in text  # no copy left to the consumers
    assert "bar.sync" not in text  # the mbarrier wait acquires TMA's tiles for each consumer
    assert "wgmma.wait_group.sync.aligned 1;" in text  # one k tile's group stays in flight
    assert "main_kernel_block(128, 2, 1)" in text  # the consumer warpgroup, the producer's
    # 3 stages of A and B (64 x 64 halves each), 1024-aligned, then the 6 mbarriers
    assert "cudaFuncAttributeMaxDynamicSharedMemorySize, (int)(49216LL)" in text
    rng = np.random.default_rng(3)
    a = rng.uniform(-1, 1, (64, 192)).astype(np.float16)
    b = rng.uniform(-1, 1, (192, 128)).astype(np.float16)
    c = np.zeros((64, 128), np.float32)
    run(lowered["main"], {"A": a, "B": b, "C": c}, module=lowered, gpu_model="threads")
    np.testing.assert_allclose(c, a.astype(np.float64) @ b.astype(np.float64), atol=1e-5)

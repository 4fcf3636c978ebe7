"""A TMA producer from a plan (inject-warp-specialization with `software_pipeline_tma` 1): the
stage-0 copies of a warp-specialized loop become TMA loads that one producer thread issues,
each counted on the ring's `full` barrier with arrive_expect_tx.

- a copy under the global buffer's bounds computes, through TMA's zero fill, what the copy
  did, in the thread model (and what the producer threads' own copies compute, bit for bit);
- the sample plan (samples/gpu/gemm_wgmma_tensorize.mma_ws_tma.plan.json: inject-permuted-
  layout's tiles, which TMA writes with its 64 and 128-byte swizzles) matches numpy in the
  thread model, goes through `tirc run --target cuda` on the fake driver (the maps the
  launcher encodes) and through `tirc compile --emit ptx` into ptxas for sm_90a;
- every copy the pass cannot load with TMA, and every architecture before sm_90, is refused
  through the CLI at its line, exit 1, with no output file.
The pass's before/after pairs are goldens (golden/inject_warp_specialization/tma*.tir).
"""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import numpy as np
import pytest

from tests.codegen_cuda.gpu_plans import GpuPlan, gpu_plans
from tests.codegen_cuda.helpers import nvcc_accepts, ptxas_accepts
from tests.codegen_cuda.test_tma import _nvcc_ptx
from tests.runtime.fake_cuda import CUtensorMapSwizzle, FakeDriver
from tirc.cli.main import main
from tirc.codegen.cuda import emit_cuda
from tirc.diagnostics import DiagnosticError
from tirc.driver import run_cuda
from tirc.driver.lower import lower_module
from tirc.interp import run
from tirc.ir import expr as E
from tirc.ir import stmt as S
from tirc.ir.function import IRModule
from tirc.ir.functor import walk
from tirc.ir.node import Node
from tirc.runtime.cuda_driver import Device
from tirc.schedule.apply import apply_plan
from tirc.schedule.plan import read_plan
from tirc.text import parse

# 64 threads copy R x W tiles of A (N x W) into shared memory, rows past N as 0; the compute
# stage doubles each element into C. One producer warp (32 threads) loads the tiles with TMA.
ROWS = """\
# from tvm.script import ir as I
# from tvm.script import tirx as T
N = 100
R = 16
W = 32

@I.ir_module
class Module:
    @T.prim_func(s_tir=True)
    def main(A: T.Buffer((N, W), "float16"), C: T.Buffer(((N + R - 1) // R * R, W), "float32")):
        for tx in T.thread_binding(64, thread="threadIdx.x"):
            for k in T.serial((N + R - 1) // R, annotations={ANNOTATIONS}):
                with T.sblock(""):
                    S = T.sblock_alloc_buffer((R, W), "float16", scope="shared")
                    for i in range(R * W // 64):
                        with T.sblock("S"):
                            S[(i * 64 + tx) // W, (i * 64 + tx) % W] = T.if_then_else(k * R + (i * 64 + tx) // W < N, A[k * R + (i * 64 + tx) // W, (i * 64 + tx) % W], T.float16(0.0))
                    for i in range(R * W // 64):
                        with T.sblock("C"):
                            C[k * R + (i * 64 + tx) // W, (i * 64 + tx) % W] = T.Cast("float32", S[(i * 64 + tx) // W, (i * 64 + tx) % W]) * T.float32(2.0)
"""  # noqa: E501
TMA = (
    '"software_pipeline_stage": [0, 1], "software_pipeline_tma": 1, '
    '"software_pipeline_warp_specialize": 32'
)
STORE = "S[(i * 64 + tx) // W, (i * 64 + tx) % W] = "
LOOP = "for k in T.serial("


def rows(annotations: str = TMA) -> IRModule:
    return parse(ROWS.replace("ANNOTATIONS", annotations), name="rows.tir")


def calls(node: Node, op: str) -> list[E.Call]:
    found: list[E.Call] = []
    walk(
        node,
        lambda item: found.append(item) if isinstance(item, E.Call) and item.op == op else None,
    )
    return found


def _doubled(module: IRModule, a: np.ndarray) -> np.ndarray:
    lowered = lower_module(module, target="cuda")
    c = np.full(((a.shape[0] + 15) // 16 * 16, a.shape[1]), np.nan, "float32")
    run(lowered["main"], {"A": a, "C": c}, module=lowered, gpu_model="threads")
    return c


def _inputs() -> tuple[np.ndarray, np.ndarray]:
    """A (100 x 32), and C as it should come out: 2 A, then zeros to 112 rows."""
    a = np.random.default_rng(7).standard_normal((100, 32)).astype("float16")
    want = np.zeros((112, 32), "float32")
    want[:100] = a.astype("float32") * 2
    return a, want


def test_the_bounds_condition_is_the_zero_fill() -> None:
    """The last tile's rows 100..111 lie outside A: TMA fills them with zeros, as the copy's
    T.if_then_else did; the same result as the producer threads' own copies, bit for bit."""
    a, want = _inputs()
    loaded = _doubled(rows(), a)
    np.testing.assert_array_equal(loaded, want)
    copied = _doubled(rows(TMA.replace('"software_pipeline_tma": 1, ', "")), a)
    np.testing.assert_array_equal(copied, loaded)


GUARDED = "T.if_then_else(k * R + (i * 64 + tx) // W < N, A[k * R + (i * 64 + tx) // W, (i * 64 + tx) % W], T.float16(0.0))"  # noqa: E501
PLAIN = "A[k * R + (i * 64 + tx) // W, (i * 64 + tx) % W]"


def test_a_block_predicate_on_the_bounds_is_the_zero_fill() -> None:
    """`T.where(row < N)`: the copy stores nothing past A, where TMA writes zeros."""
    where = "T.where(k * R + (i * 64 + tx) // W < N)\n" + " " * 28 + STORE + PLAIN
    assert STORE + GUARDED in ROWS
    text = ROWS.replace("ANNOTATIONS", TMA).replace(STORE + GUARDED, where)
    a, want = _inputs()
    np.testing.assert_array_equal(_doubled(parse(text, name="rows.tir"), a), want)


def test_a_condition_on_the_threads_says_which_of_them_store() -> None:
    """Nine rounds of 64 threads for 512 elements, the last round's half idle (what a split
    that does not divide leaves): the stores still fill the tile once."""
    rounds = "for i in range(R * W // 64):"
    assert ROWS.count(rounds) == 2  # the copy's, then the compute's
    text = ROWS.replace("ANNOTATIONS", TMA).replace(rounds, rounds[:-2] + " + 1):", 1)
    text = text.replace(STORE, "T.where(i * 64 + tx < R * W)\n" + " " * 28 + STORE)
    a, want = _inputs()
    np.testing.assert_array_equal(_doubled(parse(text, name="rows.tir"), a), want)


def test_a_box_of_a_three_dimensional_tensor() -> None:
    """Rows of A[1]: a 1 x 16 x 32 box at corner (1, 16 k, 0), its bounds on the middle axis."""
    text = ROWS.replace("ANNOTATIONS", TMA).replace("A[k * R", "A[1, k * R")
    text = text.replace('A: T.Buffer((N, W), "float16")', 'A: T.Buffer((3, N, W), "float16")')
    lowered = lower_module(parse(text, name="rows3.tir"), target="cuda")
    (load,) = calls(lowered, "ptx_tma_load")
    # rank, swizzle, box
    assert [E.int_value(arg) for arg in load.args[1:3] + load.args[6:9]] == [3, 0, 1, 16, 32]
    a = np.random.default_rng(8).standard_normal((3, 100, 32)).astype("float16")
    c = np.full((112, 32), np.nan, "float32")
    run(lowered["main"], {"A": a, "C": c}, module=lowered, gpu_model="threads")
    np.testing.assert_array_equal(c[:100], a[1].astype("float32") * 2)
    np.testing.assert_array_equal(c[100:], 0)


def test_one_thread_issues_the_loads() -> None:
    lowered = lower_module(rows(), target="cuda")
    (load,) = calls(lowered, "ptx_tma_load")
    box = [E.int_value(arg) for arg in load.args[5:7]]
    assert box == [16, 32] and E.int_value(load.args[2]) == 0  # no swizzle
    (expect,) = calls(lowered, "ptx_mbarrier_arrive_expect_tx")
    assert E.int_value(expect.args[2]) == 16 * 32 * 2
    inits = sorted(E.int_value(call.args[2]) for call in calls(lowered, "ptx_mbarrier_init"))
    assert inits == [1, 64]  # full: the issuing thread's one arrival; empty: the consumers
    assert not calls(lowered, "ptx_mbarrier_arrive_cp_async")


# --- the sample plan


def _sample_plan() -> GpuPlan:
    (plan,) = [p for p in gpu_plans("gemm_wgmma_tensorize") if p.id.endswith("mma_ws_tma")]
    return plan


def test_sample_plan_matches_numpy_in_the_thread_model() -> None:
    plan = _sample_plan()
    lowered = plan.lowered()
    swizzles = sorted(E.int_value(call.args[2]) for call in calls(lowered, "ptx_tma_load"))
    assert swizzles == [64, 128]  # A's rows of 32 halves, B's of 64: the permuted layouts
    m, n, k = (int(dict(plan.defines)[name]) for name in "MNK")
    rng = np.random.default_rng(3)
    a = rng.uniform(-1, 1, (m, k)).astype(np.float16)
    b = rng.uniform(-1, 1, (k, n)).astype(np.float16)
    args: dict[str, np.ndarray] = {"A": a, "B": b, "C": np.full((m, n), np.nan, np.float32)}
    run(lowered["main"], args, module=lowered, gpu_model="threads")
    want = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(args["C"], want, rtol=1e-4, atol=1e-4)


def test_a_producer_warpgroup_moves_its_registers_to_the_consumers() -> None:
    """128 producer threads with setmaxnreg: all of them lower their count, one issues."""
    plan = _sample_plan()
    steps = json.loads(plan.plan.read_text())
    for step in steps["steps"]:
        if step.get("key") == "software_pipeline_warp_specialize":
            step["value"] = 128
    steps["steps"].append(
        {
            "op": "annotate",
            "target": "uk0",
            "key": "software_pipeline_max_registers",
            "value": [40, 232],
        }
    )
    module = parse(plan.program.read_text(), name=str(plan.program), defines=dict(plan.defines))
    scheduled, _ = apply_plan(module, read_plan(json.dumps(steps)))
    lowered = lower_module(scheduled, target="cuda")
    (split,) = [s for s in _attrs(lowered) if s.key == "warp_specialize_scope"]
    body = split.body
    (branches,) = [s for s in getattr(body, "stmts", (body,)) if isinstance(s, S.IfThenElse)]
    producer = branches.then_case
    assert isinstance(producer, S.SeqStmt)  # setmaxnreg.dec, then the issuing thread's loop
    (decrease,) = calls(producer.stmts[0], "ptx_setmaxnreg")
    assert E.int_value(decrease.args[1]) == 40
    issuer = producer.stmts[-1]
    assert isinstance(issuer, S.IfThenElse) and len(calls(issuer, "ptx_tma_load")) == 2
    source = emit_cuda(lowered)
    assert "__launch_bounds__(256, 1)" in source
    assert "setmaxnreg.dec.sync.aligned.u32 40;" in source
    assert "setmaxnreg.inc.sync.aligned.u32 232;" in source


def _attrs(node: Node) -> list[S.AttrStmt]:
    found: list[S.AttrStmt] = []
    walk(node, lambda item: found.append(item) if isinstance(item, S.AttrStmt) else None)
    return found


def _cli(*args: str) -> tuple[int, str]:
    output = io.StringIO()
    with contextlib.redirect_stdout(output), contextlib.redirect_stderr(output):
        code = main(list(args))
    return code, output.getvalue()


def _sample_args() -> list[str]:
    plan = _sample_plan()
    args = [str(plan.program), "--plan", str(plan.plan), "--target", "cuda -arch=sm_90a"]
    for name, value in plan.defines:
        args += ["-D", f"{name}={value}"]
    return args


def test_tirc_run_on_the_fake_gpu(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """gpu_check's hopper step's command up to the launch (the fake driver runs no kernel,
    so without --check): A's and B's maps with their boxes and swizzles, 160 threads."""
    driver = FakeDriver()
    monkeypatch.setattr(run_cuda, "module_image", _nvcc_ptx(tmp_path))
    monkeypatch.setattr(run_cuda, "Device", lambda: Device(driver, load_ptx=True))
    code, output = _cli("run", *_sample_args())
    assert code == 0, output
    maps = [(made.box, made.swizzle) for made in driver.tensor_maps]
    assert maps == [
        ((32, 64), CUtensorMapSwizzle.CU_TENSOR_MAP_SWIZZLE_64B),  # innermost first
        ((64, 32), CUtensorMapSwizzle.CU_TENSOR_MAP_SWIZZLE_128B),
    ]
    (launch,) = driver.launches
    assert launch.block == (32, 5, 1)  # 4 consumer warps and the producer warp


@pytest.mark.slow  # nvcc: about 5 s
def test_sample_assembles_for_sm_90a(tmp_path: Path) -> None:
    """The PTX `tirc compile --emit ptx` writes (NVRTC's, else LLVM's) through ptxas, and the
    CUDA C through nvcc."""
    out = tmp_path / "gemm.ptx"
    code, output = _cli("compile", *_sample_args(), "--emit", "ptx", "-o", str(out))
    assert code == 0, output
    ptx = out.read_text()
    assert "cp.async.bulk.tensor.2d" in ptx and "mbarrier.arrive.expect_tx" in ptx
    assert ptxas_accepts(ptx, tmp_path, arch="sm_90a") == ""
    cu = tmp_path / "gemm.cu"
    code, output = _cli("compile", *_sample_args(), "--emit", "cu", "-o", str(cu))
    assert code == 0, output
    assert nvcc_accepts(cu.read_text(), tmp_path, "sm_90a") == ""


def test_rows_ptx_assembles_for_sm_90a(tmp_path: Path) -> None:
    source = tmp_path / "rows.tir"
    source.write_text(ROWS.replace("ANNOTATIONS", TMA))
    out = tmp_path / "rows.ptx"
    code, output = _cli(
        "compile", str(source), "--target", "cuda -arch=sm_90a", "--emit", "ptx", "-o", str(out)
    )
    assert code == 0, output
    assert ptxas_accepts(out.read_text(), tmp_path, arch="sm_90a") == ""


# --- refusals through the CLI: exit 1, the message at its line, nothing written


def _line_of(text: str, marker: str) -> int:
    (line,) = [i for i, item in enumerate(text.splitlines(), 1) if marker in item]
    return line


STRIDED = ('"float16"), C', '"float16", strides=(W + 8, 1)), C')
# every other column of a twice as wide A: 512 elements spread over a 16 x 63 box
GAPS = ("(i * 64 + tx) % W], T.float16", "(i * 64 + tx) % W * 2], T.float16")


@pytest.mark.parametrize(
    ("edit", "defines", "arch", "message", "marker"),
    [
        ((), (), "sm_80", "needs sm_90 or later, but the target architecture is sm_80", LOOP),
        ((), (), "sm_89", "needs sm_90 or later, but the target architecture is sm_89", LOOP),
        (
            (STRIDED,),
            (),
            "sm_90a",
            "this copy cannot be a TMA load: 'A' has strides: a TMA load reads a dense",
            STORE,
        ),
        (
            (GAPS, ('T.Buffer((N, W), "float16")', 'T.Buffer((N, W * 2), "float16")')),
            (),
            "sm_90a",
            "it is not a box: it reads 512 elements of 'A' spread over 16 x 63",
            STORE,
        ),
        (
            (),
            ("R=1", "W=512"),
            "sm_90a",
            "its box is 1 x 512: a TMA box has at most 256 elements along each dimension",
            STORE,
        ),
        (
            (("// W < N, A", "// W < N - 1, A"),),
            (),
            "sm_90a",
            "its condition is not the bounds of 'A'",
            STORE,
        ),
    ],
    ids=["sm_80", "sm_89", "strided", "not_a_box", "box_over_256", "not_the_bounds"],
)
def test_refused_through_the_cli(
    edit: tuple[tuple[str, str], ...],
    defines: tuple[str, ...],
    arch: str,
    message: str,
    marker: str,
    tmp_path: Path,
) -> None:
    text = ROWS.replace("ANNOTATIONS", TMA)
    for old, new in edit:
        assert old in text
        text = text.replace(old, new)
    source, out = tmp_path / "rows.tir", tmp_path / "rows.cu"
    source.write_text(text)
    args = ["compile", str(source), "--target", f"cuda -arch={arch}", "--emit", "cu"]
    for define in defines:
        args += ["-D", define]
    code, output = _cli(*args, "-o", str(out))
    assert code == 1, output
    assert message in output
    assert f"{source}:{_line_of(text, marker)}:" in output
    assert not out.exists()


# --- refusals in the pass


def _refused(module: IRModule) -> DiagnosticError:
    with pytest.raises(DiagnosticError) as error:
        lower_module(module, target="cuda")
    return error.value


@pytest.mark.parametrize(
    ("annotations", "message"),
    [
        (
            TMA.replace('"software_pipeline_tma": 1', '"software_pipeline_tma": 2'),
            "1 (TMA loads) or 0",
        ),
        (
            TMA + ', "software_pipeline_async_stages": [0]',
            "'software_pipeline_tma' and 'software_pipeline_async_stages'",
        ),
    ],
)
def test_bad_annotations_are_refused_at_the_loop(annotations: str, message: str) -> None:
    error = _refused(rows(annotations))
    diagnostic = error.diagnostics[0]
    assert message in diagnostic.message
    assert diagnostic.span is not None and diagnostic.span.line == _line_of(ROWS, LOOP)


def test_a_store_in_another_order_than_tma_writes_is_refused() -> None:
    """Each row rotated by its index: the elements of the box, but where no TMA load puts
    them."""
    text = ROWS.replace("ANNOTATIONS", TMA)
    rotated = "S[(i * 64 + tx) // W, ((i * 64 + tx) % W + (i * 64 + tx) // W) % W] = "
    module = parse(text.replace(STORE, rotated), name="rows.tir")
    error = _refused(module)
    diagnostic = error.diagnostics[0]
    assert "stores the box into 'S' in an order no TMA load writes" in diagnostic.message
    assert diagnostic.span is not None and diagnostic.span.line == _line_of(ROWS, STORE)


def test_the_producer_thread_count_still_bounds_the_split() -> None:
    """TMA needs one thread, but the block grows by whole warps."""
    error = _refused(rows(TMA.replace('warp_specialize": 32', 'warp_specialize": 16')))
    assert "cannot add 16 producer threads" in error.diagnostics[0].message

"""samples/gpu/matmul_fp16_hopper.tir and its bfloat16 twin (issue #18): TMA loads into
128-byte-swizzled tiles over an mbarrier ring, a producer warpgroup and two wgmma
m64n256k16 consumer warpgroups trading registers with setmaxnreg, and an epilogue that stages
the accumulators in shared memory and leaves by TMA stores. The interpreter's product against
numpy (the reference in float32) at the shape the program's comment gives tests; the CUDA C
for sm_90a at the benchmark shape through nvcc and ptxas (no spills, registers within a
384-thread block's budget, dynamic shared memory within sm_90's 227 KB); the epilogue's
stores, their tensor map and their bank conflicts."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from tests.codegen_cuda.gpu_plans import GPU_SAMPLES, defines_for_tests
from tests.codegen_cuda.helpers import require_tool
from tirc.analysis.arith import Analyzer
from tirc.analysis.bank_conflicts import bank_conflicts
from tirc.codegen.cuda import emit_cuda
from tirc.codegen.cuda.kernels import module_kernels
from tirc.driver.kernel_resources import ptx_resources, register_budget, resource_warnings
from tirc.driver.lower import lower_module
from tirc.interp.runner import run
from tirc.ir import expr as E
from tirc.ir import stmt as S
from tirc.ir.function import IRModule
from tirc.ir.functor import walk
from tirc.ir.substitute import substitute
from tirc.ir.tma import TmaLoad, tensor_maps, tma_load
from tirc.text import parse

SAMPLES = {"fp16": np.float16, "bf16": ml_dtypes.bfloat16}
ELEMENT = {"fp16": "float16", "bf16": "bfloat16"}
PTX_TYPE = {"fp16": "f16", "bf16": "bf16"}
BENCHMARK = {"M": "4096", "N": "4096", "K": "4096", "STAGES": "4"}
SHARED_LIMIT = 227 * 1024  # sm_90's dynamic shared memory a block


def _path(kind: str) -> Path:
    return GPU_SAMPLES / f"matmul_{kind}_hopper.tir"


def _module(kind: str, defines: dict[str, str] | None = None) -> IRModule:
    path = _path(kind)
    text = path.read_text()
    return parse(text, name=str(path), defines=defines or dict(defines_for_tests(text)))


def _lowered(kind: str) -> IRModule:
    return lower_module(_module(kind, BENCHMARK), target="cuda -arch=sm_90a", for_backend=True)


# the bfloat16 sample in `make test-sweep` (its wgmma is the fp16 one's with another element type;
# tests/codegen_cuda/test_wgmma_library.py runs the bf16 intrinsics in the tests)
@pytest.mark.parametrize(
    "kind",
    [pytest.param(kind, marks=[pytest.mark.sweep] if kind == "bf16" else []) for kind in SAMPLES],
)
def test_the_interpreter_matches_numpy(kind: str) -> None:
    """float16 through both stages of the ring (two k tiles, a release on `empty`), about 10 s
    of CPU; bfloat16 over one k tile, about 5 s (the wgmmas of 256 consumer threads dominate)."""
    defines = dict(defines_for_tests(_path(kind).read_text()))
    k = {"fp16": 128, "bf16": 64}[kind]
    assert defines == {"M": "128", "N": "256", "K": str(k), "STAGES": "2", "GROUP": "1"}
    module = _module(kind)
    rng = np.random.default_rng(18)
    a = rng.standard_normal((128, k)).astype(SAMPLES[kind])
    b = rng.standard_normal((k, 256)).astype(SAMPLES[kind])
    c = np.full((128, 256), np.nan, "float32")  # every element must be stored
    run(module["main"], {"A": a, "B": b, "C": c}, module=module, gpu_model="threads")
    want = a.astype("float32") @ b.astype("float32")
    np.testing.assert_allclose(c, want, rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("kind", list(SAMPLES))
def test_the_grouped_block_order_visits_every_tile_once(kind: str) -> None:
    """The blocks go GROUP block rows down one block column before the next column (the
    interpreter's test runs one block, so the order is checked here, at the benchmark shape):
    block b's (by, bx) as the program computes them, through the simplifier with b bound."""
    binds: dict[str, E.PrimExpr] = {}
    launches: dict[str, S.AttrStmt] = {}

    def visit(node: object) -> None:
        if isinstance(node, S.Bind):
            binds[node.var.name] = node.value
        if isinstance(node, S.BufferStore) and node.buffer.name in ("by", "bx"):
            binds[node.buffer.name] = node.value  # s-tir holds a scalar as a local buffer
        if isinstance(node, S.AttrStmt) and isinstance(node.node, S.IterVar):
            launches[node.node.thread_tag] = node

    walk(_module(kind, BENCHMARK)["main"].body, visit)
    block = launches["blockIdx.x"]
    assert isinstance(block.node, S.IterVar) and "blockIdx.y" not in launches
    rows, columns, group = 4096 // 128, 4096 // 256, 16
    assert isinstance(block.value, E.IntImm) and block.value.value == rows * columns
    analyzer, tiles = Analyzer(), []
    for b in range(rows * columns):
        at = {block.node.var: E.IntImm(b)}
        pair = [analyzer.simplify(substitute(binds[name], at)) for name in ("by", "bx")]
        assert all(isinstance(value, E.IntImm) for value in pair)
        tiles.append(tuple(value.value for value in pair if isinstance(value, E.IntImm)))
    assert sorted(tiles) == [(y, x) for y in range(rows) for x in range(columns)]
    assert tiles[: group + 1] == [*((y, 0) for y in range(group)), (0, 1)]


def _ptx(source: str, directory: Path) -> str:
    cu, ptx = directory / "kernel.cu", directory / "kernel.ptx"
    cu.write_text(source)
    done = subprocess.run(
        [require_tool("nvcc"), "-arch=sm_90a", "-ptx", str(cu), "-o", str(ptx)],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    return ptx.read_text()


@pytest.mark.parametrize("kind", SAMPLES)
def test_nvcc_and_ptxas_for_sm_90a_without_spills(kind: str, tmp_path: Path) -> None:
    require_tool("ptxas")
    lowered = _lowered(kind)
    source = emit_cuda(lowered)
    for instruction in (
        "setmaxnreg.dec.sync.aligned.u32 40;",
        "setmaxnreg.inc.sync.aligned.u32 232;",
        "setmaxnreg.inc.sync.aligned.u32 168;",  # the producer, back to the launch's count
        "setmaxnreg.dec.sync.aligned.u32 168;",  # the consumers, before the epilogue
        f"wgmma.mma_async.sync.aligned.m64n256k16.f32.{PTX_TYPE[kind]}.{PTX_TYPE[kind]}",
        "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes",
        "cp.async.bulk.tensor.2d.global.shared::cta.bulk_group",
        "fence.proxy.async.shared::cta;",
        "cp.async.bulk.commit_group;",
        "cp.async.bulk.wait_group 0;",
    ):
        assert instruction in source, instruction
    ptx = _ptx(source, tmp_path)
    assert ptx.count("st.shared.v2.f32") == 64  # the epilogue's accumulator pairs
    (kernel,) = module_kernels(lowered)
    assert kernel.threads_per_block() == 384
    (resources,) = ptx_resources(ptx, "sm_90a")
    assert not resources.spills and resources.stack_frame == 0, resources.summary()
    assert resources.registers <= register_budget(384) == 168, resources.summary()
    assert not resource_warnings([resources], {kernel.name: 384})
    launch = re.search(r"<<<main_kernel_grid, main_kernel_block, (\d+), stream>>>", source)
    assert launch is not None and int(launch.group(1)) == 4 * 48 * 1024 <= SHARED_LIMIT


def _store_loop(body: S.Stmt) -> tuple[S.For, TmaLoad]:
    """The loop around the program's one TMA store, and the store."""
    found: list[tuple[S.For, TmaLoad]] = []

    def visit(node: object) -> None:
        if isinstance(node, S.For):
            walk(
                node.body,
                lambda inner: (
                    found.append((node, tma_load(inner)))
                    if isinstance(inner, E.Call) and inner.op == "ptx_tma_store"
                    else None
                ),
            )

    walk(body, visit)
    (only,) = found
    return only


@pytest.mark.parametrize("kind", SAMPLES)
def test_the_store_boxes_tile_c_block_by_block(kind: str) -> None:
    """The epilogue's TMA store writes through a map of C itself (its dtype and shape), and
    its boxes of 128 x 8 floats, one for each group of 8 columns, cover the block's
    128 x 256 tile; the launcher encodes that map."""
    module = _module(kind, BENCHMARK)
    func = module["main"]
    c = dict(func.buffer_map)[func.params[2]]
    loop, store = _store_loop(func.body)
    assert store.tensor is c.data and store.dtype == c.dtype
    assert [str(extent) for extent in store.shape] == [str(extent) for extent in c.shape]
    assert store.box == (128, 8) and store.swizzle == 0
    assert isinstance(loop.extent, E.IntImm) and loop.extent.value * store.box[1] == 256
    lowered = _lowered(kind)
    (kernel,) = module_kernels(lowered)
    maps = tensor_maps(lowered[kernel.name].body)
    assert [str(m.dtype) for m in maps] == [ELEMENT[kind], ELEMENT[kind], "float32"]
    launcher = emit_cuda(lowered).split('extern "C" int main_launch')[1]
    assert "const cuuint32_t tirc_box[2] = {8, 128};" in launcher
    assert "CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 2, (void*)(C)" in launcher


def test_the_staging_stores_have_no_bank_conflicts() -> None:
    """A half warp's 16 8-byte stores cover 4 rows of 32 bytes: the 32 banks once each."""
    stores = [item for item in bank_conflicts(_lowered("fp16")) if item.access.buffer == "D"]
    assert len(stores) == 64
    for item in stores:
        assert item.unknown is None and item.access.instruction == "st.shared 8 B"
        assert item.wavefronts == item.ideal and item.excess == 0


@pytest.mark.parametrize("kind", SAMPLES)
def test_the_gpu_check_command_up_to_the_launch(
    kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`tirc run` as benchmarks/gpu_check.py's hopper step runs it (without --check: the
    fake driver runs no kernel): the three maps the launcher encodes, one block of 384
    threads, the dynamic shared memory the ring and the staging tile need."""
    import contextlib
    import io

    from tests.codegen_cuda.test_tma import _nvcc_ptx
    from tests.runtime.fake_cuda import CUtensorMapDataType, FakeDriver
    from tirc.cli.main import main
    from tirc.driver import run_cuda
    from tirc.runtime.cuda_driver import Device

    driver = FakeDriver()
    monkeypatch.setattr(run_cuda, "module_image", _nvcc_ptx(tmp_path))
    monkeypatch.setattr(run_cuda, "Device", lambda: Device(driver, load_ptx=True))
    args = ["run", str(_path(kind)), "--target", "cuda -arch=sm_90a"]
    for name, value in defines_for_tests(_path(kind).read_text()):
        args += ["-D", f"{name}={value}"]
    output = io.StringIO()
    with contextlib.redirect_stdout(output), contextlib.redirect_stderr(output):
        code = main(args)
    assert code == 0, output.getvalue()
    element = {"fp16": "FLOAT16", "bf16": "BFLOAT16"}[kind]
    types = CUtensorMapDataType
    assert [made.dtype for made in driver.tensor_maps] == [
        getattr(types, f"CU_TENSOR_MAP_DATA_TYPE_{element}"),
        getattr(types, f"CU_TENSOR_MAP_DATA_TYPE_{element}"),
        types.CU_TENSOR_MAP_DATA_TYPE_FLOAT32,
    ]
    assert driver.tensor_maps[2].dims == (256, 128) and driver.tensor_maps[2].box == (8, 128)
    (launch,) = driver.launches
    assert (launch.grid, launch.block) == ((1, 1, 1), (384, 1, 1))
    assert launch.dynamic_shared == 128 * 1024  # the staging tile: more than 2 stages' 96 KB


SMALL = {"M": "128", "N": "256", "K": "64", "STAGES": "1"}  # one k tile: about 4 s


def _small_inputs() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(19)
    return {
        "A": rng.standard_normal((128, 64)).astype("float16"),
        "B": rng.standard_normal((64, 256)).astype("float16"),
        "C": np.full((128, 256), np.nan, "float32"),
    }


def test_the_lowered_kernel_runs_in_the_thread_model() -> None:
    """What the CUDA pipeline leaves (thread-sync's barriers, the merged shared memory, the
    vector stores) is still race-free and right."""
    lowered = lower_module(_module("fp16", SMALL), target="cuda -arch=sm_90a", for_backend=True)
    args = _small_inputs()
    run(lowered["main"], args, module=lowered, gpu_model="threads")
    want = args["A"].astype("float32") @ args["B"].astype("float32")
    np.testing.assert_allclose(args["C"], want, rtol=1e-5, atol=1e-4)


def test_a_store_issued_before_the_staging_barrier_is_a_race() -> None:
    """Without the barrier between the consumers' writes of D and thread 0's TMA store, the
    store may read D before they are done: the race check says so (thread 0 gets there first
    in the model, so at a consumer's write, with a note at the store)."""
    from tirc.diagnostics import DiagnosticError

    text = _path("fp16").read_text()
    fenced = '        T.ptx_fence_proxy_async()\n    T.tvm_storage_sync("shared")\n    if tx == 0:'
    assert text.count(fenced) == 1
    text = text.replace(fenced, "        T.ptx_fence_proxy_async()\n    if tx == 0:")
    module = parse(text, name="unfenced.tir", defines=SMALL)
    with pytest.raises(DiagnosticError) as error:
        run(module["main"], _small_inputs(), module=module, gpu_model="threads")
    (diagnostic,) = error.value.diagnostics
    d_store = next(n for n, line in enumerate(text.split("\n"), start=1) if "D[T.Ramp(" in line)
    assert f"unfenced.tir:{d_store}:13: error: data race on shared memory 'S'" in str(error.value)
    assert "writes it after thread (0, 0, 0) of block (0, 0, 0) read it" in diagnostic.message
    (note,) = diagnostic.notes
    lines = enumerate(text.split("\n"), start=1)
    store = next(number for number, line in lines if "T.ptx_tma_store(" in line)
    assert note.span is not None and (note.span.line, note.span.column) == (store, 13)


def test_every_sample_of_the_gpu_checks_hopper_step_exists() -> None:
    """benchmarks/gpu_check.py's `hopper` step runs these on the next GPU, at the sizes their
    comments give tests: a missing program or plan, or a program without such sizes (its
    reference in the interpreter at the benchmark's), would cost that session its device
    time."""
    import importlib.util

    root = Path(__file__).resolve().parents[2]
    spec = importlib.util.spec_from_file_location("gpu_check", root / "benchmarks" / "gpu_check.py")
    assert spec is not None and spec.loader is not None
    gpu_check = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gpu_check)
    names = [plan or program for program, plan in gpu_check.HOPPER]
    assert len(names) == len(set(names))  # each its own log and result
    for program, plan in gpu_check.HOPPER:
        source = root / "samples" / "gpu" / f"{program}.tir"
        assert source.is_file(), source
        assert plan is None or source.with_name(f"{plan}.plan.json").is_file(), plan
        assert defines_for_tests(source.read_text()), f"{program} gives tests no sizes"
    assert set(gpu_check.HOPPER_NVPTX) <= {program for program, _ in gpu_check.HOPPER}

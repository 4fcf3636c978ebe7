"""mbarrier and TMA loads in CUDA C for sm_90a: the sample's kernel and launcher compile with
nvcc and its PTX assembles with ptxas; the kernel takes one `__grid_constant__` tensor map per
map and the launcher encodes it from the tensor's shape, box and swizzle; architectures before
sm_90 are refused at the call; `tirc run --target cuda` builds the map with the driver and
passes it by value (the fake driver checks the map and the launch)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import pytest

from tests.codegen_cuda.helpers import ptxas_accepts, require_tool
from tests.runtime.fake_cuda import CUtensorMapDataType, CUtensorMapSwizzle, FakeDriver, fake_device
from tirc.api import parse
from tirc.codegen.cuda import emit_cuda
from tirc.diagnostics import DiagnosticError
from tirc.driver import run_cuda
from tirc.driver.compile_cuda import cuda_artifact
from tirc.driver.lower import lower_module
from tirc.ir.function import IRModule

SAMPLE = Path(__file__).parents[2] / "samples" / "gpu" / "tma_copy.tir"


def _lowered(arch: str = "sm_90a", m: int = 64, n: int = 128) -> IRModule:
    module = parse(SAMPLE, defines={"M": m, "N": n})
    return lower_module(module, target=f"cuda -arch={arch}", for_backend=True)


def test_kernel_takes_the_map_and_issues_the_copy() -> None:
    cuda = emit_cuda(_lowered())
    assert "const __grid_constant__ tirc_tensor_map A_tensor_map)" in cuda
    assert "__shared__ __align__(1024) half S[4096];" in cuda  # a 128-byte swizzle's alignment
    assert (
        "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes "
        "[%0], [%1, {%2, %3}], [%4]" in cuda
    )
    # the y coordinate is by * 64 with by < 1 here: 0 (simplify knows thread extents)
    assert '"l"((unsigned long long)&A_tensor_map), "r"((int)(cse_v1)), "r"((int)(0))' in cuda
    assert "mbarrier.init.shared::cta.b64" in cuda
    assert "mbarrier.arrive.expect_tx.shared::cta.b64 state, [%0], %1" in cuda
    assert "tirc_mbarrier_wait(" in cuda


def test_launcher_encodes_the_map_innermost_first() -> None:
    cuda = emit_cuda(_lowered())
    launcher = cuda[cuda.index('extern "C" int main_launch') :]
    assert "const cuuint64_t tirc_dims[2] = {(cuuint64_t)(128), (cuuint64_t)(64)};" in launcher
    assert "const cuuint64_t tirc_strides[1] = {(cuuint64_t)(128) * 2};" in launcher
    assert "const cuuint32_t tirc_box[2] = {64, 64};" in launcher
    assert (
        "tirc_encode_tensor_map(&main_kernel_tensor_map, CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 2, "
        "(void*)(A), tirc_dims, tirc_strides, tirc_box, 128);" in launcher
    )
    assert (
        "<<<main_kernel_grid, main_kernel_block, 0, stream>>>(A, B, main_kernel_tensor_map);"
        in (launcher)
    )


def test_nvcc_compiles_and_ptxas_assembles_for_sm_90a(tmp_path: Path) -> None:
    nvcc = require_tool("nvcc")
    cu = tmp_path / "tma_copy.cu"
    cu.write_text(emit_cuda(_lowered()))
    for flags in (
        ["-c", "-o", str(tmp_path / "tma_copy.o")],
        ["-ptx", "-o", str(tmp_path / "k.ptx")],
    ):
        done = subprocess.run(
            [nvcc, "-arch=sm_90a", str(cu), *flags], capture_output=True, text=True
        )
        assert done.returncode == 0, done.stderr
    ptx = (tmp_path / "k.ptx").read_text()
    assert "cp.async.bulk.tensor.2d" in ptx and "mbarrier.try_wait.parity" in ptx
    assert ptxas_accepts(ptx, tmp_path, arch="sm_90a") == ""


@pytest.mark.parametrize("arch", ["sm_80", "sm_89"])
def test_older_architectures_are_refused_at_the_call(arch: str) -> None:
    with pytest.raises(DiagnosticError) as error:
        cuda_artifact(_lowered(arch), "cu", arch=arch)
    diagnostic = error.value.diagnostics[0]
    assert "needs sm_90" in diagnostic.message and arch in diagnostic.message
    assert diagnostic.span is not None and diagnostic.span.line in (20, 21)


def _nvcc_ptx(directory: Path) -> object:
    """run_cuda.module_image through nvcc (NVRTC, which tirc uses, may be missing here)."""

    def module_image(lowered: IRModule, arch: str, **options: object) -> bytes:
        cu, out = directory / "k.cu", directory / "k.ptx"
        cu.write_text(emit_cuda(lowered))
        subprocess.run(
            [require_tool("nvcc"), f"-arch={arch}", "-ptx", str(cu), "-o", str(out)], check=True
        )
        return out.read_bytes() + b"\0"

    return module_image


def _run_on_the_fake_driver(
    module: IRModule, args: dict[str, np.ndarray], directory: Path, monkeypatch: pytest.MonkeyPatch
) -> FakeDriver:
    """Runs `main` of `module` for sm_90a through run_on_cuda on a fake driver (its PTX from
    nvcc), which then holds the maps encoded and the launches."""
    monkeypatch.setattr(run_cuda, "module_image", _nvcc_ptx(directory))
    driver = FakeDriver()
    _, _, arch = run_cuda.run_on_cuda(
        module, "main", module["main"], "cuda -arch=sm_90a", args, device=fake_device(driver)
    )
    assert arch == "sm_90a"
    return driver


def test_run_builds_the_map_with_the_driver_and_passes_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    module = parse(SAMPLE, defines={"M": 128, "N": 192})
    a = np.ones((128, 192), "float16")
    b = np.zeros_like(a)
    driver = _run_on_the_fake_driver(module, {"A": a, "B": b}, tmp_path, monkeypatch)
    (made,) = driver.tensor_maps
    assert made.dtype == CUtensorMapDataType.CU_TENSOR_MAP_DATA_TYPE_FLOAT16
    assert (made.dims, made.strides, made.box) == ((192, 128), (384,), (64, 64))
    assert made.swizzle == CUtensorMapSwizzle.CU_TENSOR_MAP_SWIZZLE_128B
    (launch,) = driver.launches
    assert launch.grid == (3, 2, 1) and launch.args[2] == ("tensor map", made)
    assert made.address == launch.args[0][1]  # A's device copy
    assert driver.leaks() == []


def test_maps_the_driver_would_refuse_are_named() -> None:
    from tirc.ir.tma import tensor_maps
    from tirc.runtime.cuda_tensor_map import _problem

    (load,) = tensor_maps(_lowered()["main_kernel"].body)
    # rows of 36 halves are 72 bytes apart: TMA wants multiples of 16
    assert _problem(load, 0x1000, [64, 36]) == "its rows are 72 bytes apart, not a multiple of 16"
    assert _problem(load, 0x1008, [64, 64]) == "the tensor's address 0x1008 is not 16-byte aligned"
    assert _problem(load, 0x1000, [64, 64]) is None


def test_tirc_run_on_the_fake_gpu(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The GPU check's command, `tirc run samples/gpu/tma_copy.tir --target 'cuda -arch=sm_90a'`,
    up to the launch (the fake driver runs no kernel, so without --check)."""
    import contextlib
    import io

    from tirc.cli.main import main
    from tirc.runtime.cuda_driver import Device

    driver = FakeDriver()
    monkeypatch.setattr(run_cuda, "module_image", _nvcc_ptx(tmp_path))
    monkeypatch.setattr(run_cuda, "Device", lambda: Device(driver, load_ptx=True))
    output = io.StringIO()
    args = ["run", str(SAMPLE), "--target", "cuda -arch=sm_90a", "-D", "M=128", "-D", "N=64"]
    with contextlib.redirect_stdout(output), contextlib.redirect_stderr(output):
        code = main(args)
    assert code == 0, output.getvalue()
    assert "sm_90a" in output.getvalue()
    (made,) = driver.tensor_maps
    assert made.dims == (64, 128) and [launch.grid for launch in driver.launches] == [(1, 2, 1)]


# a rank-R box (2 x ... x 2 x 64 halves) of a 4 x ... x 4 x 128 tensor into SCOPE shared memory
RANKED = """
@T.prim_func
def main(A: T.Buffer(({shape}), "float16"), B: T.Buffer((64,), "float16")):
    tx = T.launch_thread("threadIdx.x", 64)
    S = T.alloc_buffer(({count},), "float16", scope="{scope}")
    bar = T.alloc_buffer((1,), "uint64", scope="shared")
    if tx == 0:
        T.ptx_mbarrier_init(bar.data, 0, 1)
    T.tvm_storage_sync("shared")
    if tx == 0:
        T.ptx_mbarrier_arrive_expect_tx(bar.data, 0, {bytes})
        T.ptx_tma_load("float16", A.data, {rank}, {swizzle}, {shape}, {box}, S.data, 0, bar.data, 0,
                       {coords})
    T.ptx_mbarrier_wait(bar.data, 0, 0)
    B[tx] = S[tx]
    if tx == 0:
        T.ptx_mbarrier_inval(bar.data, 0)
"""


def _ranked(rank: int, scope: str = "shared", swizzle: int = 128) -> str:
    shape = [4] * (rank - 1) + [128]
    box = [2] * (rank - 1) + [64]
    count = 2 ** (rank - 1) * 64
    return RANKED.format(
        shape=", ".join(map(str, shape)),
        box=", ".join(map(str, box)),
        coords=", ".join(["1"] * (rank - 1) + ["64"]),
        count=count,
        bytes=count * 2,
        rank=rank,
        scope=scope,
        swizzle=swizzle,
    )


@pytest.mark.parametrize(
    ("rank", "scope"),
    [(1, "shared"), (2, "shared.dyn"), (3, "shared"), (4, "shared.dyn"), (5, "shared")],
)
def test_every_rank_assembles_for_sm_90a(rank: int, scope: str, tmp_path: Path) -> None:
    from tirc.text import parse as parse_text

    module = parse_text(_ranked(rank, scope, swizzle=0 if rank == 1 else 128))
    lowered = lower_module(module, target="cuda -arch=sm_90a", for_backend=True)
    cuda = emit_cuda(lowered)
    assert f"cp.async.bulk.tensor.{rank}d." in cuda and "mbarrier.inval.shared::cta.b64" in cuda
    if scope == "shared.dyn":  # carved from dynamic shared memory at a 1024-byte boundary
        assert "extern __shared__ __align__(1024) unsigned char tirc_dynamic_shared[];" in cuda
    nvcc = require_tool("nvcc")
    cu = tmp_path / "k.cu"
    cu.write_text(cuda)
    done = subprocess.run(
        [nvcc, "-arch=sm_90a", "-ptx", str(cu), "-o", str(tmp_path / "k.ptx")],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    assert ptxas_accepts((tmp_path / "k.ptx").read_text(), tmp_path, arch="sm_90a") == ""


@pytest.mark.parametrize("rank", [1, 3, 5])
def test_every_rank_loads_its_box_in_the_interpreter(rank: int) -> None:
    from tirc.interp.runner import run
    from tirc.text import parse as parse_text

    module = parse_text(_ranked(rank, swizzle=0))
    shape = [4] * (rank - 1) + [128]
    a = np.arange(np.prod(shape), dtype="float32").astype("float16").reshape(shape)
    b = np.zeros(64, "float16")
    run(module["main"], {"A": a, "B": b}, module=module, gpu_model="threads")
    np.testing.assert_array_equal(b, a[(1,) * (rank - 1)][64:128])


GEMM = SAMPLE.with_name("gemm_wgmma_tma.tir")


@pytest.mark.slow  # about 10 s: 64 x 128 x 256 through the thread model
def test_tma_wgmma_gemm_matches_numpy() -> None:
    from tirc.interp.runner import run

    module = parse(GEMM, defines={"M": 64, "N": 128, "K": 256})
    rng = np.random.default_rng(3)
    a = rng.standard_normal((64, 256)).astype("float16")
    b = rng.standard_normal((256, 128)).astype("float16")
    c = np.zeros((64, 128), "float32")
    run(module["main"], {"A": a, "B": b, "C": c}, module=module, gpu_model="threads")
    np.testing.assert_allclose(c, a.astype("float32") @ b.astype("float32"), rtol=1e-5, atol=1e-4)


def test_tma_wgmma_gemm_assembles_with_two_maps(tmp_path: Path) -> None:
    lowered = lower_module(
        parse(GEMM, defines={"M": 128, "N": 256, "K": 512}),
        target="cuda -arch=sm_90a",
        for_backend=True,
    )
    cuda = emit_cuda(lowered)
    assert (
        "const __grid_constant__ tirc_tensor_map A_tensor_map, "
        "const __grid_constant__ tirc_tensor_map B_tensor_map)" in cuda
    )
    # 48 KiB of tiles and the barriers: dynamic shared memory, the tiles 1024-byte aligned
    assert "extern __shared__ __align__(1024) unsigned char tirc_dynamic_shared[];" in cuda
    cu = tmp_path / "gemm.cu"
    cu.write_text(cuda)
    done = subprocess.run(
        [require_tool("nvcc"), "-gencode", "arch=compute_90a,code=sm_90a", "-ptx", str(cu)]
        + ["-o", str(tmp_path / "k.ptx")],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    ptx = (tmp_path / "k.ptx").read_text()
    assert "cp.async.bulk.tensor.2d" in ptx and "wgmma.mma_async" in ptx
    assert ptxas_accepts(ptx, tmp_path, arch="sm_90a") == ""


# B = 3 A: each 64 x 64 tile in by a TMA load, tripled in shared memory, out by a TMA store
STORE = """
@T.prim_func
def main(A: T.Buffer((128, 64), "float16"), B: T.Buffer((128, 64), "float16")):
    by = T.launch_thread("blockIdx.y", 2)
    tx = T.launch_thread("threadIdx.x", 128)
    S = T.alloc_buffer((4096,), "float16", scope="shared")
    bar = T.alloc_buffer((1,), "uint64", scope="shared")
    if tx == 0:
        T.ptx_mbarrier_init(bar.data, 0, 1)
        T.ptx_fence_proxy_async()
    T.tvm_storage_sync("shared")
    if tx == 0:
        T.ptx_mbarrier_arrive_expect_tx(bar.data, 0, 8192)
        T.ptx_tma_load("float16", A.data, 2, {swizzle}, 128, 64, 64, 64, S.data, 0, bar.data, 0,
                       by * 64, 0)
    T.ptx_mbarrier_wait(bar.data, 0, 0)
    for i in range(32):
        S[i * 128 + tx] = S[i * 128 + tx] * T.float16(3)
    T.ptx_fence_proxy_async()
    T.tvm_storage_sync("shared")
    if tx == 0:
        T.ptx_tma_store("float16", B.data, 2, {swizzle}, 128, 64, 64, 64, S.data, 0, by * 64, 0)
        T.ptx_tma_store_commit()
        T.ptx_tma_store_wait(0)
"""


@pytest.mark.parametrize("swizzle", [0, 128])
def test_tma_store_writes_the_tile_back(swizzle: int, tmp_path: Path) -> None:
    from tirc.interp.runner import run
    from tirc.text import parse as parse_text

    module = parse_text(STORE.format(swizzle=swizzle))
    a = np.random.default_rng(4).standard_normal((128, 64)).astype("float16")
    b = np.zeros_like(a)
    run(module["main"], {"A": a, "B": b}, module=module, gpu_model="threads")
    np.testing.assert_array_equal(b, a * np.float16(3))
    lowered = lower_module(module, target="cuda -arch=sm_90a", for_backend=True)
    cuda = emit_cuda(lowered)
    assert "cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%1, {%2, %3}], [%0]" in cuda
    assert "cp.async.bulk.commit_group" in cuda and "cp.async.bulk.wait_group 0" in cuda
    assert "const __grid_constant__ tirc_tensor_map B_tensor_map" in cuda
    cu = tmp_path / "k.cu"
    cu.write_text(cuda)
    done = subprocess.run(
        [require_tool("nvcc"), "-arch=sm_90a", "-ptx", str(cu), "-o", str(tmp_path / "k.ptx")],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    assert ptxas_accepts((tmp_path / "k.ptx").read_text(), tmp_path, arch="sm_90a") == ""


# a tensor of n rows (the launch decides), copied through 64-row boxes: the last box passes
# the tensor's end, where TMA reads zeros
SYMBOLIC = """
@T.prim_func
def main(a: T.handle, b: T.handle):
    n = T.int32()
    A = T.match_buffer(a, (n, 64), "float16")
    B = T.match_buffer(b, (n, 64), "float16")
    by = T.launch_thread("blockIdx.y", (n + 63) // 64)
    tx = T.launch_thread("threadIdx.x", 128)
    S = T.alloc_buffer((4096,), "float16", scope="shared")
    bar = T.alloc_buffer((1,), "uint64", scope="shared")
    if tx == 0:
        T.ptx_mbarrier_init(bar.data, 0, 1)
        T.ptx_fence_proxy_async()
    T.tvm_storage_sync("shared")
    if tx == 0:
        T.ptx_mbarrier_arrive_expect_tx(bar.data, 0, 8192)
        T.ptx_tma_load("float16", A.data, 2, 0, n, 64, 64, 64, S.data, 0, bar.data, 0, by * 64, 0)
    T.ptx_mbarrier_wait(bar.data, 0, 0)
    for i in range(32):
        if by * 64 + i * 2 + tx // 64 < n:
            B[by * 64 + i * 2 + tx // 64, tx % 64] = S[i * 128 + tx]
"""


def test_a_map_over_a_shape_the_launch_decides(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tirc.interp.runner import run
    from tirc.text import parse as parse_text

    module = parse_text(SYMBOLIC)
    a = np.random.default_rng(5).standard_normal((100, 64)).astype("float16")
    b = np.zeros_like(a)
    run(module["main"], {"A": a, "B": b}, module=module, gpu_model="threads")
    np.testing.assert_array_equal(b, a)
    lowered = lower_module(module, target="cuda -arch=sm_90a", for_backend=True)
    launcher = emit_cuda(lowered).split('extern "C" int main_launch')[1]
    assert "const cuuint64_t tirc_dims[2] = {(cuuint64_t)(64), (cuuint64_t)(n)};" in launcher
    driver = _run_on_the_fake_driver(module, {"a": a, "b": b}, tmp_path, monkeypatch)
    (made,) = driver.tensor_maps
    assert (made.dims, made.strides) == ((64, 100), (128,))
    (launch,) = driver.launches
    assert launch.grid == (1, 2, 1) and launch.args[2] == ("u32", 100)


def test_lowered_producer_and_consumer_warps_keep_apart() -> None:
    """thread-sync leaves a TMA load's destination to its mbarrier: no __syncthreads between
    a producer warp's branch and its consumers' (which would stall the producer's loop
    against the consumers on a GPU); the lowered program runs in the thread model."""
    from tests.interp.test_mbarrier import PRODUCER_CONSUMER
    from tirc.interp.runner import run
    from tirc.text import parse as parse_text

    text = PRODUCER_CONSUMER.replace("STAGES", "2").replace("K", "128")
    text = text.replace("ARRIVE", "T.ptx_mbarrier_arrive(empty.data, k % 2)")
    lowered = lower_module(parse_text(text), target="cuda -arch=sm_90a", for_backend=True)
    assert emit_cuda(lowered).count("__syncthreads()") == 1  # the program's own, after init
    a = np.random.default_rng(7).standard_normal((128, 32)).astype("float32")
    b = np.zeros(32, "float32")
    run(lowered["main"], {"A": a, "B": b}, module=lowered, gpu_model="threads")
    np.testing.assert_allclose(b, a.sum(axis=0), rtol=1e-5)


@pytest.mark.parametrize("sample", ["tma_copy", "gemm_wgmma_tma"])
def test_lowered_samples_run_in_the_thread_model(sample: str) -> None:
    from tirc.interp.runner import run

    defines = {"M": 64, "N": 128} | ({"K": 128} if sample.startswith("gemm") else {})
    module = parse(SAMPLE.with_name(f"{sample}.tir"), defines=defines)
    lowered = lower_module(module, target="cuda -arch=sm_90a", for_backend=True)
    rng = np.random.default_rng(8)
    if sample == "tma_copy":
        a = rng.standard_normal((64, 128)).astype("float16")
        b = np.zeros_like(a)
        run(lowered["main"], {"A": a, "B": b}, module=lowered, gpu_model="threads")
        np.testing.assert_array_equal(b, a * np.float16(2))
        return
    a = rng.standard_normal((64, 128)).astype("float16")
    b = rng.standard_normal((128, 128)).astype("float16")
    c = np.zeros((64, 128), "float32")
    run(lowered["main"], {"A": a, "B": b, "C": c}, module=lowered, gpu_model="threads")
    np.testing.assert_allclose(c, a.astype("float32") @ b.astype("float32"), rtol=1e-5, atol=1e-4)

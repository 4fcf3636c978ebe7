"""Hopper's mbarriers and TMA copies on the NVPTX path (--ptx-via llvm, sm_90a): the samples'
PTX assembles with ptxas; each mbarrier and TMA call of the lowered program is one instruction
of the PTX (at -O0, where LLVM copies no code); the tensor maps are `.param .align 64 .b8
[128]` parameters after the program's, read through `cvta.param` with no local copy, and the
parameter list is the CUDA C kernel's (nvcc's PTX); architectures before sm_90 get the CUDA
C backend's located error; `tirc run --target cuda` launches the NVPTX kernel with the same
host code and arguments (on the fake driver)."""

from __future__ import annotations

import re
import subprocess
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from tests.codegen_cuda.gpu_plans import GpuPlan, gpu_plans
from tests.codegen_cuda.helpers import ptxas_accepts, require_tool
from tests.runtime.fake_cuda import CUtensorMapSwizzle, FakeDriver, fake_device
from tirc.cli.main import main
from tirc.codegen.cuda import emit_cuda
from tirc.codegen.cuda.kernels import module_kernels
from tirc.codegen.nvptx import emit_nvvm_ir, emit_ptx
from tirc.diagnostics import DiagnosticError
from tirc.driver import cuda_toolchain, run_cuda
from tirc.driver.compile_cuda import cuda_artifact
from tirc.driver.lower import lower_module
from tirc.ir.function import IRModule
from tirc.ir.tma import hopper_calls, tensor_maps
from tirc.text import parse

SAMPLES = ("tma_copy", "gemm_wgmma_tma", "gemm_wgmma_ws")
# what each call becomes in the PTX, as a pattern counted once per instruction
INSTRUCTIONS = {
    "ptx_mbarrier_init": r"mbarrier\.init\.shared::cta\.b64 ",
    "ptx_mbarrier_arrive": r"mbarrier\.arrive\.shared::cta\.b64 ",
    "ptx_mbarrier_arrive_expect_tx": r"mbarrier\.arrive\.expect_tx\.shared::cta\.b64 ",
    "ptx_mbarrier_wait": r"mbarrier\.try_wait\.parity\.shared::cta\.b64 ",
    "ptx_mbarrier_inval": r"mbarrier\.inval\.shared::cta\.b64 ",
    "ptx_tma_load": r"cp\.async\.bulk\.tensor\.\dd\.shared::cluster\.global\.mbarrier::"
    r"complete_tx::bytes ",
    "ptx_tma_store": r"cp\.async\.bulk\.tensor\.\dd\.global\.shared::cta\.bulk_group ",
    "ptx_tma_store_commit": r"cp\.async\.bulk\.commit_group;",
    "ptx_tma_store_wait": r"cp\.async\.bulk\.wait_group \d+;",
}
_PARAM = re.compile(
    r"\.param\s+(?:\.align (\d+)\s+)?\.(\w+)\s+(?:\.ptr\s+(?:\.\w+\s+)*)?"
    r"(?:\.align \d+\s+)?\w+?_param_\d+(\[\d+\])?"
)


def _plan(name: str) -> GpuPlan:
    return next(plan for plan in gpu_plans(name) if plan.id == name)


def _nvptx(name: str, opt_level: int = 3) -> str:
    return str(
        cuda_artifact(
            _plan(name).lowered(), "ptx", arch="sm_90a", ptx_via="llvm", opt_level=opt_level
        )
    )


def _signature(ptx: str) -> list[tuple[str, str, str]]:
    """The `.entry`'s parameters as (alignment, type, array): what a launch must match (the
    `.ptr .align 1` LLVM adds to a pointer only tells ptxas what it points at)."""
    (params,) = re.findall(r"\.entry\s+\w+\s*\(([^)]*)\)", ptx)
    found = [_PARAM.search(part) for part in params.split(",")]
    assert all(found), params
    return [(m.group(1) or "", m.group(2), m.group(3) or "") for m in found if m is not None]


@pytest.mark.parametrize("name", SAMPLES)
def test_the_samples_assemble_for_sm_90a(name: str, tmp_path: Path) -> None:
    ptx = _nvptx(name)
    assert ".target sm_90a" in ptx
    assert "cp.async.bulk.tensor.2d.shared::cluster" in ptx
    assert "mbarrier.try_wait.parity.shared::cta.b64" in ptx
    assert ptxas_accepts(ptx, tmp_path, arch="sm_90a") == ""


@pytest.mark.parametrize("name", SAMPLES)
def test_each_call_is_one_instruction(name: str) -> None:
    (kernel,) = module_kernels(_plan(name).lowered())
    calls = Counter(call.op for call in hopper_calls(kernel.body))
    ptx = _nvptx(name, opt_level=0)  # no LLVM pass: no unrolled copy of an instruction
    for op, pattern in INSTRUCTIONS.items():
        assert len(re.findall(pattern, ptx)) == calls[op], op
    assert calls["ptx_tma_load"] > 0 and calls["ptx_mbarrier_wait"] > 0


@pytest.mark.parametrize("name", SAMPLES)
def test_the_tensor_maps_are_the_last_parameters(name: str) -> None:
    (kernel,) = module_kernels(_plan(name).lowered())
    maps = len(tensor_maps(kernel.body))
    signature = _signature(_nvptx(name))
    assert len(signature) == len(kernel.params) + maps
    assert signature[len(kernel.params) :] == [("64", "b8", "[128]")] * maps
    assert ("64", "b8", "[128]") not in signature[: len(kernel.params)]


@pytest.mark.parametrize("name", SAMPLES)
def test_the_signature_is_the_cuda_c_kernels(name: str, tmp_path: Path) -> None:
    nvcc = require_tool("nvcc")
    cu = tmp_path / "k.cu"
    cu.write_text(emit_cuda(_plan(name).lowered()))
    done = subprocess.run(
        [nvcc, "-arch=sm_90a", "-ptx", str(cu), "-o", str(tmp_path / "k.ptx")],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    nvcc_ptx = (tmp_path / "k.ptx").read_text()
    ptx = _nvptx(name)
    assert _signature(ptx) == _signature(nvcc_ptx)
    # __launch_bounds__ as nvcc spells it (and, with setmaxnreg, .minnctapersm 1)
    assert _directives(ptx) == _directives(nvcc_ptx)


def _resources(ptx: str) -> dict[str, int]:
    _, log = cuda_toolchain.assemble_ptx(ptx, "sm_90a", verbose=True, purpose="the test")
    numbers = {}
    for key, pattern in (
        ("stack", r"(\d+) bytes stack frame"),
        ("spill stores", r"(\d+) bytes spill stores"),
        ("spill loads", r"(\d+) bytes spill loads"),
        ("registers", r"Used (\d+) registers"),
    ):
        found = re.search(pattern, log)
        assert found is not None, log
        numbers[key] = int(found.group(1))
    return numbers


def test_the_tensor_map_is_read_in_place() -> None:
    """grid_constant: the copy takes the parameter's generic address (cvta.param), as nvcc
    does for `const __grid_constant__`, instead of copying 128 bytes to the stack."""
    require_tool("ptxas")
    ptx = _nvptx("tma_copy")
    address = re.search(r"cvta\.param\.u64\s+(%rd\d+), (%rd\d+);", ptx)
    assert address is not None
    assert re.search(rf"mov\.b64\s+{address.group(2)}, main_kernel_param_2;", ptx)
    assert f"[{address.group(1)}, {{" in ptx  # the copy's tensor-map operand
    assert _resources(ptx)["stack"] == 0


@pytest.mark.parametrize(
    "name", ["gemm_wgmma_tma", "gemm_wgmma_ws", "gemm_mma", "gemm_mma_bk64_async2_regpipe"]
)
def test_the_accumulators_stay_in_registers(name: str) -> None:
    """The epilogue's `for i in range(128): C[...] = acc[i]` is emitted unrolled, as nvcc
    unrolls it: with a loop, acc would live on the stack (512 bytes in gemm_wgmma_ws) and
    ptxas would serialize the wgmmas around its loads and stores. So are mma.sync's fragment
    loops (gemm_mma: 576 bytes of stack otherwise), and a 3-trip k loop around them whose
    fragments alternate by k % 2 (regpipe: 1,024)."""
    require_tool("ptxas")
    numbers = _resources(_nvptx(name))
    assert numbers["stack"] == 0
    assert numbers["spill stores"] == 0 and numbers["spill loads"] == 0


def _tma_copy(arch: str, *, fence: bool) -> IRModule:
    plan = _plan("tma_copy")
    text = plan.program.read_text()
    if not fence:  # the same line count, the same spans
        text = text.replace("T.ptx_fence_proxy_async()", "T.evaluate(0)")
    module = parse(text, name=str(plan.program), defines=dict(plan.defines))
    return lower_module(module, target=f"cuda -arch={arch}", for_backend=True)


@pytest.mark.parametrize(
    ("arch", "fence", "where", "op"),
    [
        ("sm_80", True, 21, "ptx_fence_proxy_async"),  # fence.proxy.async: sm_90
        ("sm_89", False, 20, "ptx_mbarrier_init"),
    ],
)
def test_older_architectures_get_the_cuda_c_error(
    arch: str, fence: bool, where: int, op: str
) -> None:
    lowered = _tma_copy(arch, fence=fence)
    with pytest.raises(DiagnosticError) as cuda_c:
        cuda_artifact(lowered, "cu", arch=arch)
    for attempt in (
        lambda: cuda_artifact(lowered, "ptx", arch=arch, ptx_via="llvm"),
        lambda: emit_ptx(lowered, arch=arch),  # the backend refuses it by itself too
    ):
        with pytest.raises(DiagnosticError) as nvptx:
            attempt()
        assert str(nvptx.value) == str(cuda_c.value)
        diagnostic = nvptx.value.diagnostics[0]
        assert f"T.{op} needs sm_90 or later" in diagnostic.message and arch in diagnostic.message
        assert diagnostic.span is not None and diagnostic.span.line == where


# a TMA store of a 2 x 64 box of S into B at (1, 64), in one bulk group, waited for
STORE = """
@T.prim_func
def main(A: T.Buffer((128,), "float16"), B: T.Buffer((4, 128), "float16")):
    tx = T.launch_thread("threadIdx.x", 128)
    S = T.alloc_buffer((128,), "float16", scope="shared")
    S[tx] = A[tx]
    T.ptx_fence_proxy_async()
    T.tvm_storage_sync("shared")
    if tx == 0:
        T.ptx_tma_store("float16", B.data, 2, 0, 4, 128, 2, 64, S.data, 0, 1, 64)
        T.ptx_tma_store_commit()
        T.ptx_tma_store_wait(0)
"""


def test_a_tma_store_assembles(tmp_path: Path) -> None:
    lowered = lower_module(parse(STORE, name="store.tir"), target="cuda -arch=sm_90a")
    ptx = str(cuda_artifact(lowered, "ptx", arch="sm_90a", ptx_via="llvm"))
    store = re.search(
        r"cp\.async\.bulk\.tensor\.2d\.global\.shared::cta\.bulk_group "
        r"\[(%rd\d+), \{(%r\d+), (%r\d+)\}\], \[(%r\d+)\];",
        ptx,
    )
    assert store is not None, ptx
    # innermost coordinate first: (1, 64) -> {64, 1}
    assert re.search(rf"mov\.b32\s+{store.group(2)}, 64;", ptx)
    assert re.search(rf"mov\.b32\s+{store.group(3)}, 1;", ptx)
    assert "cp.async.bulk.commit_group;" in ptx and "cp.async.bulk.wait_group 0;" in ptx
    assert _signature(ptx)[-1] == ("64", "b8", "[128]")
    assert ptxas_accepts(ptx, tmp_path, arch="sm_90a") == ""


def test_run_launches_the_nvptx_kernel_with_its_map(monkeypatch: pytest.MonkeyPatch) -> None:
    """`tirc run --target cuda` without NVRTC makes the PTX through LLVM: the same launch
    (arguments, then the map the driver encodes) fits the NVPTX kernel's parameters, which
    the fake driver reads from that PTX."""
    monkeypatch.setattr(cuda_toolchain, "has_nvrtc", lambda: False)
    made_by: list[str] = []
    module_image = run_cuda.module_image

    def recording(lowered: IRModule, arch: str, **options: object) -> bytes:
        image = module_image(lowered, arch, ptx=True)
        made_by.append(image.decode().split("\n", 3)[1])
        return image

    monkeypatch.setattr(run_cuda, "module_image", recording)
    plan = _plan("tma_copy")
    module = parse(
        plan.program.read_text(), name=str(plan.program), defines={"M": "128", "N": "192"}
    )
    a = np.ones((128, 192), "float16")
    driver = FakeDriver()
    run_cuda.run_on_cuda(
        module,
        "main",
        module["main"],
        "cuda -arch=sm_90a",
        {"A": a, "B": np.zeros_like(a)},
        device=fake_device(driver),
    )
    assert made_by == ["// Generated by LLVM NVPTX Back-End"]
    (made,) = driver.tensor_maps
    assert made.swizzle == CUtensorMapSwizzle.CU_TENSOR_MAP_SWIZZLE_128B
    (launch,) = driver.launches
    assert launch.grid == (3, 2, 1) and launch.args[2] == ("tensor map", made)
    assert driver.leaks() == []


# a cluster of two blocks: each writes its coordinates to shared memory and, after the cluster
# barrier, reads its peer's through mapa
CLUSTER = """
@T.prim_func
def main(A: T.Buffer((256,), "int32")):
    T.func_attr({"cluster_dims": [2, 1, 1]})
    bx = T.launch_thread("blockIdx.x", 4)
    tx = T.launch_thread("threadIdx.x", 64)
    S = T.alloc_buffer((64,), "int32", scope="shared")
    S[tx] = T.ptx_cluster_ctarank() * 100 + T.ptx_cluster_ctaid("x") + T.ptx_clusterid("x") * 10
    T.ptx_barrier_cluster_arrive()
    T.ptx_barrier_cluster_wait()
    peer: T.let[T.handle("int32", "shared")] = T.ptx_map_shared_cluster(
        S.data, 1 - T.ptx_cluster_ctarank()
    )
    P = T.decl_buffer((64,), "int32", data=peer, scope="shared")
    A[bx * 64 + tx] = P[tx] + T.ptx_cluster_nctarank() + T.ptx_nclusterid("x")
    T.ptx_barrier_cluster_arrive()
    T.ptx_barrier_cluster_wait()
"""


def _directives(ptx: str) -> list[str]:
    """The `.entry`'s performance directives, between its parameters and its body."""
    (text,) = re.findall(r"\.entry\s+\w+\s*\([^)]*\)([^{]*)\{", ptx)
    return [line.strip() for line in text.strip().splitlines()]


def test_a_cluster_kernel_requires_its_cluster_shape(tmp_path: Path) -> None:
    nvcc = require_tool("nvcc")
    lowered = lower_module(parse(CLUSTER, name="cluster.tir"), target="cuda -arch=sm_90a")
    ptx = str(cuda_artifact(lowered, "ptx", arch="sm_90a", ptx_via="llvm"))
    assert _directives(ptx) == [
        ".maxntid 64, 1, 1",
        ".explicitcluster",
        ".reqnctapercluster 2, 1, 1",
    ]
    for register in ("cluster_ctarank", "cluster_ctaid.x", "clusterid.x", "nclusterid.x"):
        assert f"%{register};" in ptx
    assert ptx.count("barrier.cluster.arrive;") == 2 and ptx.count("barrier.cluster.wait;") == 2
    assert ptx.count("mapa.u64 ") == 1
    assert ptxas_accepts(ptx, tmp_path, arch="sm_90a") == ""
    cu = tmp_path / "k.cu"
    cu.write_text(emit_cuda(lowered))
    done = subprocess.run(
        [nvcc, "-arch=sm_90a", "-ptx", str(cu), "-o", str(tmp_path / "k.ptx")],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    assert _directives((tmp_path / "k.ptx").read_text()) == _directives(ptx)


def test_a_cluster_before_sm_90_gets_the_cuda_c_error() -> None:
    lowered = lower_module(parse(CLUSTER, name="cluster.tir"), target="cuda -arch=sm_80")
    with pytest.raises(DiagnosticError) as cuda_c:
        cuda_artifact(lowered, "cu", arch="sm_80")
    with pytest.raises(DiagnosticError) as nvptx:
        emit_ptx(lowered, arch="sm_80")
    assert str(nvptx.value) == str(cuda_c.value)
    assert 'cluster.tir:2:1: error: thread-block clusters ("cluster_dims") need sm_90' in str(
        nvptx.value
    )


def test_a_bad_axis_is_refused_at_the_call() -> None:
    text = CLUSTER.replace('T.ptx_clusterid("x")', 'T.ptx_clusterid("w")')
    lowered = lower_module(parse(text, name="cluster.tir"), target="cuda -arch=sm_90a")
    with pytest.raises(DiagnosticError) as error:
        emit_ptx(lowered, arch="sm_90a")
    line = text.splitlines()[7]  # the store of S
    where = f"cluster.tir:8:{line.index('T.ptx_clusterid') + 1}"
    assert f'{where}: error: T.ptx_clusterid takes the axis "x", "y" or "z"' in str(error.value)


# a per-thread array: the loops that index it by their variable (k through k % 2, which
# lowering binds to a variable first) are emitted unrolled, the one that does not (m) stays a
# loop
REGISTER_ARRAY = """
@T.prim_func
def main(A: T.Buffer((64, 8), "float32"), B: T.Buffer((64, 8), "float32")):
    tx = T.launch_thread("threadIdx.x", 64)
    acc = T.alloc_buffer((8,), "float32", scope="local")
    for i in range(8):
        acc[i] = T.float32(0)
    for k in range(8):
        acc[k % 2] = acc[k % 2] + A[tx, k]
    for m in range(8):
        acc[0] = acc[0] * A[tx, m]
    for j in range(8):
        B[tx, j] = acc[j]
"""


def test_loops_indexing_a_register_array_are_unrolled() -> None:
    lowered = lower_module(parse(REGISTER_ARRAY, name="acc.tir"), target="cuda -arch=sm_90a")
    ir = emit_nvvm_ir(lowered, arch="sm_90a")
    assert set(re.findall(r"^(\w+)_header\w*:", ir, re.MULTILINE)) == {"m"}
    # one copy of each access a trip: i's store, k's load and store, m's (once), j's load
    accesses = re.findall(r"getelementptr float, ptr %\"acc\"", ir)
    assert len(accesses) == 8 + 2 * 8 + 2 + 8
    assert ".local" not in emit_ptx(lowered, arch="sm_90a")  # acc lives in registers


@pytest.mark.parametrize("name", ["matmul_bf16_hopper", "gemm_wgmma_tensorize_bf16"])
def test_the_bfloat16_samples_assemble(name: str, tmp_path: Path) -> None:
    ptx = _nvptx(name)
    assert "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16" in ptx
    assert ptxas_accepts(ptx, tmp_path, arch="sm_90a") == ""


BFLOAT = """
@T.prim_func
def main(A: T.Buffer((64,), "bfloat16"), B: T.Buffer((64,), "bfloat16"),
         C: T.Buffer((64,), "float16")):
    tx = T.launch_thread("threadIdx.x", 64)
    B[tx] = A[tx] * T.bfloat16(0.1) + T.bfloat16(1.00390625)
    C[tx] = T.Cast("float16", A[tx])
"""


def test_bfloat16_values(tmp_path: Path) -> None:
    import ml_dtypes

    lowered = lower_module(parse(BFLOAT, name="bf16.tir"), target="cuda -arch=sm_90a")
    ir = emit_nvvm_ir(lowered, arch="sm_90a")
    # constants rounded to the nearest bfloat16, ties to even (1 + 2^-8 lies halfway between
    # 1 and 1 + 2^-7: it goes to 1), written as the bits of that double
    constants = []
    for value in (0.1, 1.00390625):
        rounded = np.float64(np.float32(value).astype(ml_dtypes.bfloat16))
        constants.append(f"0x{int(rounded.view(np.uint64)):016x}")
    assert constants == ["0x3fb9a00000000000", "0x3ff0000000000000"]
    assert re.search(rf"fmul bfloat %\S+, {constants[0]}", ir)
    assert re.search(rf"fadd bfloat %\S+, {constants[1]}", ir)
    assert "fmul bfloat" in ir and "fadd bfloat" in ir
    # half from bfloat through float, as C converts
    assert re.search(r"fpext bfloat .* to float", ir) and re.search(r"fptrunc float .* to half", ir)
    assert ptxas_accepts(emit_ptx(lowered, arch="sm_90a"), tmp_path, arch="sm_90a") == ""


def test_run_makes_the_ptx_through_llvm_when_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    """`tirc run --target cuda --ptx-via llvm` takes the NVPTX path even where NVRTC is
    there (how a GPU session checks this path's kernels on the device)."""
    monkeypatch.setattr(cuda_toolchain, "has_nvrtc", lambda: True)
    made_by: list[str] = []
    module_image = run_cuda.module_image

    def recording(lowered: IRModule, arch: str, **options: object) -> bytes:
        assert options["via"] == "llvm"
        image = module_image(lowered, arch, ptx=True, via="llvm")
        made_by.append(image.decode().split("\n", 3)[1])
        return image

    monkeypatch.setattr(run_cuda, "module_image", recording)
    driver = FakeDriver()
    monkeypatch.setattr(run_cuda, "Device", lambda: fake_device(driver))
    program = _plan("tma_copy").program
    args = ["run", str(program), "-D", "M=128", "-D", "N=192", "--target", "cuda -arch=sm_90a"]
    assert main([*args, "--ptx-via", "llvm"]) == 0
    assert made_by == ["// Generated by LLVM NVPTX Back-End"]
    assert len(driver.tensor_maps) == 1


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--target", "cpu", "--ptx-via", "llvm"], "--ptx-via llvm says how CUDA's PTX is made"),
        (["--target", "cuda", "--ptx-via", "nvrtc", "-O", "2"], "NVRTC makes the PTX here"),
    ],
)
def test_run_refuses_a_ptx_via_it_would_not_use(
    options: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    program = _plan("tma_copy").program
    assert main(["run", str(program), "-D", "M=128", "-D", "N=192", *options]) == 1
    assert message in capsys.readouterr().err

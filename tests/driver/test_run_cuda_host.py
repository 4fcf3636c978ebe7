"""The host side of `tirc run --target cuda` against the fake driver: which function runs,
launches checked against the device's limits before they go (a clear error naming the
kernel), faults named and never hidden by the clean-up after them, and the host's own
arithmetic (allocation sizes, host variables, scalar arguments)."""

from __future__ import annotations

import contextlib
import io
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from tests.runtime.fake_cuda import CUdevice_attribute, CUresult, FakeDriver, fake_device
from tirc.cli.main import main
from tirc.diagnostics import DiagnosticError
from tirc.driver import run_cuda
from tirc.driver.inputs import complete_arguments
from tirc.driver.run_cuda import run_on_cuda
from tirc.ir.function import IRModule
from tirc.runtime.cuda_driver import Device
from tirc.runtime.cuda_host import HostRun
from tirc.text import parse

# two kernels with a global buffer between them, a host variable, an int and a float scalar
TWO_STAGES = """
# from tvm.script import tirx as T

@T.prim_func
def main(
    A: T.Buffer(("n",), "float32"), C: T.Buffer(("n",), "float32"), n: T.int32, scale: T.float32
):
    B = T.alloc_buffer((n,), "float32")
    for bx in T.thread_binding((n + 127) // 128, thread="blockIdx.x"):
        for tx in T.thread_binding(128, thread="threadIdx.x"):
            if bx * 128 + tx < n:
                B[bx * 128 + tx] = A[bx * 128 + tx] * scale
    for bx in T.thread_binding((n + 127) // 128, thread="blockIdx.x"):
        for tx in T.thread_binding(128, thread="threadIdx.x"):
            if bx * 128 + tx < n:
                C[bx * 128 + tx] = B[bx * 128 + tx] + T.float32(1)
"""

# SHARED floats of shared memory, GRID blocks of THREADS threads
STAGED = """
# from tvm.script import tirx as T

@T.prim_func
def main(A: T.Buffer((1024,), "float32"), B: T.Buffer((1024,), "float32")):
    bx = T.launch_thread("blockIdx.y", GRID)
    tx = T.launch_thread("threadIdx.x", THREADS)
    S = T.alloc_buffer((SHARED,), "float32", scope="shared")
    S[tx] = A[tx % 1024]
    T.tvm_storage_sync("shared")
    B[tx % 1024] = S[(tx + 1) % THREADS]
"""

PRIVATE = """
# from tvm.script import tirx as T

@T.prim_func(private=True)
def add_one(A: T.Buffer((256,), "float32"), B: T.Buffer((256,), "float32")):
    for i in T.thread_binding(256, thread="threadIdx.x"):
        B[i] = A[i] + T.float32(1)
"""

PRIVATE_MAIN = """
# from tvm.script import ir as I
# from tvm.script import tirx as T

@I.ir_module
class Module:
    @T.prim_func(private=True)
    def main(A: T.Buffer((256,), "float32"), B: T.Buffer((256,), "float32")):
        for i in T.thread_binding(256, thread="threadIdx.x"):
            B[i] = A[i] + T.float32(1)
"""


def staged(shared: int = 256, threads: int = 256, grid: int = 4) -> IRModule:
    text = STAGED.replace("SHARED", str(shared)).replace("THREADS", str(threads))
    return parse(text.replace("GRID", str(grid)), name="staged.tir")


def run(
    module: IRModule, fake: FakeDriver, name: str = "main", **sizes: int
) -> dict[str, np.ndarray | int]:
    function = module[name]
    given = {p.name: np.array(0.5, "float32") for p in function.params if p.dtype.is_float}
    args = complete_arguments(function, given, 0, "", sizes)
    run_on_cuda(module, name, function, "cuda", args, device=fake_device(fake))
    return args


def invoke(*args: str) -> tuple[int, str]:
    output = io.StringIO()
    with contextlib.redirect_stdout(output), contextlib.redirect_stderr(output):
        code = main(list(args))
    return code, output.getvalue()


@contextlib.contextmanager
def fake_gpu(monkeypatch: pytest.MonkeyPatch, fake: FakeDriver) -> Iterator[FakeDriver]:
    """`tirc run --target cuda` on the fake driver."""
    monkeypatch.setattr(run_cuda, "Device", lambda: Device(fake, load_ptx=True))
    yield fake


# -- the host's arithmetic ---------------------------------------------------------------------


def test_host_allocation_variables_and_scalars_reach_the_kernels() -> None:
    fake = FakeDriver()
    args = run(parse(TWO_STAGES, name="two.tir"), fake, n=1000)
    first, second = fake.launches
    assert (first.kernel, second.kernel) == ("main_kernel_0", "main_kernel_1")
    assert first.grid == second.grid == (8, 1, 1)  # (1000 + 127) // 128, a host variable
    assert first.block == (128, 1, 1)
    kinds = [kind for kind, _ in first.args]
    values = [value for _, value in first.args]
    assert kinds == ["u64", "u32", "f32", "u64", "u32"]
    assert values[1:3] == [1000, 0.5] and values[4] == 8
    # B lives on the device between the launches: allocated at its size in bytes, the same
    # pointer to both kernels, and freed
    pointer = values[3]
    assert second.args[2] == ("u64", pointer)
    assert len(fake.allocations[pointer].data) == 1000 * 4
    assert not fake.allocations[pointer].live
    assert fake.leaks() == []
    # the fake runs no kernel: the buffers come back as they went
    assert isinstance(args["A"], np.ndarray) and args["A"].shape == (1000,)


def test_bench_times_with_events_and_releases_them() -> None:
    fake = FakeDriver()
    module = staged()
    function = module["main"]
    args = complete_arguments(function, {}, 0, "")
    _, timing, arch = run_on_cuda(
        module, "main", function, "cuda", args, bench=True, repeats=3, device=fake_device(fake)
    )
    assert arch == "sm_90"
    assert timing is not None and timing.repeats == 3 and timing.median == 0.25e-3
    # the checked call, the warm-up, the kernel the repeats queue behind, the repeats
    kernels = [launch.kernel for launch in fake.launches]
    assert len(kernels) == 1 + 1 + 1 + 3 and kernels[2] == "tirc_spin"
    assert "tirc_spin" not in kernels[:2] + kernels[3:]
    assert fake.leaks() == []


# -- which function runs -------------------------------------------------------------------


def test_a_private_function_runs(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    path = tmp_path / "private.tir"
    path.write_text(PRIVATE)
    with fake_gpu(monkeypatch, FakeDriver()) as fake:
        code, output = invoke("run", str(path), "--target", "cuda")
    assert code == 0, output
    assert "ran add_one on cuda" in output
    assert [launch.kernel for launch in fake.launches] == ["add_one_kernel"]


def test_a_private_main_in_a_module_runs() -> None:
    fake = FakeDriver()
    run(parse(PRIVATE_MAIN, name="module.tir"), fake)
    assert [launch.kernel for launch in fake.launches] == ["main_kernel"]


def test_a_missing_function_is_a_clear_error() -> None:
    module = staged()
    args = complete_arguments(module["main"], {}, 0, "")
    with pytest.raises(DiagnosticError, match=r"no function 'other' to run on the GPU \(.*main"):
        run_on_cuda(module, "other", module["main"], "cuda", args, device=fake_device())


# -- launches checked against the device ---------------------------------------------------


def test_shared_memory_past_48_kib_is_opted_in() -> None:
    fake = FakeDriver()
    run(staged(shared=50_000), fake)  # 200,000 bytes: dynamic, above the default 48 KiB
    (launch,) = fake.launches
    assert launch.dynamic_shared == 200_000
    assert [(name, value) for name, _, value in fake.function_attributes] == [
        ("main_kernel", 200_000)
    ]


def test_shared_memory_past_the_device_is_an_error_naming_the_kernel() -> None:
    fake = FakeDriver()
    with pytest.raises(DiagnosticError) as caught:
        run(staged(shared=70_000), fake)
    message = str(caught.value)
    assert "kernel main_kernel needs 280000 bytes of shared memory a block" in message
    assert "allows at most 232448" in message
    assert "cuFuncSetAttribute" not in message
    assert fake.launches == [] and fake.leaks() == []


def test_the_limit_is_the_devices() -> None:
    smaller = FakeDriver()
    smaller.attributes[CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN] = (
        100 * 1024
    )
    with pytest.raises(DiagnosticError, match="needs 200000 bytes .* allows at most 102400"):
        run(staged(shared=50_000), smaller)


def test_too_many_threads_a_block_is_an_error_naming_the_kernel() -> None:
    fake = FakeDriver()
    with pytest.raises(
        DiagnosticError,
        match=r"kernel main_kernel launches 2048 along threadIdx.x, but the device allows at "
        r"most 1024",
    ):
        run(staged(shared=2048, threads=2048), fake)
    assert fake.launches == [] and fake.leaks() == []


def test_a_block_over_the_threads_limit_is_an_error() -> None:
    fake = FakeDriver()
    fake.attributes[CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK] = 512
    with pytest.raises(
        DiagnosticError,
        match=r"kernel main_kernel launches 1024 threads a block \(1024 x 1 x 1\), but the "
        r"device allows 512",
    ):
        run(staged(shared=1024, threads=1024), fake)


def test_a_grid_over_the_limit_is_an_error() -> None:
    with pytest.raises(
        DiagnosticError, match=r"launches 70000 along blockIdx.y, but the device allows at most"
    ):
        run(staged(grid=70_000), FakeDriver())


# -- faults and clean-up -----------------------------------------------------------------------


def test_a_fault_names_the_kernel_and_the_clean_up_does_not_hide_it() -> None:
    fake = FakeDriver(fault_in="main_kernel_1")
    with pytest.raises(DiagnosticError) as caught:
        run(parse(TWO_STAGES, name="two.tir"), fake, n=1000)
    (diagnostic,) = caught.value.diagnostics
    assert diagnostic.message.startswith(
        "kernel main_kernel_1 faulted on the GPU (launch 2 of main, grid 8 x 1 x 1, "
        "block 128 x 1 x 1): CUDA_ERROR_ILLEGAL_ADDRESS (an illegal memory access"
    )
    notes = " ".join(note.message for note in diagnostic.notes)
    assert "compute-sanitizer" in notes
    assert "releasing the GPU's memory after it also failed" in notes
    # every release was tried, though each failed once the context was lost
    for call in ("cuStreamDestroy", "cuMemFree", "cuModuleUnload"):
        assert call in fake.calls[fake.calls.index("cuStreamSynchronize") :]


def test_a_fault_outside_the_checked_call_still_says_a_kernel_faulted() -> None:
    fake = FakeDriver()
    fake.fail["cuStreamSynchronize"] = CUresult.CUDA_ERROR_LAUNCH_FAILED
    with pytest.raises(DiagnosticError, match="faulted on the GPU.*CUDA_ERROR_LAUNCH_FAILED"):
        run(staged(), fake)


def test_a_failed_release_after_a_clean_run_is_reported() -> None:
    fake = FakeDriver(fail={"cuMemFree": CUresult.CUDA_ERROR_INVALID_VALUE})
    with pytest.raises(DiagnosticError, match="CUDA driver: cuMemFree failed: CUDA_ERROR_INVALID"):
        run(staged(), fake)
    assert "cuModuleUnload" in fake.calls  # the releases after it still happen
    assert len(fake.modules) == 0


def test_a_failed_release_after_an_error_is_a_note_on_that_error() -> None:
    fake = FakeDriver(
        fail={
            "cuLaunchKernel": CUresult.CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES,
            "cuModuleUnload": CUresult.CUDA_ERROR_INVALID_HANDLE,
        }
    )
    with pytest.raises(DiagnosticError) as caught:
        run(staged(), fake)
    (diagnostic,) = caught.value.diagnostics
    assert diagnostic.message.startswith(
        "CUDA driver: cuLaunchKernel failed: CUDA_ERROR_LAUNCH_OUT"
    )
    assert any("cuModuleUnload: CUDA_ERROR_INVALID_HANDLE" in n.message for n in diagnostic.notes)


def test_an_internal_error_is_not_replaced_by_the_clean_up(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakeDriver(fault_in="main_kernel")

    def broken(*args: object) -> object:
        raise ZeroDivisionError("a tirc bug")

    monkeypatch.setattr(HostRun, "_check_launch", broken)
    with pytest.raises(ZeroDivisionError):
        run(staged(), fake)
    assert fake.leaks() == []


# -- the command line ---------------------------------------------------------------------------


def test_sizes_reach_a_cuda_run(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    path = tmp_path / "two.tir"
    path.write_text(TWO_STAGES)
    np.savez(tmp_path / "in.npz", scale=np.array(2.0, "float32"))
    with fake_gpu(monkeypatch, FakeDriver()) as fake:
        code, output = invoke(
            "run",
            str(path),
            "--target",
            "cuda",
            "--size",
            "n=300",
            "--inputs",
            str(tmp_path / "in.npz"),
        )
    assert code == 0, output
    assert "n = 300 (--size)" in output
    assert fake.launches[0].grid == (3, 1, 1)

"""`tirc compile --target cuda --abi tvm-ffi`: every gallery sample's CUDA C with its packed
functions compiles with nvcc into one shared library, which tvm_ffi loads on a machine with
no GPU too, and whose functions refuse host arrays, naming the parameter. On a GPU (marked
gpu), tirc.build(target="cuda") runs on torch CUDA tensors against the interpreter."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import tirc
from tests.api.helpers import (
    SAMPLES,
    SCALE,
    device_tensor,
    expect,
    fake_device_tensor,
    gallery_kernels,
    inputs,
)
from tirc.cli.main import main

tvm_ffi = pytest.importorskip(
    "tvm_ffi", reason="apache-tvm-ffi is not installed (pip install -e '.[dev]')"
)


@pytest.fixture(scope="module")
def gallery_library(tmp_path_factory: pytest.TempPathFactory) -> Any:  # a tvm_ffi.Module
    if shutil.which("nvcc") is None:
        pytest.skip("nvcc is not installed")
    directory = tmp_path_factory.mktemp("cuda")
    sources = []
    for kernel in gallery_kernels():
        cu = directory / f"{kernel}.cu"
        plan = str(SAMPLES / f"{kernel}.cuda.plan.json")
        command = ["compile", str(SAMPLES / f"{kernel}.tir"), "--plan", plan, "--target", "cuda"]
        command += ["--emit", "cu", "--abi", "tvm-ffi", "--prefix", f"{kernel}_", "-o", str(cu)]
        assert main(command) == 0
        sources.append(str(cu))
    library = directory / "gallery.so"
    nvcc = ["nvcc", "-shared", "-Xcompiler", "-fPIC", "-arch=sm_80", "-o", str(library)]
    done = subprocess.run([*nvcc, *sources], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return tvm_ffi.load_module(str(library))


@pytest.mark.slow  # nvcc over the whole gallery: a minute
@pytest.mark.parametrize("kernel", gallery_kernels())
def test_gallery_packed_functions_compile_and_check_the_device(
    gallery_library: Any, kernel: str
) -> None:
    function = gallery_library[f"{kernel}_main"]
    args = inputs(SAMPLES / f"{kernel}.tir")
    with pytest.raises(
        ValueError, match=f"{kernel}_main: .* must be on a CUDA device, got a tensor on cpu"
    ):
        function(*args.values())
    with pytest.raises(TypeError, match=f"takes {len(args)} arguments, got 0"):
        function()
    if not has_gpu():  # right shapes and dtypes pass every check, up to the launch
        arrays = [np.asarray(a) for a in args.values()]
        fakes = [fake_device_tensor(a.shape, str(a.dtype)) for a in arrays]
        with pytest.raises(RuntimeError, match=f"{kernel}_main: the launch failed: "):
            function(*fakes)


@pytest.fixture(scope="module")
def scale_cuda(tmp_path_factory: pytest.TempPathFactory) -> tirc.Module:
    """docs/examples/scale.tir built for cuda by tirc.build: its CUDA C with the packed
    functions, compiled by nvcc and loaded through tvm_ffi."""
    if shutil.which("nvcc") is None:
        pytest.skip("nvcc is not installed")
    return tirc.build(SCALE, target="cuda -arch=sm_80")


def has_gpu() -> bool:
    return (
        shutil.which("nvidia-smi") is not None
        and subprocess.run(["nvidia-smi", "-L"], capture_output=True).returncode == 0
    )


def test_cuda_build_checks_tensors_before_the_launch(scale_cuda: tirc.Module) -> None:
    function = scale_cuda.main
    with pytest.raises(ValueError, match="main: A must be on a CUDA device, got a tensor on cpu"):
        function(np.zeros(8, "float32"), np.zeros(8, "float32"))
    a, b = fake_device_tensor((8,)), fake_device_tensor((6,))
    with pytest.raises(
        ValueError, match=r"main: B.shape\[0\] is 6, but must equal n = 8 \(as A.shape\[0\] is\)"
    ):
        function(a, b)
    with pytest.raises(ValueError, match="main: B is on device 1, but A on device 0"):
        function(a, fake_device_tensor((8,), device=(2, 1)))
    with pytest.raises(TypeError, match="main: A must have dtype float32, got int32"):
        function(fake_device_tensor((8,), "int32"), a)
    if not has_gpu():  # the tensors pass every check; there is no device to launch on
        with pytest.raises(RuntimeError, match="main: the launch failed: "):
            function(a, fake_device_tensor((8,)))


def test_cuda_build_exports_its_library_and_source(scale_cuda: tirc.Module, tmp_path: Path) -> None:
    scale_cuda.export(tmp_path / "scale.cu")
    assert 'extern "C" int __tvm_ffi_main(' in (tmp_path / "scale.cu").read_text()
    scale_cuda.export(tmp_path / "scale.so")
    function = tvm_ffi.load_module(str(tmp_path / "scale.so"))["main"]
    with pytest.raises(ValueError, match="must be on a CUDA device"):
        function(np.zeros(8, "float32"), np.zeros(8, "float32"))


def test_launch_on_the_stream_tvm_ffi_passes(tmp_path: Path) -> None:
    cu = tmp_path / "scale.cu"
    assert main(["compile", str(SCALE), "--target", "cuda", "--abi", "tvm-ffi", "-o", str(cu)]) == 0
    text = cu.read_text()
    assert 'extern "C" int __tvm_ffi_main(void* self, const tirc_ffi::Any* args' in text
    assert "main_launch((float*)data(a_tensor), (float*)data(b_tensor), n, " in text
    assert "(cudaStream_t)TVMFFIEnvGetStream(2, a_tensor->device_id)" in text


def test_cuda_c_abi_is_unchanged(tmp_path: Path) -> None:
    plain, c = tmp_path / "plain.cu", tmp_path / "c.cu"
    assert main(["compile", str(SCALE), "--target", "cuda", "-o", str(plain)]) == 0
    assert main(["compile", str(SCALE), "--target", "cuda", "--abi", "c", "-o", str(c)]) == 0
    assert plain.read_text() == c.read_text()
    assert "tvm_ffi" not in plain.read_text()


@pytest.mark.gpu
@pytest.mark.parametrize("kernel", gallery_kernels())
def test_build_for_cuda_runs_on_torch_cuda_tensors(kernel: str) -> None:
    torch = pytest.importorskip("torch", reason="torch is not installed")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    import tirc

    module = tirc.build(
        SAMPLES / f"{kernel}.tir", target="cuda", plan=SAMPLES / f"{kernel}.cuda.plan.json"
    )
    args = inputs(SAMPLES / f"{kernel}.tir")
    tensors = {
        k: torch.from_numpy(np.array(v)).cuda() if isinstance(v, np.ndarray) else v
        for k, v in args.items()
    }
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        module.main(*tensors.values())
    stream.synchronize()
    got = {k: v.cpu().numpy() if hasattr(v, "cpu") else v for k, v in tensors.items()}
    expect(SAMPLES / f"{kernel}.tir", args, got)


@pytest.mark.gpu
@pytest.mark.parametrize("kernel", gallery_kernels())
def test_build_for_cuda_runs_on_device_memory(kernel: str) -> None:
    """The same without torch: device memory from the CUDA driver (cuda-python), handed over
    as DLPack tensors."""
    pytest.importorskip("cuda.bindings", reason="cuda-python is not installed")
    import tirc
    from tirc.runtime.cuda_driver import Device

    try:
        device = Device()
    except Exception as error:  # no driver, or no device
        pytest.skip(f"no CUDA device: {error}")
    path = SAMPLES / f"{kernel}.tir"
    module = tirc.build(path, target="cuda", plan=SAMPLES / f"{kernel}.cuda.plan.json")
    args = inputs(path)
    pointers = {k: device.allocate(v.nbytes) for k, v in args.items() if isinstance(v, np.ndarray)}
    try:
        tensors = {}
        for name, value in args.items():
            if isinstance(value, np.ndarray):
                device.call("cuMemcpyHtoD", pointers[name], value.ctypes.data, value.nbytes)
                tensors[name] = device_tensor(value.shape, str(value.dtype), int(pointers[name]))
            else:
                tensors[name] = value
        module.main(*tensors.values())
        device.call("cuCtxSynchronize")
        got: dict[str, object] = {}
        for name, value in args.items():
            if isinstance(value, np.ndarray):
                got[name] = out = np.empty_like(value)
                device.call("cuMemcpyDtoH", out.ctypes.data, pointers[name], out.nbytes)
            else:
                got[name] = value
    finally:
        for pointer in pointers.values():
            device.call("cuMemFree", pointer)
    expect(path, args, got)

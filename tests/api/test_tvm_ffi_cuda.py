"""`tirc compile --target cuda --abi tvm-ffi`: every gallery sample's CUDA C with its packed
functions compiles with nvcc into one shared library, which tvm_ffi loads on a machine with
no GPU too, and whose functions refuse host arrays, naming the parameter. On a GPU (marked
gpu), tirc.build(target="cuda") runs on torch CUDA tensors against the interpreter."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from tests.api.helpers import SAMPLES, SCALE, expect, gallery_kernels, inputs
from tirc.cli.main import main

tvm_ffi = pytest.importorskip(
    "tvm_ffi", reason="apache-tvm-ffi is not installed (pip install -e '.[dev]')"
)


@pytest.fixture(scope="module")
def gallery_library(tmp_path_factory: pytest.TempPathFactory) -> object:
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
    gallery_library: object, kernel: str
) -> None:
    function = gallery_library[f"{kernel}_main"]  # type: ignore[index]
    args = inputs(SAMPLES / f"{kernel}.tir")
    with pytest.raises(
        ValueError, match=f"{kernel}_main: .* must be on a CUDA device, got a tensor on cpu"
    ):
        function(*args.values())
    with pytest.raises(TypeError, match=f"takes {len(args)} arguments, got 0"):
        function()


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

"""`tirc run --target cuda`: without a usable driver or device, a clear error and exit 1 (the
path this machine takes); on a GPU (marked `gpu`), the results checked against numpy and the
interpreter, the timing reported and the buffers saved."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import numpy as np
import pytest

from tests.codegen_cuda.helpers import GPU_SAMPLES
from tirc.cli.main import main
from tirc.driver.run_cuda import pick_arch
from tirc.driver.target import parse_target

KERNELS = Path(__file__).parent / "kernels"
TC = [
    str(GPU_SAMPLES / "matmul_fp16_tc.tir"),
    "--plan",
    str(GPU_SAMPLES / "matmul_fp16_tc.plan.json"),
]


def _has_device() -> bool:
    try:
        from cuda.bindings import driver

        (error,) = driver.cuInit(0)
        if error != driver.CUresult.CUDA_SUCCESS:
            return False
        error, count = driver.cuDeviceGetCount()
        return error == driver.CUresult.CUDA_SUCCESS and count > 0
    except (ImportError, RuntimeError):
        return False


HAS_DEVICE = _has_device()


def invoke(*args: str) -> tuple[int, str]:
    """The exit status of `tirc ARGS` and what it printed (stdout and stderr)."""
    output = io.StringIO()
    with contextlib.redirect_stdout(output), contextlib.redirect_stderr(output):
        code = main(list(args))
    return code, output.getvalue()


@pytest.mark.skipif(HAS_DEVICE, reason="this machine has a CUDA device")
def test_without_a_device_the_run_stops_with_a_clear_error() -> None:
    code, output = invoke("run", *TC, "--target", "cuda", "-D", "N=64", "--check")
    assert code == 1, output
    assert (
        output.startswith("error: --target cuda: ") or "--target cuda needs cuda-python" in output
    )
    assert "Traceback" not in output


def test_arch_comes_from_the_target_or_the_device() -> None:
    assert pick_arch(parse_target("cuda"), "sm_90") == "sm_90"
    assert pick_arch(parse_target("cuda -arch=sm_80"), "sm_90") == "sm_80"
    assert (
        pick_arch(parse_target("cuda"), "sm_87") == "sm_86"
    )  # the newest tirc knows below the device's


def test_check_needs_a_compiled_target() -> None:
    code, output = invoke("run", str(GPU_SAMPLES / "matmul.tir"), "--check")
    assert code == 1
    assert "give --target cpu or cuda" in output


# -- on a GPU ---------------------------------------------------------------------------------


@pytest.mark.gpu
@pytest.mark.skipif(not HAS_DEVICE, reason="no CUDA device")
def test_tensor_core_sample_on_the_gpu_matches_numpy(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    a = rng.uniform(-1, 1, (128, 128)).astype(np.float16)
    b = rng.uniform(-1, 1, (128, 128)).astype(np.float16)
    np.savez(tmp_path / "in.npz", A=a, B=b, C=np.zeros((128, 128), np.float32))
    out = tmp_path / "out.npz"
    code, output = invoke(
        "run",
        *TC,
        "--target",
        "cuda",
        "-D",
        "N=128",
        "--inputs",
        str(tmp_path / "in.npz"),
        "--save",
        str(out),
        "--check",
        "--bench",
    )
    assert code == 0, output
    assert "check: the GPU agrees with the interpreter" in output
    assert re.search(r"GB/s moved, \d+\.\d\d [GT]FLOP/s", output), output  # 2 N^3 counted
    with np.load(out) as saved:
        got = saved["C"]
    np.testing.assert_allclose(
        got, a.astype(np.float64) @ b.astype(np.float64), rtol=1e-3, atol=1e-3
    )


@pytest.mark.gpu
@pytest.mark.skipif(not HAS_DEVICE, reason="no CUDA device")
@pytest.mark.parametrize("name", ["mma_f16f32", "mma_f16f16_trans", "mma_s8s32"])
def test_ptx_kernels_on_the_gpu_match_the_interpreter(name: str) -> None:
    code, output = invoke("run", str(KERNELS / f"{name}.tir"), "--target", "cuda", "--check")
    assert code == 0, output
    assert "check: the GPU agrees with the interpreter" in output


@pytest.mark.gpu
@pytest.mark.skipif(not HAS_DEVICE, reason="no CUDA device")
@pytest.mark.parametrize("name", ["elementwise", "matmul", "softmax"])
def test_gpu_samples_run_and_check(name: str) -> None:
    code, output = invoke(
        "run",
        str(GPU_SAMPLES / f"{name}.tir"),
        "--plan",
        str(GPU_SAMPLES / f"{name}.plan.json"),
        "--target",
        "cuda",
        "--check",
        "--bench",
    )
    assert code == 0, output
    assert "check: the GPU agrees with the interpreter" in output
    assert "CUDA events" in output

"""The GPU samples: scheduled and lowered for cuda, they compute what the unscheduled program
does in the interpreter's thread model (which also catches shared-memory races a missing
barrier would cause), and both backends' output passes NVIDIA's tools."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests.codegen_cuda.helpers import SAMPLE_NAMES, nvcc_accepts, ptxas_accepts, sample
from tirc.codegen.cuda import emit_cuda
from tirc.codegen.nvptx import emit_ptx
from tirc.driver.cuda_toolchain import has_nvrtc, ptx_from_cuda
from tirc.interp import random_inputs, run


@pytest.mark.parametrize("name", SAMPLE_NAMES)
def test_lowered_sample_matches_the_original(name: str) -> None:
    original, lowered = sample(name)
    inputs = random_inputs(original["main"], 0)
    expected = {key: np.array(value, copy=True) for key, value in inputs.items()}
    got = {key: np.array(value, copy=True) for key, value in inputs.items()}
    run(original["main"], expected)
    run(lowered["main"], got, module=lowered)
    for key in expected:
        np.testing.assert_allclose(got[key], expected[key], rtol=1e-5, atol=1e-6, err_msg=key)


@pytest.mark.parametrize("name", SAMPLE_NAMES)
def test_sample_cuda_c_compiles(name: str, tmp_path: Path) -> None:
    _, lowered = sample(name)
    complaint = nvcc_accepts(emit_cuda(lowered), tmp_path)
    assert not complaint, complaint


@pytest.mark.parametrize("name", SAMPLE_NAMES)
def test_sample_ptx_through_llvm_assembles(name: str, tmp_path: Path) -> None:
    _, lowered = sample(name)
    complaint = ptxas_accepts(emit_ptx(lowered, arch="sm_90"), tmp_path)
    assert not complaint, complaint


@pytest.mark.skipif(not has_nvrtc(), reason="cuda-python (NVRTC) is not installed")
@pytest.mark.parametrize("name", SAMPLE_NAMES)
def test_sample_ptx_through_nvrtc_assembles(name: str, tmp_path: Path) -> None:
    _, lowered = sample(name)
    complaint = ptxas_accepts(ptx_from_cuda(emit_cuda(lowered), "sm_90"), tmp_path)
    assert not complaint, complaint


def test_matmul_sample_has_barriers() -> None:
    _, lowered = sample("matmul")
    assert emit_cuda(lowered).count("__syncthreads();") == 2

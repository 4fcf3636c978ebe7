"""The GPU samples on a real device through the CUDA driver API (cuda-python), against the
interpreter; PTX from both paths. Marked `gpu`; skipped where there is no device."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest

from tests.codegen_cuda.helpers import SAMPLE_NAMES, sample
from tirc.codegen.abi import ParamKind, function_abi
from tirc.codegen.cuda import emit_cuda
from tirc.codegen.cuda.kernels import KernelLaunch, device_programs
from tirc.codegen.nvptx import emit_ptx
from tirc.interp import random_inputs, run
from tirc.ir import expr as E
from tirc.ir.functor import walk

pytestmark = pytest.mark.gpu


def _driver():  # type: ignore[no-untyped-def]
    try:
        from cuda.bindings import driver
    except ImportError:
        pytest.skip("cuda-python is not installed")
    try:
        (error,) = driver.cuInit(0)
    except RuntimeError as failure:  # no libcuda.so: no driver, so no device
        pytest.skip(f"no CUDA driver: {failure}")
    if error != driver.CUresult.CUDA_SUCCESS:
        pytest.skip(f"no CUDA device: {error}")
    error, count = driver.cuDeviceGetCount()
    if error != driver.CUresult.CUDA_SUCCESS or count == 0:
        pytest.skip("no CUDA device")
    return driver


def _checked(result):  # type: ignore[no-untyped-def]
    error, *values = result
    assert int(error) == 0, error
    return values[0] if len(values) == 1 else values


def run_on_gpu(ptx: str, lowered, arrays: dict[str, np.ndarray]) -> None:  # type: ignore[no-untyped-def]
    driver = _driver()
    device = _checked(driver.cuDeviceGet(0))
    context = _checked(driver.cuDevicePrimaryCtxRetain(device))
    _checked(driver.cuCtxSetCurrent(context))
    module = _checked(driver.cuModuleLoadData(ptx.encode()))
    program = dict(device_programs(lowered))["main"]
    device_memory: dict[E.Var, int] = {}
    names: dict[E.Var, str] = {}
    for param in function_abi(program.func):
        if param.kind is not ParamKind.BUFFER:
            continue
        array = arrays[param.name]
        pointer = _checked(driver.cuMemAlloc(array.nbytes))
        _checked(driver.cuMemcpyHtoD(pointer, array.ctypes.data, array.nbytes))
        device_memory[param.var] = int(pointer)
        names[param.var] = param.name

    def launch(node: object) -> None:
        if not isinstance(node, KernelLaunch):
            return
        kernel = program.kernels[node.index]
        function = _checked(driver.cuModuleGetFunction(module, kernel.name.encode()))
        tags = [f"{kind}.{axis}" for kind in ("blockIdx", "threadIdx") for axis in "xyz"]
        dims = [kernel.dims.get(tag) for tag in tags]
        extents = [1 if d is None else kernel.at_launch(d, node).value for d in dims]  # type: ignore[attr-defined]
        values = tuple(device_memory[arg] for arg in node.args)  # type: ignore[index]
        arguments = (values, tuple(ctypes.c_void_p for _ in values))
        _checked(driver.cuLaunchKernel(function, *extents, 0, 0, arguments, 0))

    walk(program.host, launch)
    _checked(driver.cuCtxSynchronize())
    for var, pointer in device_memory.items():
        array = arrays[names[var]]
        _checked(driver.cuMemcpyDtoH(array.ctypes.data, pointer, array.nbytes))
        _checked(driver.cuMemFree(pointer))


@pytest.mark.parametrize("via", ["nvrtc", "llvm"])
@pytest.mark.parametrize("name", SAMPLE_NAMES)
def test_sample_on_gpu_matches_the_interpreter(name: str, via: str) -> None:
    _driver()
    original, lowered = sample(name)
    if via == "nvrtc":
        from tirc.driver.cuda_toolchain import ptx_from_cuda

        ptx = ptx_from_cuda(emit_cuda(lowered), "sm_90")
    else:
        ptx = emit_ptx(lowered, arch="sm_90")
    inputs = random_inputs(original["main"], 0)
    expected = {key: np.array(value, copy=True) for key, value in inputs.items()}
    got = {key: np.ascontiguousarray(np.array(value, copy=True)) for key, value in inputs.items()}
    run(original["main"], expected)
    run_on_gpu(ptx, lowered, got)
    for key in expected:
        np.testing.assert_allclose(got[key], expected[key], rtol=1e-5, atol=1e-5, err_msg=key)

"""The fake CUDA driver refuses what a GPU would refuse or be hurt by: if it let a misuse
through, the host-side tests over it would prove nothing."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest

from tests.runtime.fake_cuda import CUfunction_attribute, CUresult, FakeDriver, Misuse, parse_ptx

# as LLVM's NVPTX backend writes it
LLVM_PTX = """
.version 8.0
.target sm_90
.address_size 64

.visible .entry k(
	.param .u64 .ptr .align 1 k_param_0,
	.param .u32 k_param_1,
	.param .f32 k_param_2
)
{
	.shared .align 16 .b8 k_tile[8192];
	.shared .align 16 .f32 k_one;
	ld.param.b64 	%rd1, [k_param_0];
	ret;
}
"""

# as NVRTC writes it: no `.ptr`, module-level shared arrays, launch bounds
NVRTC_PTX = """
.version 8.8
.target sm_90
.address_size 64

.shared .align 4 .b8 _ZZ1gE4tile[1024];
.extern .shared .align 16 .b8 buf_dyn_shmem[];

.visible .entry g(
	.param .u64 g_param_0,
	.param .u64 g_param_1,
	.param .align 8 .b8 g_param_2[16]
)
.maxntid 256, 1, 1
{
	mov.u64 	%rd1, _ZZ1gE4tile;
	ret;
}
"""


def loaded(ptx: str, name: str) -> tuple[FakeDriver, object, object]:
    driver = FakeDriver()
    driver.cuInit(0)
    error, module = driver.cuModuleLoadData(ptx.encode() + b"\0")
    assert error == CUresult.CUDA_SUCCESS
    error, function = driver.cuModuleGetFunction(module, name.encode())
    assert error == CUresult.CUDA_SUCCESS
    return driver, module, function


def launch(
    driver: FakeDriver,
    function: object,
    values: tuple,
    kinds: tuple,
    block: int = 128,
    shared: int = 0,
) -> tuple:
    _, stream = driver.cuStreamCreate(0)
    return driver.cuLaunchKernel(function, 1, 1, 1, block, 1, 1, shared, stream, (values, kinds), 0)


def test_ptx_entries_are_read() -> None:
    (k,) = parse_ptx(LLVM_PTX).values()
    assert [(p.kind, p.bytes, p.is_pointer) for p in k.params] == [
        ("u", 8, True),
        ("u", 4, False),
        ("f", 4, False),
    ]
    assert k.static_shared == 8192 + 4 and k.max_threads is None
    (g,) = parse_ptx(NVRTC_PTX).values()
    assert [(p.kind, p.bytes) for p in g.params] == [("u", 8), ("u", 8), ("b", 16)]
    assert g.static_shared == 1024 and g.max_threads == 256


def test_a_good_launch_is_recorded() -> None:
    driver, _, function = loaded(LLVM_PTX, "k")
    _, pointer = driver.cuMemAlloc(64)
    result = launch(
        driver,
        function,
        (int(pointer), 7, 0.5),
        (ctypes.c_void_p, ctypes.c_int32, ctypes.c_float),
    )
    assert result == (CUresult.CUDA_SUCCESS,)
    assert driver.launches[0].args == (("u64", int(pointer)), ("u32", 7), ("f32", 0.5))


@pytest.mark.parametrize(
    ("values", "kinds", "complaint"),
    [
        ((0, 7), (ctypes.c_void_p, ctypes.c_int32), "takes 3 parameters"),
        (("P", 7, 0.5), (ctypes.c_int64, ctypes.c_int32, ctypes.c_float), "a pointer, given"),
        (("P", 7, 0.5), (ctypes.c_void_p, ctypes.c_int64, ctypes.c_float), "of 8 bytes"),
        (("P", 7, 1), (ctypes.c_void_p, ctypes.c_int32, ctypes.c_int32), "a float, given"),
        (("P", 0.5, 0.5), (ctypes.c_void_p, ctypes.c_float, ctypes.c_float), "an integer, given"),
        (("P", 2**33, 0.5), (ctypes.c_void_p, ctypes.c_int32, ctypes.c_float), "does not fit"),
        (("P", np.int32(7), 0.5), (ctypes.c_void_p, ctypes.c_int32, ctypes.c_float), "Python int"),
        ((12345, 7, 0.5), (ctypes.c_void_p, ctypes.c_int32, ctypes.c_float), "not device memory"),
    ],
)
def test_bad_arguments_are_refused(values: tuple, kinds: tuple, complaint: str) -> None:
    driver, _, function = loaded(LLVM_PTX, "k")
    _, pointer = driver.cuMemAlloc(64)
    values = tuple(int(pointer) if value == "P" else value for value in values)
    with pytest.raises(Misuse, match=complaint):
        launch(driver, function, values, kinds)


def test_a_freed_pointer_is_refused() -> None:
    driver, _, function = loaded(LLVM_PTX, "k")
    _, pointer = driver.cuMemAlloc(64)
    driver.cuMemFree(pointer)
    with pytest.raises(Misuse, match="freed memory"):
        launch(
            driver,
            function,
            (int(pointer), 7, 0.5),
            (ctypes.c_void_p, ctypes.c_int32, ctypes.c_float),
        )


def test_launch_geometry_and_shared_memory_are_checked() -> None:
    driver, _, function = loaded(NVRTC_PTX, "g")
    _, pointer = driver.cuMemAlloc(64)
    args = (int(pointer), int(pointer), bytes(16))
    kinds = (ctypes.c_void_p, ctypes.c_void_p, ctypes.c_char * 16)
    with pytest.raises(Misuse, match="512 threads a block, more than 256"):  # its .maxntid
        launch(driver, function, args, kinds, block=512)
    with pytest.raises(Misuse, match="cuFuncSetAttribute first"):
        launch(driver, function, args, kinds, shared=48 * 1024)
    attribute = CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
    assert driver.cuFuncSetAttribute(function, attribute, 227 * 1024) == (
        CUresult.CUDA_ERROR_INVALID_VALUE,  # with its 1024 static bytes, past the device
    )
    assert driver.cuFuncSetAttribute(function, attribute, 100_000) == (CUresult.CUDA_SUCCESS,)
    assert launch(driver, function, args, kinds, shared=100_000) == (CUresult.CUDA_SUCCESS,)


def test_copies_stay_inside_their_allocation() -> None:
    driver = FakeDriver()
    driver.cuInit(0)
    _, pointer = driver.cuMemAlloc(16)
    data = np.arange(8, dtype=np.float32)
    with pytest.raises(Misuse, match="32 bytes at offset 0 of an allocation of 16"):
        driver.cuMemcpyHtoD(pointer, data.ctypes.data, data.nbytes)
    driver.cuMemcpyHtoD(pointer, data.ctypes.data, 16)
    back = np.zeros(4, np.float32)
    driver.cuMemcpyDtoH(back.ctypes.data, pointer, 16)
    np.testing.assert_array_equal(back, data[:4])


def test_what_a_driver_cannot_load_is_refused() -> None:
    driver = FakeDriver()
    with pytest.raises(Misuse, match="before cuInit"):
        driver.cuMemAlloc(4)
    driver.cuInit(0)
    with pytest.raises(Misuse, match="cubin"):
        driver.cuModuleLoadData(b"\x7fELF...\0")
    unresolved = LLVM_PTX.replace(".visible", ".extern .func helper\n(\n)\n;\n.visible", 1)
    assert (
        driver.cuModuleLoadData(unresolved.encode() + b"\0")[0] == CUresult.CUDA_ERROR_INVALID_PTX
    )
    _, module = driver.cuModuleLoadData(LLVM_PTX.encode() + b"\0")
    assert driver.cuModuleGetFunction(module, b"missing")[0] == CUresult.CUDA_ERROR_NOT_FOUND


def test_a_fault_is_reported_at_the_next_synchronization_and_sticks() -> None:
    driver, module, function = loaded(LLVM_PTX, "k")
    driver.fault_in = "k"
    _, pointer = driver.cuMemAlloc(64)
    _, stream = driver.cuStreamCreate(0)
    kinds = (ctypes.c_void_p, ctypes.c_int32, ctypes.c_float)
    assert driver.cuLaunchKernel(
        function, 1, 1, 1, 32, 1, 1, 0, stream, ((int(pointer), 1, 1.0), kinds), 0
    ) == (CUresult.CUDA_SUCCESS,)  # asynchronous, as on a GPU
    assert driver.cuStreamSynchronize(stream) == (CUresult.CUDA_ERROR_ILLEGAL_ADDRESS,)
    assert driver.cuMemFree(pointer) == (CUresult.CUDA_ERROR_ILLEGAL_ADDRESS,)
    assert driver.cuModuleUnload(module) == (CUresult.CUDA_ERROR_ILLEGAL_ADDRESS,)

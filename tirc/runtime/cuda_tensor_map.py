"""The tensor maps of a kernel's TMA loads, built on the host for one launch with the driver's
cuTensorMapEncodeTiled (cuda-python), from the global tensor's address and shape evaluated
at the launch (tirc.ir.tma: dense row-major tensors, boxes and swizzles from the call).

The map goes to the kernel by value (a `const __grid_constant__` parameter): cuLaunchKernel
takes the CUtensorMap object with no ctypes type, and copies its 128 bytes.
"""

from __future__ import annotations

from typing import Any

from tirc.codegen.cuda.tma import TENSOR_MAP_DTYPES
from tirc.diagnostics import DiagnosticError, Note
from tirc.ir.tma import TmaLoad

SWIZZLE_NAMES = {0: "NONE", 32: "32B", 64: "64B", 128: "128B"}


def encode_tensor_map(device: Any, load: TmaLoad, address: int, shape: list[int]) -> Any:
    """The CUtensorMap of `load` over the tensor at device `address` of extents `shape`."""
    driver = device.driver
    kind = TENSOR_MAP_DTYPES.get(str(load.dtype))
    if kind is None:
        raise DiagnosticError.at(
            load.call.span, f"T.ptx_tma_load: a tensor map cannot hold {load.dtype}"
        )
    problem = _problem(load, address, shape)
    if problem is not None:
        raise DiagnosticError.at(
            load.call.span,
            f"--target cuda: the TMA load's tensor map cannot be built: {problem}",
            Note("TMA reads dense tensors from 16-byte aligned addresses with 16-byte row strides"),
        )
    rank = load.rank
    dims = [driver.cuuint64_t(extent) for extent in reversed(shape)]
    strides = []
    step = load.element_bytes
    for extent in reversed(shape[1:]):
        step *= extent
        strides.append(driver.cuuint64_t(step))
    box = [driver.cuuint32_t(extent) for extent in reversed(load.box)]
    ones = [driver.cuuint32_t(1) for _ in range(rank)]
    return device.call(
        "cuTensorMapEncodeTiled",
        getattr(driver.CUtensorMapDataType, f"CU_TENSOR_MAP_DATA_TYPE_{kind}"),
        rank,
        address,
        dims,
        strides,
        box,
        ones,
        driver.CUtensorMapInterleave.CU_TENSOR_MAP_INTERLEAVE_NONE,
        getattr(driver.CUtensorMapSwizzle, f"CU_TENSOR_MAP_SWIZZLE_{SWIZZLE_NAMES[load.swizzle]}"),
        driver.CUtensorMapL2promotion.CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
        driver.CUtensorMapFloatOOBfill.CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE,
    )


def _problem(load: TmaLoad, address: int, shape: list[int]) -> str | None:
    """What the driver would refuse in the map, said in the program's terms; None if nothing."""
    if address % 16:
        return f"the tensor's address {address:#x} is not 16-byte aligned"
    if any(extent < 1 or extent >= 2**32 for extent in shape):
        return f"its extents {shape} are not all in [1, 2^32)"
    row = shape[-1] * load.element_bytes
    if len(shape) > 1 and row % 16:
        return f"its rows are {row} bytes apart, not a multiple of 16"
    return None

"""What the API tests share: the gallery, compiling through the command line in-process, and
the interpreter's results for the same inputs."""

from __future__ import annotations

import ctypes
from pathlib import Path

import numpy as np

from tests.samples.helpers import SAMPLES, gallery_kernels
from tirc.cli.main import main
from tirc.driver.run_cpu import compare
from tirc.interp import random_inputs, run
from tirc.runtime.jit import aligned_copy
from tirc.text import parse

ROOT = SAMPLES.parent
SCALE = ROOT / "docs" / "examples" / "scale.tir"  # B = 2 * A over a symbolic length n

__all__ = ["SAMPLES", "SCALE", "gallery_kernels"]


def compile_sample(kernel: str, output: Path, *options: str) -> Path:
    """samples/K.tir scheduled by its cpu plan (or the plan of `options`) and compiled."""
    plan = ["--plan", str(SAMPLES / f"{kernel}.cpu.plan.json")] if "--target" not in options else []
    status = main(["compile", str(SAMPLES / f"{kernel}.tir"), *plan, *options, "-o", str(output)])
    assert status == 0
    return output


def inputs(path: Path, sizes: dict[str, int] | None = None, seed: int = 0) -> dict[str, object]:
    """Random arguments of the file's `main`, by C parameter name, arrays 64-byte aligned."""
    func = parse(path.read_text(), name=str(path))["main"]
    drawn = random_inputs(func, seed, sizes=sizes)
    return {k: aligned_copy(v) if isinstance(v, np.ndarray) else v for k, v in drawn.items()}


def expect(path: Path, args: dict[str, object], got: dict[str, object]) -> None:
    """Asserts `got` holds what the interpreter computes from `args`."""
    module = parse(path.read_text(), name=str(path))
    reference = {
        k: np.array(v, copy=True) if isinstance(v, np.ndarray) else v for k, v in args.items()
    }
    run(module["main"], reference, module=module)
    problems = compare(module["main"], got, reference)
    assert not problems, problems


def copies(args: dict[str, object]) -> dict[str, object]:
    return {k: aligned_copy(v) if isinstance(v, np.ndarray) else v for k, v in args.items()}


# A buffer with a declared stride variable, and an extent that is an expression.
STRIDED = """
@T.prim_func
def main(a: T.handle, b: T.handle, n: T.int32, s: T.int32):
    A = T.match_buffer(a, (n, 4), "float32", strides=(s, 1))
    B = T.match_buffer(b, (n * 4,), "float32")
    for i, j in T.grid(n, 4):
        B[i * 4 + j] = A[i, j]
"""


class _Device(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", _Device),
        ("ndim", ctypes.c_int32),
        ("dtype", _DataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


class _ManagedTensor(ctypes.Structure):
    _fields_ = [
        ("dl_tensor", _DLTensor),
        ("manager_ctx", ctypes.c_void_p),
        ("deleter", ctypes.c_void_p),
    ]


_KEPT: list[object] = []  # the fake tensors' memory, alive for the whole test run


def fake_device_tensor(
    shape: tuple[int, ...], dtype: str = "float32", device: tuple[int, int] = (2, 0)
) -> object:
    """A tvm_ffi.Tensor that claims to live on `device` (DLPack's type and id; 2: CUDA) with
    no memory behind it: a call must refuse it, or fail to launch, before touching it."""
    return device_tensor(shape, dtype, 0x10000, device)  # aligned, and never read


def device_tensor(
    shape: tuple[int, ...], dtype: str, data: int, device: tuple[int, int] = (2, 0)
) -> object:
    """A tvm_ffi.Tensor over the memory at `data` on `device`, which the caller owns."""
    import tvm_ffi

    codes = {"float": 2, "int": 0, "uint": 1}
    kind = dtype.rstrip("0123456789")
    extents = (ctypes.c_int64 * max(1, len(shape)))(*shape)
    managed = _ManagedTensor()
    managed.dl_tensor.data = data
    managed.dl_tensor.device = _Device(*device)
    managed.dl_tensor.ndim = len(shape)
    managed.dl_tensor.dtype = _DataType(codes[kind], int(dtype[len(kind) :]), 1)
    managed.dl_tensor.shape = extents
    new_capsule = ctypes.pythonapi.PyCapsule_New
    new_capsule.restype = ctypes.py_object
    new_capsule.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
    capsule = new_capsule(ctypes.addressof(managed), b"dltensor", None)
    _KEPT.extend([extents, managed])

    class Producer:
        def __dlpack__(self, **options: object) -> object:
            return capsule

        def __dlpack_device__(self) -> tuple[int, int]:
            return device

    return tvm_ffi.from_dlpack(Producer())


# Scalars of both kinds, float16 and bool tensors, a private function and one of no parameters.
MIXED = """
@I.ir_module
class Module:
    @T.prim_func
    def axpy(
        A: T.Buffer((4,), "float16"),
        B: T.Buffer((4,), "float32"),
        M: T.Buffer((4,), "bool"),
        alpha: T.float32,
        k: T.int32,
    ):
        for i in range(4):
            if M[i]:
                B[i] = B[i] + alpha * T.Cast("float32", A[i]) + T.Cast("float32", k)

    @T.prim_func(private=True)
    def hidden(A: T.Buffer((4,), "float32")):
        A[0] = T.float32(1)

    @T.prim_func
    def empty():
        T.evaluate(0)
"""

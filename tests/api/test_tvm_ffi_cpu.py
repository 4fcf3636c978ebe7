"""`tirc compile --abi tvm-ffi` for the CPU: the shared library loaded with
tvm_ffi.load_module, called on numpy arrays (and torch CPU tensors) for every gallery sample
and a symbolic shape, against the interpreter; each wrong call raises, naming the parameter."""

from __future__ import annotations

import re
import subprocess
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from tests.api.helpers import (
    MIXED,
    SAMPLES,
    SCALE,
    STRIDED,
    compile_sample,
    copies,
    expect,
    fake_device_tensor,
    gallery_kernels,
    inputs,
)
from tirc.cli.main import main
from tirc.runtime.jit import aligned_copy

tvm_ffi = pytest.importorskip(
    "tvm_ffi", reason="apache-tvm-ffi is not installed (pip install -e '.[dev]')"
)


@pytest.fixture(scope="module")
def scale(tmp_path_factory: pytest.TempPathFactory) -> Callable[..., object]:
    library = tmp_path_factory.mktemp("scale") / "scale.so"
    assert (
        main(["compile", str(SCALE), "--emit", "so", "--abi", "tvm-ffi", "-o", str(library)]) == 0
    )
    return tvm_ffi.load_module(str(library))["main"]


@pytest.mark.parametrize("kernel", gallery_kernels())
def test_gallery_sample_through_tvm_ffi(kernel: str, tmp_path: Path) -> None:
    library = compile_sample(kernel, tmp_path / f"{kernel}.so", "--emit", "so", "--abi", "tvm-ffi")
    function = tvm_ffi.load_module(str(library))["main"]
    args = inputs(SAMPLES / f"{kernel}.tir")
    got = copies(args)
    function(*got.values())
    expect(SAMPLES / f"{kernel}.tir", args, got)


@pytest.mark.parametrize("n", [1, 7, 64, 1000])
def test_symbolic_shape_told_by_the_tensors_or_passed(scale: Callable[..., object], n: int) -> None:
    a = aligned_copy(np.arange(n, dtype="float32"))
    b = aligned_copy(np.zeros(n, dtype="float32"))
    scale(a, b)
    np.testing.assert_array_equal(b, 2 * np.arange(n, dtype="float32"))
    b[:] = 0
    scale(a, b, n)
    np.testing.assert_array_equal(b, 2 * np.arange(n, dtype="float32"))


def aligned(*shape: int, dtype: str = "float32") -> np.ndarray:
    return aligned_copy(np.zeros(shape, dtype=dtype))


def misaligned(n: int) -> np.ndarray:
    return aligned(n + 1)[1:]


BAD_CALLS = [
    ((aligned(8),), TypeError, "takes 2 arguments, or 3 with the shape arguments (n), got 1"),
    ((aligned(8), 3), TypeError, "argument #1 (B) must be a tensor, got int"),
    (
        (aligned(8, dtype="float64"), aligned(8)),
        TypeError,
        "A must have dtype float32, got float64",
    ),
    ((aligned(8), aligned(8, dtype="int8")), TypeError, "B must have dtype float32, got int8"),
    ((aligned(2, 4), aligned(8)), ValueError, "A must have 1 dimension, got 2"),
    (
        (aligned(8), aligned(6)),
        ValueError,
        "B.shape[0] is 6, but must equal n = 8 (as A.shape[0] is)",
    ),
    ((aligned(8), aligned(8), 4), ValueError, "A.shape[0] is 8, but must equal n = 4 (as passed)"),
    ((aligned(8), aligned(8), 4.0), TypeError, "argument #2 (n: int32) must be an int, got float"),
    (
        (aligned(16)[::2], aligned(8)),
        ValueError,
        "A must be compact (row-major, contiguous), but A.strides[0] is 2 where 1 was expected",
    ),
    (
        (misaligned(8), aligned(8)),
        ValueError,
        "A must be aligned to 64 bytes, but its data is at 0x",
    ),
]


@pytest.mark.parametrize(("args", "kind", "message"), BAD_CALLS)
def test_a_wrong_call_raises_naming_the_parameter(
    scale: Callable[..., object], args: tuple[object, ...], kind: type[Exception], message: str
) -> None:
    with pytest.raises(kind) as raised:
        scale(*args)
    assert f"main: {message}" in str(raised.value) or message in str(raised.value)


def test_wrong_constant_extent(tmp_path: Path) -> None:
    library = compile_sample("matmul", tmp_path / "mm.so", "--emit", "so", "--abi", "tvm-ffi")
    function = tvm_ffi.load_module(str(library))["main"]
    with pytest.raises(ValueError, match=r"main: B.shape\[1\] is 64, but must be 128"):
        function(aligned(128, 128), aligned(128, 64), aligned(128, 128))


def test_torch_cpu_tensors(scale: Callable[..., object]) -> None:
    torch = pytest.importorskip("torch", reason="torch is not installed")
    a = torch.arange(100, dtype=torch.float32)
    b = torch.zeros(100, dtype=torch.float32)
    scale(a, b)
    assert torch.equal(b, 2 * a)


def test_c_abi_is_the_default_and_unchanged(tmp_path: Path) -> None:
    """`--abi c` writes what no --abi writes, and neither has a packed function."""
    plain = compile_sample("softmax", tmp_path / "plain.ll", "--emit", "ll")
    c = compile_sample("softmax", tmp_path / "c.ll", "--emit", "ll", "--abi", "c")
    ffi = compile_sample("softmax", tmp_path / "ffi.ll", "--emit", "ll", "--abi", "tvm-ffi")
    assert plain.read_text() == c.read_text()
    assert "__tvm_ffi_" not in plain.read_text()
    assert re.search(r"define .*i32 @__tvm_ffi_main\(ptr .*%args, i32 %num_args", ffi.read_text())


def test_object_file_exports_the_packed_function(tmp_path: Path) -> None:
    obj = compile_sample(
        "elementwise", tmp_path / "k.o", "--emit", "obj", "--abi", "tvm-ffi", "--prefix", "ew_"
    )
    symbols = subprocess.run(["nm", str(obj)], capture_output=True, text=True, check=True).stdout
    assert " T __tvm_ffi_ew_main" in symbols and " T ew_main" in symbols
    assert " U TVMFFIErrorSetRaisedFromCStr" in symbols  # from libtvm_ffi, at link time


def test_unknown_abi_is_a_usage_error(tmp_path: Path) -> None:
    assert main(["compile", str(SCALE), "--abi", "tvm", "-o", str(tmp_path / "x.o")]) == 2
    assert not (tmp_path / "x.o").exists()


def test_declared_stride_is_bound_from_the_tensor(tmp_path: Path) -> None:
    source = tmp_path / "strided.tir"
    source.write_text(STRIDED)
    library = tmp_path / "strided.so"
    assert (
        main(["compile", str(source), "--emit", "so", "--abi", "tvm-ffi", "-o", str(library)]) == 0
    )
    function = tvm_ffi.load_module(str(library))["main"]
    rows = aligned_copy(np.arange(24, dtype="float32").reshape(3, 8))
    out = aligned(12)
    function(rows[:, :4], out)  # s = 8, n = 3
    np.testing.assert_array_equal(out, rows[:, :4].reshape(-1))
    out[:] = 0
    function(rows[:, :4], out, 3, 8)
    np.testing.assert_array_equal(out, rows[:, :4].reshape(-1))
    with pytest.raises(
        ValueError, match=r"main: A.strides\[0\] is 8, but must equal s = 4 \(as passed\)"
    ):
        function(rows[:, :4], out, 3, 4)
    with pytest.raises(ValueError, match=r"main: B.shape\[0\] is 8, but must be n \* 4 = 12"):
        function(rows[:, :4], aligned(8))


def test_a_tensor_on_another_device_is_refused(scale: Callable[..., object]) -> None:
    cuda = fake_device_tensor((8,))
    with pytest.raises(ValueError, match="main: A must be on the CPU, got a tensor on cuda"):
        scale(cuda, aligned(8))
    with pytest.raises(ValueError, match="main: B must be on the CPU, got a tensor on cuda"):
        scale(aligned(8), cuda)


def test_scalars_bool_and_float16_tensors(tmp_path: Path) -> None:
    source, library = tmp_path / "mixed.tir", tmp_path / "mixed.so"
    source.write_text(MIXED)
    assert (
        main(["compile", str(source), "--emit", "so", "--abi", "tvm-ffi", "-o", str(library)]) == 0
    )
    module = tvm_ffi.load_module(str(library))
    a = aligned_copy(np.array([1, 2, 3, 4], "float16"))
    b = aligned(4)
    mask = aligned_copy(np.array([True, False, True, True]))
    module["axpy"](a, b, mask, 0.5, 10)
    np.testing.assert_array_equal(b, [10.5, 0, 11.5, 12])
    module["axpy"](a, b, mask, 2, True)  # an int for a float, a bool for an int
    np.testing.assert_array_equal(b, [13.5, 0, 18.5, 21])
    module["empty"]()
    with pytest.raises(
        TypeError, match=r"axpy: argument #3 \(alpha: float32\) must be a number, got str"
    ):
        module["axpy"](a, b, mask, "x", 1)
    with pytest.raises(
        TypeError, match=r"axpy: argument #4 \(k: int32\) must be an int, got float"
    ):
        module["axpy"](a, b, mask, 1.0, 1.5)
    with pytest.raises(TypeError, match="axpy: M must have dtype bool, got float16"):
        module["axpy"](a, b, a, 1.0, 1)
    with pytest.raises(AttributeError):
        module["hidden"]  # private: no packed function


@pytest.mark.parametrize(
    "options",
    [
        ("--emit", "header"),
        ("--target", "cuda", "--emit", "ptx"),
        ("--target", "cuda", "--emit", "ll"),
    ],
)
def test_tvm_ffi_only_for_host_code(tmp_path: Path, options: tuple[str, ...]) -> None:
    """A header, PTX or NVVM IR holds no packed function: asking for one is an error."""
    output = tmp_path / "out"
    assert main(["compile", str(SCALE), *options, "--abi", "tvm-ffi", "-o", str(output)]) == 1
    assert not output.exists()

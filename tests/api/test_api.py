"""The Python API (tirc.api): the command line's pipeline as functions, round-tripped on every
gallery sample against the command line's own output and the interpreter; one exception type
for every diagnosed error; `import tirc` stays light."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import tirc
from tests.api.helpers import SAMPLES, SCALE, STRIDED, copies, expect, gallery_kernels, inputs
from tirc.cli.main import main
from tirc.ir.structural import structural_equal
from tirc.runtime.jit import aligned_copy
from tirc.text import parse as parse_text


@pytest.mark.parametrize("kernel", gallery_kernels())
def test_build_and_call_every_sample(kernel: str) -> None:
    path = SAMPLES / f"{kernel}.tir"
    module = tirc.build(path, plan=SAMPLES / f"{kernel}.cpu.plan.json")
    args = inputs(path)
    got = copies(args)
    module.main(*got.values())
    expect(path, args, got)


@pytest.mark.parametrize("kernel", gallery_kernels())
def test_schedule_and_lower_match_the_command_line(kernel: str, tmp_path: Path) -> None:
    path, plan = SAMPLES / f"{kernel}.tir", SAMPLES / f"{kernel}.cpu.plan.json"
    scheduled = tirc.schedule(tirc.parse(path), plan)
    written = tmp_path / "scheduled.tir"
    assert main(["schedule", str(path), "--apply", str(plan), "-o", str(written)]) == 0
    assert structural_equal(scheduled, parse_text(written.read_text()))
    lowered = tirc.lower(scheduled, target="cpu")
    printed = tmp_path / "lowered.tir"
    assert main(["print", "--lower", str(path), "--plan", str(plan), "-o", str(printed)]) == 0
    assert structural_equal(lowered, parse_text(printed.read_text()))


def test_parse_text_path_and_defines() -> None:
    text = (SAMPLES / "gpu" / "matmul_fp16_tc.tir").read_text()
    from_path = tirc.parse(SAMPLES / "gpu" / "matmul_fp16_tc.tir", defines={"N": 64})
    from_text = tirc.parse(text, defines={"N": 64})
    assert structural_equal(from_path, from_text)
    assert not structural_equal(from_text, tirc.parse(text))


def test_plan_as_a_json_value() -> None:
    plan = json.loads((SAMPLES / "matmul.cpu.plan.json").read_text())
    by_value = tirc.schedule(SAMPLES / "matmul.tir", plan)
    by_path = tirc.schedule(SAMPLES / "matmul.tir", SAMPLES / "matmul.cpu.plan.json")
    assert structural_equal(by_value, by_path)


def test_symbolic_shapes_told_or_passed() -> None:
    module = tirc.build(SCALE)
    for n in (1, 5, 33):
        a, b = np.arange(n, dtype="float32"), np.zeros(n, dtype="float32")
        module.main(a, b)
        np.testing.assert_array_equal(b, 2 * a)
        module["main"](a[::-1], b, n)  # strided and misaligned arrays are copied
        np.testing.assert_array_equal(b, 2 * a[::-1])


@pytest.mark.parametrize(
    ("args", "kind", "message"),
    [
        ((np.zeros(4, "float32"),), TypeError, "takes 2 arguments, or 3"),
        (
            (np.zeros(4, "float32"), [0.0] * 4),
            TypeError,
            "argument #1 (B) must be a tensor, got list",
        ),
        (
            (np.zeros(4), np.zeros(4, "float32")),
            TypeError,
            "A must have dtype float32, got float64",
        ),
        (
            (np.zeros((2, 2), "float32"), np.zeros(4, "float32")),
            ValueError,
            "A must have 1 dimension, got 2",
        ),
        (
            (np.zeros(4, "float32"), np.zeros(3, "float32")),
            ValueError,
            "B.shape[0] is 3, but must equal n = 4 (as A.shape[0] is)",
        ),
        (
            (np.zeros(4, "float32"), np.zeros(4, "float32"), 5),
            ValueError,
            "A.shape[0] is 4, but must equal n = 5 (as passed)",
        ),
    ],
)
def test_a_wrong_call_raises_as_the_tvm_ffi_wrapper_does(
    args: tuple[object, ...], kind: type[Exception], message: str
) -> None:
    module = tirc.build(SCALE)
    with pytest.raises(kind) as raised:
        module.main(*args)
    assert message in str(raised.value)


def test_dlpack_tensor_is_called_in_place() -> None:
    class Tensor:
        """A DLPack producer that is not a numpy array."""

        def __init__(self, array: np.ndarray) -> None:
            self.array = array

        def __dlpack__(self, **kwargs: object) -> object:
            return self.array.__dlpack__(**kwargs)

        def __dlpack_device__(self) -> tuple[int, int]:
            return self.array.__dlpack_device__()

    a, b = np.arange(6, dtype="float32"), np.zeros(6, dtype="float32")
    tirc.build(SCALE).main(Tensor(a), Tensor(b))
    np.testing.assert_array_equal(b, 2 * a)


def test_compile_error_carries_the_diagnostics(tmp_path: Path) -> None:
    source = tmp_path / "bad.tir"
    source.write_text('@T.prim_func\ndef f(A: T.Buffer((4,), "float32")):\n    A[0] = B[1]\n')
    with pytest.raises(tirc.CompileError) as raised:
        tirc.build(source)
    error = raised.value
    assert [d.message for d in error.diagnostics] == ["undefined name 'B'"]
    assert error.locations == [f"{source}:3:12"]
    assert "3 |     A[0] = B[1]" in str(error) and "^" in str(error)


def test_a_failing_plan_step_is_a_compile_error() -> None:
    with pytest.raises(tirc.CompileError, match="no_such_block"):
        tirc.schedule(
            SAMPLES / "matmul.tir", [{"op": "get_sblock", "name": "no_such_block", "out": "b"}]
        )


def test_unknown_target_is_a_compile_error() -> None:
    with pytest.raises(tirc.CompileError):
        tirc.build(SCALE, target="tpu")


def test_export_c_abi_and_header(tmp_path: Path) -> None:
    module = tirc.build(SCALE)
    module.export(tmp_path / "scale.h")
    assert (
        "int32_t main(float *TIRC_RESTRICT a, float *TIRC_RESTRICT b, int64_t n);"
        in (tmp_path / "scale.h").read_text()
    )
    module.export(tmp_path / "scale.so", abi="c")
    symbols = subprocess.run(
        ["nm", "-D", str(tmp_path / "scale.so")], capture_output=True, text=True
    )
    assert " T main" in symbols.stdout and "__tvm_ffi_" not in symbols.stdout
    with pytest.raises(tirc.CompileError, match="cannot export a cpu module as '.txt'"):
        module.export(tmp_path / "scale.txt")
    assert not (tmp_path / "scale.txt").exists()


def test_export_loads_through_tvm_ffi(tmp_path: Path) -> None:
    tvm_ffi = pytest.importorskip("tvm_ffi", reason="apache-tvm-ffi is not installed")
    from tirc.runtime.jit import aligned_copy

    tirc.build(SAMPLES / "elementwise.tir").export(tmp_path / "ew.so")
    function = tvm_ffi.load_module(str(tmp_path / "ew.so"))["main"]
    a, b, c = (aligned_copy(np.linspace(-1, 1, 1024, dtype="float32")) for _ in range(3))
    function(a, b, c)
    np.testing.assert_array_equal(c, np.maximum(a + b, 0))


def test_import_tirc_loads_neither_numpy_nor_llvmlite() -> None:
    heavy = "('numpy', 'llvmlite', 'lark', 'rich')"
    code = f"import sys, tirc; print(sorted(m for m in {heavy} if m in sys.modules))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
    assert callable(tirc.build) and "build" in dir(tirc)


def test_schedule_is_the_api_function_after_the_package_is_imported() -> None:
    import tirc.schedule.plan  # makes the package the attribute tirc.schedule

    scheduled = tirc.schedule(SAMPLES / "matmul.tir", SAMPLES / "matmul.cpu.plan.json")
    assert structural_equal(
        scheduled, tirc.api.schedule(SAMPLES / "matmul.tir", SAMPLES / "matmul.cpu.plan.json")
    )


def test_a_function_outlives_its_module() -> None:
    """The code lives as long as a function of it does (a temporary module's function
    called after the module was collected crashed)."""
    import gc

    function = tirc.build(SCALE).main
    gc.collect()
    a, b = np.arange(3, dtype="float32"), np.zeros(3, dtype="float32")
    function(a, b)
    np.testing.assert_array_equal(b, 2 * a)


def test_declared_strides_pass_the_array_itself() -> None:
    """A buffer whose strides the program declares reads the caller's array as it is laid
    out (a dense copy, as for other buffers, read past its end)."""
    module = tirc.build(STRIDED)
    rows = aligned_copy(np.arange(24, dtype="float32").reshape(3, 8))
    out = np.zeros(12, dtype="float32")
    module.main(rows[:, :4], out)
    np.testing.assert_array_equal(out, rows[:, :4].reshape(-1))
    with pytest.raises(ValueError, match=r"main: B.shape\[0\] is 8, but must be n \* 4 = 12"):
        module.main(rows[:, :4], np.zeros(8, dtype="float32"))
    with pytest.raises(ValueError, match="main: A must be aligned to 64 bytes"):
        module.main(aligned_copy(np.zeros((3, 9), dtype="float32"))[:, 1:5], out)


def test_a_cpu_build_refuses_a_tensor_on_another_device() -> None:
    pytest.importorskip("tvm_ffi", reason="apache-tvm-ffi is not installed")
    from tests.api.helpers import fake_device_tensor

    with pytest.raises(ValueError, match="main: A must be on the CPU, got a tensor on cuda"):
        tirc.build(SCALE).main(fake_device_tensor((8,)), np.zeros(8, dtype="float32"))

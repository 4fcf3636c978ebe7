"""split-host-device and make-c-abi beyond their goldens: the interpreter runs what they make
(a host function launching kernel functions; a C signature) and computes what the input did;
both are no-ops the second time; what has no C type is rejected at its parameter; the CUDA
backends and the header read the signature the passes wrote."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests.transform.helpers import run_passes
from tirc import interp
from tirc.codegen.abi import ParamKind, function_abi
from tirc.codegen.cuda import emit_cuda
from tirc.codegen.header import header_text
from tirc.diagnostics import DiagnosticError
from tirc.ir.abi import is_kernel
from tirc.ir.function import IRModule
from tirc.text import parse
from tirc.transform.passes.make_c_abi import MakeCAbi
from tirc.transform.passes.split_host_device import SplitHostDevice

GOLDEN = Path(__file__).parent / "golden"


def golden(name: str) -> IRModule:
    path = GOLDEN / f"{name}.before.tir"
    return parse(path.read_text(), name=str(path))


def run_main(module: IRModule, args: dict[str, object]) -> dict[str, object]:
    copies = {
        k: np.array(v, copy=True) if isinstance(v, np.ndarray) else v for k, v in args.items()
    }
    interp.run(module["main"], copies, module=module)  # type: ignore[arg-type]
    return copies


def test_split_module_computes_what_the_function_did() -> None:
    before = golden("split_host_device/two_kernels")
    after = run_passes(before, "split-host-device")
    assert [name for name, func in after.functions if is_kernel(func)] == [
        "main_kernel_0",
        "main_kernel_1",
    ]
    n = 100
    rng = np.random.default_rng(0)
    args = {"a": rng.standard_normal(n).astype(np.float32), "b": np.zeros(n, np.float32), "n": n}
    want, got = run_main(before, args), run_main(after, args)
    np.testing.assert_array_equal(got["b"], want["b"])
    np.testing.assert_allclose(want["b"], args["a"] * 2 + 1, rtol=1e-6)


def test_kernels_launched_in_a_host_loop_run_in_order() -> None:
    before = golden("split_host_device/local_scratch_and_serial_work")
    after = run_passes(before, "split-host-device")
    args = interp.random_inputs(before["main"], 3)
    want, got = run_main(before, args), run_main(after, args)
    np.testing.assert_array_equal(got["B"], want["B"])


def test_c_abi_function_computes_what_the_function_did() -> None:
    before = golden("make_c_abi/match_buffer_and_shapes")
    after = run_passes(before, "make-c-abi")
    assert [p.name for p in after["main"].params] == ["a", "alpha", "B", "n"]
    args = {"a": np.arange(12, dtype=np.float32), "alpha": 0.5, "B": np.zeros(16, np.float32)}
    want = run_main(before, args)
    got = run_main(after, {**args, "n": 12})
    np.testing.assert_array_equal(got["B"], want["B"])


@pytest.mark.parametrize(
    "name",
    [
        "split_host_device/two_kernels",
        "split_host_device/local_scratch_and_serial_work",  # a launch inside a host loop
        "make_c_abi/match_buffer_and_shapes",
    ],
)
def test_both_passes_are_no_ops_the_second_time(name: str) -> None:
    once = MakeCAbi().run(SplitHostDevice().run(golden(name)))
    assert SplitHostDevice().run(once) is once
    assert MakeCAbi().run(once) is once


def test_a_scalar_with_no_c_type_is_rejected_at_its_parameter() -> None:
    module = parse(
        "@T.prim_func\n"
        'def main(A: T.Buffer((4,), "float16"), x: T.float16):\n'
        "    for i in range(4):\n"
        "        A[i] = x\n"
    )
    with pytest.raises(DiagnosticError) as error:
        MakeCAbi().run(module)
    diagnostic = error.value.diagnostics[0]
    assert diagnostic.message == "the C ABI has no way to pass a float16 scalar (x)"
    assert diagnostic.span is not None and diagnostic.span.line == 2


def test_the_signature_is_read_off_the_function() -> None:
    after = run_passes(golden("make_c_abi/match_buffer_and_shapes"), "make-c-abi")
    kinds = [(p.name, p.kind, str(p.abi_dtype)) for p in function_abi(after["main"])]
    assert kinds == [
        ("a", ParamKind.BUFFER, "handle"),
        ("alpha", ParamKind.SCALAR, "float32"),
        ("B", ParamKind.BUFFER, "handle"),
        ("n", ParamKind.SHAPE, "int64"),
    ]
    assert (
        "int32_t main(float *TIRC_RESTRICT a, float alpha, float *TIRC_RESTRICT B, "
        "int64_t n);" in header_text(after, "k")
    )


def test_cuda_launcher_launches_the_kernel_functions() -> None:
    split = run_passes(golden("split_host_device/two_kernels"), "split-host-device,make-c-abi")
    text = emit_cuda(split)
    assert 'extern "C" __global__ void __launch_bounds__(64) main_kernel_0(' in text
    assert 'extern "C" int main_launch(float* a, float* b, int64_t n_arg, cudaStream_t stream)' in (
        text
    )
    assert "main_kernel_0<<<main_kernel_0_grid, main_kernel_0_block, 0, stream>>>(a, n, C);" in (
        text
    )
    assert "main_kernel_1<<<main_kernel_1_grid, main_kernel_1_block, 0, stream>>>(b, n, C);" in (
        text
    )
    # the kernels are not C functions of the host: no header declares them
    assert "main_kernel" not in header_text(split, "k")

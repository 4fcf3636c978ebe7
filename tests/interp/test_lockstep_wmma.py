"""The wmma intrinsics in the lockstep GPU model (tirc.interp.lockstep.wmma): fragments per
lane, batched loads / stores / mma, bit-identical to the thread model (tirc.interp.threads.wmma);
float16 -> float32 and int8 -> int32 fragments, row- and column-major tiles, strided stores,
calls under a divergent `if`, located out-of-bounds faults, and the fallback to the thread model
for a replaced implementation."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests.interp.test_lockstep import (
    _copy,
    assert_same_in_both_models,
    check_source,
    uses_lockstep,
)
from tirc.diagnostics import DiagnosticError
from tirc.interp import random_inputs, run
from tirc.interp.lockstep import kernel as lockstep
from tirc.interp.lockstep.stmt import StmtCompiler
from tirc.interp.semantics.extensions import INTRINSICS
from tirc.interp.threads import wmma
from tirc.ir.expr import Var
from tirc.ir.stmt import Stmt
from tirc.text import parse

ROOT = Path(__file__).resolve().parents[2]

# Block bx multiplies A's rows [16 bx, 16 bx + 16) by BT's rows of the same range, transposed
# (a column-major load), adds 0.5, and stores the tile into the first 16 of C's 40 columns.
FLOAT16 = """
@T.prim_func
def main(A: T.Buffer((32, 16), "float16"), BT: T.Buffer((32, 16), "float16"), C: T.Buffer((32, 40), "float32")):
    bx = T.launch_thread("blockIdx.x", 2)
    tx = T.launch_thread("threadIdx.x", 32)
    Af = T.alloc_buffer((256,), "float16", scope="wmma.matrix_a")
    Bf = T.alloc_buffer((512,), "float16", scope="wmma.matrix_b")
    Cf = T.alloc_buffer((512,), "float32", scope="wmma.accumulator")
    T.tvm_fill_fragment(Cf.data, 16, 16, 16, 1, T.float32(0.5))
    T.tvm_load_matrix_sync(Af.data, 16, 16, 16, 0, T.tvm_access_ptr(T.type_annotation("float16"), A.data, bx * 256, 256, 1), 16, "row_major")
    T.tvm_load_matrix_sync(Bf.data, 16, 16, 16, 1, T.tvm_access_ptr(T.type_annotation("float16"), BT.data, bx * 256, 256, 1), 16, "col_major")
    T.tvm_mma_sync(Cf.data, 1, Af.data, 0, Bf.data, 1, Cf.data, 1)
    T.tvm_store_matrix_sync(Cf.data, 16, 16, 16, 1, T.tvm_access_ptr(T.type_annotation("float32"), C.data, bx * 640, 640, 2), 40, "row_major")
"""  # noqa: E501

# int8 tiles (B loaded column-major, through T.address_of), exact int32 sums, and a
# column-major store into a wider int32 output.
INT8 = """
@T.prim_func
def main(A: T.Buffer((16, 16), "int8"), B: T.Buffer((16, 16), "int8"), C: T.Buffer((16, 20), "int32")):
    tx = T.launch_thread("threadIdx.x", 64)
    Af = T.alloc_buffer((256,), "int8", scope="wmma.matrix_a")
    Bf = T.alloc_buffer((256,), "int8", scope="wmma.matrix_b")
    Cf = T.alloc_buffer((256,), "int32", scope="wmma.accumulator")
    T.tvm_fill_fragment(Cf.data, 16, 16, 16, 0, 0)
    T.tvm_load_matrix_sync(Af.data, 16, 16, 16, 0, T.tvm_access_ptr(T.type_annotation("int8"), A.data, 0, 256, 1), 16, "row_major")
    T.tvm_load_matrix_sync(Bf.data, 16, 16, 16, 0, T.address_of(B[0, 0]), 16, "col_major")
    T.tvm_mma_sync(Cf.data, 0, Af.data, 0, Bf.data, 0, Cf.data, 0)
    T.tvm_store_matrix_sync(Cf.data, 16, 16, 16, 0, T.tvm_access_ptr(T.type_annotation("int32"), C.data, 0, 320, 2), 20, "col_major")
"""  # noqa: E501

# Even threads start from 1.0, odd ones from 2.0; thread 31 skips the mma (and the load whose
# pointer is out of bounds for it); thread 30 stores its tile to C, thread 31 its own to D.
MASKED = """
@T.prim_func
def main(A: T.Buffer((16, 16), "float16"), B: T.Buffer((16, 16), "float16"), C: T.Buffer((16, 16), "float32"), D: T.Buffer((16, 16), "float32")):
    tx = T.launch_thread("threadIdx.x", 32)
    Af = T.alloc_buffer((256,), "float16", scope="wmma.matrix_a")
    Bf = T.alloc_buffer((256,), "float16", scope="wmma.matrix_b")
    Cf = T.alloc_buffer((256,), "float32", scope="wmma.accumulator")
    if tx % 2 == 0:
        T.tvm_fill_fragment(Cf.data, 16, 16, 16, 0, T.float32(1.0))
    else:
        T.tvm_fill_fragment(Cf.data, 16, 16, 16, 0, T.float32(2.0))
    if tx < 31:
        T.tvm_load_matrix_sync(Af.data, 16, 16, 16, 0, T.tvm_access_ptr(T.type_annotation("float16"), A.data, tx // 31 * 100000, 256, 1), 16, "row_major")
        T.tvm_load_matrix_sync(Bf.data, 16, 16, 16, 0, T.tvm_access_ptr(T.type_annotation("float16"), B.data, 0, 256, 1), 16, "row_major")
        T.tvm_mma_sync(Cf.data, 0, Af.data, 0, Bf.data, 0, Cf.data, 0)
    if tx == 30:
        T.tvm_store_matrix_sync(Cf.data, 16, 16, 16, 0, T.tvm_access_ptr(T.type_annotation("float32"), C.data, 0, 256, 2), 16, "row_major")
    if tx == 31:
        T.tvm_store_matrix_sync(Cf.data, 16, 16, 16, 0, T.tvm_access_ptr(T.type_annotation("float32"), D.data, 0, 256, 2), 16, "row_major")
"""  # noqa: E501


def _halves(shape: tuple[int, ...], seed: int) -> np.ndarray:
    return np.random.default_rng(seed).uniform(-2, 2, shape).astype(np.float16)


def test_float16_fragments_row_and_column_major_and_a_strided_store() -> None:
    a, bt = _halves((32, 16), 0), _halves((32, 16), 1)
    c = np.full((32, 40), -7.0, np.float32)
    out = check_source(FLOAT16, A=a, BT=bt, C=c)
    for block in range(2):
        rows = slice(16 * block, 16 * block + 16)
        want = a[rows].astype(np.float64) @ bt[rows].astype(np.float64).T + 0.5
        np.testing.assert_array_equal(out["C"][rows, :16], want.astype(np.float32))
    np.testing.assert_array_equal(out["C"][:, 16:], c[:, 16:])  # the stride skips them


def test_int8_fragments_sum_exactly_into_int32() -> None:
    rng = np.random.default_rng(2)
    a = rng.integers(-128, 128, (16, 16)).astype(np.int8)
    b = rng.integers(-128, 128, (16, 16)).astype(np.int8)
    c = np.full((16, 20), 99, np.int32)
    out = check_source(INT8, A=a, B=b, C=c)
    want = a.astype(np.int64) @ b.astype(np.int64).T  # B's tile was read column-major
    # the column-major store puts tile (r, col) at r + 20 * col: C's flat elements
    flat = c.ravel().copy()
    r, col = np.meshgrid(np.arange(16), np.arange(16), indexing="ij")
    flat[(r + 20 * col).ravel()] = want.ravel()
    np.testing.assert_array_equal(out["C"].ravel(), flat)


def test_calls_under_a_divergent_if_touch_only_the_executing_lanes() -> None:
    a, b = _halves((16, 16), 3), _halves((16, 16), 4)
    zeros = np.zeros((16, 16), np.float32)
    out = check_source(MASKED, A=a, B=b, C=zeros, D=zeros.copy())
    product = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_array_equal(out["C"], (product + 1.0).astype(np.float32))
    np.testing.assert_array_equal(out["D"], np.full((16, 16), 2.0, np.float32))


def test_a_tile_out_of_bounds_is_a_located_fault_naming_the_thread() -> None:
    source = FLOAT16.replace("C.data, bx * 640, 640, 2), 40", "C.data, bx * 640 + 30, 640, 2), 40")
    module = parse(source)
    assert uses_lockstep(module)
    args = {
        "A": _halves((32, 16), 0),
        "BT": _halves((32, 16), 1),
        "C": np.zeros((32, 40), np.float32),
    }
    with pytest.raises(DiagnosticError) as caught:
        run(module["main"], _copy(args), module=module, gpu_model="lockstep")
    diagnostic = caught.value.diagnostics[0]
    assert "T.tvm_store_matrix_sync writes C at element 1280, outside [0, 1280)" in (
        diagnostic.message
    )
    assert "thread (0, 0, 0) of block (1, 0, 0)" in diagnostic.message
    assert diagnostic.span is not None and diagnostic.span.line == 13
    with pytest.raises(DiagnosticError) as caught:  # the thread model faults alike
        run(module["main"], _copy(args), module=module, gpu_model="threads")
    threads = caught.value.diagnostics[0]
    assert threads.message == diagnostic.message and threads.span == diagnostic.span


def test_a_value_that_does_not_fit_an_integer_fragment_faults_alike_in_both_models() -> None:
    """The store rule of both models (semantics.wmma.to_memory): 3e9 is no int32."""
    module = parse(INT8.replace("Cf.data, 16, 16, 16, 0, 0)", "Cf.data, 16, 16, 16, 0, 3e9)"))
    assert uses_lockstep(module)
    args = {
        "A": np.zeros((16, 16), np.int8),
        "B": np.zeros((16, 16), np.int8),
        "C": np.zeros((16, 20), np.int32),
    }
    messages = []
    for model in ("lockstep", "threads"):
        with pytest.raises(DiagnosticError) as caught:
            run(module["main"], _copy(args), module=module, gpu_model=model)
        diagnostic = caught.value.diagnostics[0]
        assert diagnostic.span is not None and diagnostic.span.line == 8
        messages.append(diagnostic.message)
    assert messages[0] == messages[1]
    assert messages[0].startswith("T.tvm_fill_fragment writes Cf: 3000000000.0 does not fit int32")
    assert "(in thread (0, 0, 0) of block (0, 0, 0))" in messages[0]


def test_a_replaced_implementation_runs_in_the_thread_model(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls = []

    def fill(*args: object) -> None:
        calls.append(args[4])
        wmma.fill_fragment(*args)  # type: ignore[arg-type]

    monkeypatch.setitem(INTRINSICS, "tvm_fill_fragment", fill)
    module = parse(FLOAT16)
    assert not uses_lockstep(module)
    args = {
        "A": _halves((32, 16), 0),
        "BT": _halves((32, 16), 1),
        "C": np.zeros((32, 40), np.float32),
    }
    run(module["main"], args, module=module, gpu_model="lockstep")
    assert len(calls) == 64  # every thread of both blocks


def test_tensor_core_sample_runs_in_lockstep_bit_identically(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from tirc.driver.lower import lower_module
    from tirc.driver.schedule import apply_plan_file

    source = ROOT / "samples" / "gpu" / "matmul_fp16_tc.tir"
    plan = ROOT / "samples" / "gpu" / "matmul_fp16_tc.plan.json"
    original = parse(source.read_text(), defines={"N": "64"})
    lowered = lower_module(apply_plan_file(original, str(plan))[0], target="cuda")
    compiled: list[str | None] = []
    compile_kernel = lockstep.compile_kernel

    def recording(compiler: StmtCompiler, stmt: Stmt, free: tuple[Var, ...]) -> str | None:
        kernel = compile_kernel(compiler, stmt, free)
        compiled.append(kernel)
        return kernel

    monkeypatch.setattr(lockstep, "compile_kernel", recording)
    inputs = random_inputs(original["main"], 0)
    out = assert_same_in_both_models(lowered, inputs)
    assert compiled and all(kernel is not None for kernel in compiled)
    want = inputs["A"].astype(np.float64) @ inputs["B"].astype(np.float64)
    np.testing.assert_allclose(out["C"], want, rtol=1e-6)

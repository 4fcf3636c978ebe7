"""The lockstep GPU model (every thread a numpy lane) gives bit-identical results to the thread
model on race-free kernels: divergence by masks, loops with per-thread extents, break, warp
shuffles, shared memory with barriers, local arrays, vector lanes, float16; kernels it cannot
run fall back to the thread model; bounds errors stay located."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests.interp.test_threads import LOWERED, WARP_REDUCTION
from tirc.diagnostics import DiagnosticError
from tirc.interp import compile_function, random_inputs, run
from tirc.interp.lockstep.kernel import gpu_model
from tirc.ir.function import IRModule
from tirc.text import parse

ROOT = Path(__file__).resolve().parents[2]


def _copy(values: dict) -> dict:
    return {
        k: np.array(v, copy=True) if isinstance(v, np.ndarray) else v for k, v in values.items()
    }


def sources(module: IRModule) -> list[str]:
    """The interpreter's code for each function it compiles on its own (not host stubs)."""
    found = []
    for name, func in module.functions:
        try:
            found.append(compile_function(func, name).source)
        except DiagnosticError:
            continue
    return found


def uses_lockstep(module: IRModule) -> bool:
    """Whether some kernel of module can run in lockstep (its launch goes through launch_gpu)."""
    return any("launch_gpu" in source for source in sources(module))


def assert_same_in_both_models(module: IRModule, inputs: dict, name: str = "main") -> dict:
    results = {}
    for model in ("threads", "lockstep"):
        args = _copy(inputs)
        run(module[name], args, module=module, gpu_model=model)
        results[model] = args
    for key, value in results["threads"].items():
        if isinstance(value, np.ndarray):
            other = results["lockstep"][key]
            assert value.tobytes() == other.tobytes(), f"{key} differs between the models"
    return results["lockstep"]


def check_source(source: str, **arrays: np.ndarray) -> dict:
    module = parse(source)
    assert uses_lockstep(module)
    return assert_same_in_both_models(module, arrays)


def test_shared_memory_and_barrier() -> None:
    a = np.arange(64, dtype=np.float32)
    out = check_source(LOWERED, A=a, B=np.zeros(64, np.float32))
    np.testing.assert_array_equal(out["B"], np.concatenate([a[31::-1], a[:31:-1]]))


def test_warp_shuffles_active_mask_and_shared_memory() -> None:
    a = (np.arange(256, dtype=np.float32).reshape(4, 64) % 7) / 8
    out = check_source(WARP_REDUCTION, A=a, B=np.zeros(4, np.float32))
    np.testing.assert_array_equal(out["B"], a.sum(axis=1))


DIVERGENT = """
@T.prim_func
def main(A: T.Buffer((128,), "int32"), B: T.Buffer((128,), "int32"), C: T.Buffer((128,), "float16")):
    bx = T.launch_thread("blockIdx.x", 2)
    tx = T.launch_thread("threadIdx.x", 64)
    acc = T.alloc_buffer((4,), "int32", scope="local")
    acc[0] = 0
    acc[1] = 7
    if A[bx * 64 + tx] % 3 == 0:
        for k in range(tx % 5):
            acc[0] = acc[0] + T.shift_left(k, 2) - T.truncdiv(A[bx * 64 + tx] - 50, 7)
    else:
        acc[0] = T.floordiv(A[bx * 64 + tx] - 50, 7) * -2147483647
    j: T.int32 = 0
    while j < tx % 4:
        j = j + 1
        if j == 2:
            break
    acc[2] = j
    acc[3] = T.if_then_else(tx < 60, A[T.min(bx * 64 + tx + 4, 127)], -1)
    B[bx * 64 + tx] = acc[0] + acc[1] * acc[2] + acc[3]
    C[bx * 64 + tx] = T.Cast("float16", A[bx * 64 + tx]) * T.float16(0.3333) + T.float16(1.5)
"""  # noqa: E501


def test_divergent_if_varying_loops_break_and_integer_semantics() -> None:
    a = np.random.default_rng(1).integers(0, 100, 128).astype(np.int32)
    check_source(DIVERGENT, A=a, B=np.zeros(128, np.int32), C=np.zeros(128, np.float16))


VECTOR = """
@T.prim_func
def main(A: T.Buffer((256,), "float16"), B: T.Buffer((256,), "float32"), D: T.Buffer((64,), "float32")):
    tx = T.launch_thread("threadIdx.x", 32)
    S = T.alloc_buffer((256,), "float16", scope="shared")
    S[T.Ramp(tx * 8, 1, 8)] = A[T.Ramp(tx * 8, 1, 8)]
    T.tvm_storage_sync("shared")
    v = T.alloc_buffer((8,), "float32", scope="local")
    v[0:8] = T.Cast("float32x8", S[T.Ramp(255 - tx * 8, -1, 8)]) * T.Broadcast(T.float32(1.25), 8) + T.Cast("float32x8", T.Ramp(tx, 2, 8))
    B[T.Ramp(tx * 8, 1, 8)] = v[T.Ramp(0, 1, 8)]
    up = T.tvm_warp_shuffle_up(T.uint32(4294967295), v[0], 3, 32, 32)
    index = T.tvm_warp_shuffle(T.uint32(4294967295), v[1], tx + 5, 16, 32)
    D[tx] = up
    D[tx + 32] = T.exp(index / T.float32(8)) + T.sqrt(T.fabs(up))
"""  # noqa: E501


def test_vector_lanes_fp16_shuffles_and_math() -> None:
    a = (np.random.default_rng(2).standard_normal(256)).astype(np.float16)
    check_source(VECTOR, A=a, B=np.zeros(256, np.float32), D=np.zeros(64, np.float32))


BITS = """
@T.prim_func
def main(A: T.Buffer((64,), "float16"), F: T.Buffer((64,), "float32"), B: T.Buffer((64,), "float16"), G: T.Buffer((64,), "float32"), C: T.Buffer((64,), "int16"), D: T.Buffer((64,), "int32")):
    tx = T.launch_thread("threadIdx.x", 64)
    B[tx] = T.nextafter(A[tx], T.float16(0))
    G[tx] = T.nextafter(F[tx], T.float32(100))
    C[tx] = T.reinterpret("int16", A[tx])
    D[tx] = T.reinterpret("int32", F[tx] * T.float32(3))
"""  # noqa: E501


def test_nextafter_and_reinterpret_are_one_rule_in_both_models() -> None:
    """semantics.math_functions.nextafter and semantics.bits.reinterpret, on lanes and one
    lane alike, are numpy's nextafter and a view of the bits."""
    rng = np.random.default_rng(5)
    a = rng.standard_normal(64).astype(np.float16)
    f = rng.standard_normal(64).astype(np.float32)
    zeros = {"B": np.zeros(64, np.float16), "G": np.zeros(64, np.float32)}
    out = check_source(BITS, A=a, F=f, C=np.zeros(64, np.int16), D=np.zeros(64, np.int32), **zeros)
    np.testing.assert_array_equal(out["B"], np.nextafter(a, np.float16(0)))
    np.testing.assert_array_equal(out["G"], np.nextafter(f, np.float32(100)))
    np.testing.assert_array_equal(out["C"], a.view(np.int16))
    np.testing.assert_array_equal(out["D"], (f * np.float32(3)).view(np.int32))


OUT_OF_BOUNDS = """
@T.prim_func
def main(A: T.Buffer((64,), "float32"), B: T.Buffer((64,), "float32")):
    bx = T.launch_thread("blockIdx.x", 2)
    tx = T.launch_thread("threadIdx.x", 32)
    if tx != 7:
        B[bx * 32 + tx] = A[bx * 33 + tx]
"""


def test_bounds_error_is_located_and_names_the_thread() -> None:
    module = parse(OUT_OF_BOUNDS)
    assert uses_lockstep(module)
    args = {"A": np.zeros(64, np.float32), "B": np.zeros(64, np.float32)}
    with pytest.raises(DiagnosticError) as caught:
        run(module["main"], _copy(args), module=module, gpu_model="lockstep")
    diagnostic = caught.value.diagnostics[0]
    assert "out-of-bounds load from A" in diagnostic.message
    assert "index 64 is outside [0, 64) in dimension 0" in diagnostic.message
    assert "thread (31, 0, 0) of block (1, 0, 0)" in diagnostic.message
    assert diagnostic.span is not None and diagnostic.span.line == 7
    with pytest.raises(DiagnosticError) as threads:
        run(module["main"], _copy(args), module=module, gpu_model="threads")
    assert threads.value.diagnostics[0].message == diagnostic.message


UNIFORM_FAULTS = """
@T.prim_func
def main(A: T.Buffer((64,), "int32"), B: T.Buffer((64,), "int32"), n: T.int32):
    bx = T.launch_thread("blockIdx.x", 2)
    tx = T.launch_thread("threadIdx.x", 32)
    if tx > 5:
        for i in range(65):
            B[bx * 32 + tx] = A[i] + 7 // n
"""


@pytest.mark.parametrize(
    ("n", "expected"),
    [
        (1, "index 64 is outside [0, 64) in dimension 0 (in thread (6, 0, 0) of block (0, 0, 0))"),
        (0, "integer division by zero (7 // 0) (in thread (6, 0, 0) of block (0, 0, 0))"),
    ],
)
def test_a_fault_of_code_every_lane_runs_alike_names_the_first_executing_thread(
    n: int, expected: str
) -> None:
    """A loop index and a divisor that every thread agrees on run as the thread model's
    scalar code in lockstep; their faults still name the first thread executing them."""
    module = parse(UNIFORM_FAULTS)
    assert uses_lockstep(module)
    messages = []
    for model in ("threads", "lockstep"):
        args = {"A": np.zeros(64, np.int32), "B": np.zeros(64, np.int32), "n": n}
        with pytest.raises(DiagnosticError) as caught:
            run(module["main"], args, module=module, gpu_model=model)
        messages.append(caught.value.diagnostics[0].message)
    assert messages[0] == messages[1]
    assert messages[1].endswith(expected)


def test_masked_lanes_do_not_fault() -> None:
    source = OUT_OF_BOUNDS.replace("if tx != 7:", "if bx * 33 + tx < 64:")
    a = np.arange(64, dtype=np.float32)
    check_source(source, A=a, B=np.zeros(64, np.float32))


def test_wmma_kernel_runs_in_lockstep() -> None:
    from tirc.driver.lower import lower_module
    from tirc.driver.schedule import apply_plan_file

    source = ROOT / "samples" / "gpu" / "matmul_fp16_tc.tir"
    plan = ROOT / "samples" / "gpu" / "matmul_fp16_tc.plan.json"
    original = parse(source.read_text(), defines={"N": "64"})
    scheduled, _ = apply_plan_file(original, str(plan))
    lowered = lower_module(scheduled, target="cuda")
    assert any("wmma" in source for source in sources(lowered))
    assert uses_lockstep(lowered)  # the wmma calls have lockstep rules (lockstep_wmma)
    inputs = random_inputs(original["main"], 0)
    assert_same_in_both_models(lowered, inputs)


def _sample_cases() -> list[tuple[Path, Path]]:
    cases = [
        (ROOT / "samples" / "gpu" / f"{name}.tir", ROOT / "samples" / "gpu" / f"{name}.plan.json")
        for name in ("elementwise", "matmul", "softmax")
    ]
    return [case for case in cases if case[0].exists() and case[1].exists()]


@pytest.mark.parametrize("case", _sample_cases(), ids=lambda case: case[0].stem)
def test_samples_lowered_for_cuda_match_in_both_models(case: tuple[Path, Path]) -> None:
    from tirc.driver.lower import lower_module
    from tirc.driver.schedule import apply_plan_file

    source, plan = case
    original = parse(source.read_text())
    lowered = lower_module(apply_plan_file(original, str(plan))[0], target="cuda")
    assert uses_lockstep(lowered)
    inputs = random_inputs(original["main"], 0)
    out = assert_same_in_both_models(lowered, inputs)
    want = _copy(inputs)
    run(original["main"], want, module=original)
    for key, value in want.items():
        if isinstance(value, np.ndarray):
            np.testing.assert_allclose(out[key], value, rtol=1e-5, atol=1e-6)


def test_auto_model_and_unknown_model() -> None:
    module = parse(LOWERED)
    args = {"A": np.arange(64, dtype=np.float32), "B": np.zeros(64, np.float32)}
    run(module["main"], args, module=module, gpu_model="auto")
    assert args["B"][0] == 31
    with pytest.raises(ValueError, match="unknown GPU model"), gpu_model("fast"):
        pass


# each thread copies two floats; the last thread's pair lies past the end of A, and the one
# condition of T.if_then_else (not per vector lane) skips it: the load must not be evaluated
GUARDED_VECTOR_LOAD = """
@T.prim_func
def main(A: T.Buffer((62,), "float32"), B: T.Buffer((64,), "float32")):
    tx = T.launch_thread("threadIdx.x", 32)
    B[T.Ramp(tx * 2, 1, 2)] = T.if_then_else(
        tx * 2 + 2 <= 62, A[T.Ramp(tx * 2, 1, 2)], T.Broadcast(T.float32(-1.0), 2)
    )
"""


def test_a_vector_if_then_else_with_one_condition_evaluates_only_its_branch() -> None:
    a = np.arange(62, dtype=np.float32)
    result = check_source(GUARDED_VECTOR_LOAD, A=a, B=np.zeros(64, np.float32))
    assert np.array_equal(result["B"], np.concatenate([a, [-1.0, -1.0]]).astype(np.float32))


def test_a_scalar_if_then_else_guards_a_vector_load_outside_kernels() -> None:
    source = """
@T.prim_func
def main(A: T.Buffer((62,), "float32"), B: T.Buffer((64,), "float32")):
    for i in range(32):
        B[T.Ramp(i * 2, 1, 2)] = T.if_then_else(
            i * 2 + 2 <= 62, A[T.Ramp(i * 2, 1, 2)], T.Broadcast(T.float32(-1.0), 2)
        )
"""
    module = parse(source)
    a = np.arange(62, dtype=np.float32)
    args = {"A": a, "B": np.zeros(64, np.float32)}
    run(module["main"], args, module=module)
    assert np.array_equal(args["B"], np.concatenate([a, [-1.0, -1.0]]).astype(np.float32))

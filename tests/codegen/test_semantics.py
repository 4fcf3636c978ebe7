# ruff: noqa: E501 -- the programs are written one statement per line, as TVM prints them
"""Arithmetic, control flow and the ABI of compiled code, against the interpreter: integer
floor division, casts, shape variables, allocations, parallel loops, assertions, and the
inline float32 exp/tanh/log over their whole range."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import cache

import numpy as np
import pytest

from tests.codegen.helpers import parse_text, run_both
from tirc.driver.run_cpu import jit_function

INTEGER_OPS = """
@T.prim_func(s_tir=True)
def main(a: T.handle, b: T.handle, c: T.handle):
    n = T.int32()
    A = T.match_buffer(a, (n,), "int32")
    B = T.match_buffer(b, (n,), "int32")
    C = T.match_buffer(c, (n, 6), "int32")
    for i in range(n):
        with T.sblock("C"):
            vi = T.axis.spatial(n, i)
            C[vi, 0] = (A[vi] - 2) // (B[vi] - 2 + T.int32(4) * T.int32(B[vi] == 2))
            C[vi, 1] = (A[vi] - 2) % (B[vi] - 2 + T.int32(4) * T.int32(B[vi] == 2))
            C[vi, 2] = T.truncdiv(A[vi] - 7, 2)
            C[vi, 3] = T.truncmod(A[vi] - 7, 2)
            C[vi, 4] = T.max(A[vi], B[vi]) * T.min(A[vi] - 5, B[vi])
            C[vi, 5] = T.int32(T.Cast("int8", A[vi] * 100)) + T.int32(T.float32(A[vi]) / T.float32(3))
"""


def test_integer_semantics_and_shape_variables() -> None:
    module = parse_text(INTEGER_OPS)
    rng = np.random.default_rng(1)
    args = {
        "a": rng.integers(-10, 10, size=257).astype(np.int32),
        "b": rng.integers(-6, 6, size=257).astype(np.int32),
        "c": np.zeros((257, 6), np.int32),
    }
    run_both(module, args)


PARALLEL = """
@T.prim_func(s_tir=True)
def main(A: T.Buffer((64, 100), "float32"), B: T.Buffer((64, 100), "float32")):
    T.func_attr({"tirx.noalias": True})
    for i in T.parallel(64):
        for j in T.vectorized(100):
            with T.sblock("B"):
                vi, vj = T.axis.remap("SS", [i, j])
                B[vi, vj] = T.if_then_else(A[vi, vj] > T.float32(0), A[vi, vj] * T.float32(2), T.float32(-1))
"""


def test_parallel_and_vectorized_loops() -> None:
    run_both(parse_text(PARALLEL))


LARGE_ALLOCATION = """
@T.prim_func(s_tir=True)
def main(A: T.Buffer((40000,), "float32"), B: T.Buffer((40000,), "float32")):
    T.func_attr({"tirx.noalias": True})
    T_tmp = T.alloc_buffer((40000,), "float32")
    for i in range(40000):
        with T.sblock("tmp"):
            vi = T.axis.spatial(40000, i)
            T_tmp[vi] = A[vi] * T.float32(3)
    for i in range(40000):
        with T.sblock("B"):
            vi = T.axis.spatial(40000, i)
            B[vi] = T_tmp[39999 - vi] + T.float32(1)
"""


def test_heap_allocation() -> None:
    run_both(parse_text(LARGE_ALLOCATION))


FLOAT16 = """
@T.prim_func(s_tir=True)
def main(A: T.Buffer((256,), "float16"), B: T.Buffer((256,), "float32"), C: T.Buffer((256,), "float16")):
    for i in range(256):
        with T.sblock("C"):
            vi = T.axis.spatial(256, i)
            C[vi] = A[vi] * T.float16(3) + T.Cast("float16", B[vi])
"""


def test_float16() -> None:
    run_both(parse_text(FLOAT16))


ASSERTION = """
@T.prim_func
def main(a: T.handle, n: T.int32):
    A = T.match_buffer(a, (16,), "float32")
    assert n < 10, "n is too large"
    for i in range(16):
        A[i] = T.float32(n)
"""


def test_failed_assertion_returns_non_zero() -> None:
    module = parse_text(ASSERTION)
    call = jit_function(module, "main", "cpu")
    array = np.zeros(16, np.float32)
    assert call({"a": array, "n": 3}) == 0
    assert np.all(array == 3)
    assert call({"a": array, "n": 12}) != 0


MATH = """
@T.prim_func(s_tir=True)
def main(X: T.Buffer((4096,), "float32"), P: T.Buffer((4096,), "float32"), E: T.Buffer((4096,), "float32"), H: T.Buffer((4096,), "float32"), L: T.Buffer((4096,), "float32")):
    T.func_attr({"tirx.noalias": True})
    for io in range(512):
        for ii in T.vectorized(8):
            with T.sblock("E"):
                vi = T.axis.spatial(4096, io * 8 + ii)
                E[vi] = T.exp(X[vi])
                H[vi] = T.tanh(X[vi])
                L[vi] = T.log(P[vi])
"""


@cache
def math_kernel() -> Callable[[Mapping[str, object]], int]:
    """MATH compiled once for every range. Its vectors are 8 lanes, a loop of them: the inline
    code is the same for any lane count, and one 4096-lane vector took LLVM over 10 s."""
    return jit_function(parse_text(MATH), "main", "cpu")


@pytest.mark.parametrize("low, high", [(-100.0, 100.0), (-1.0, 1.0), (-1e-3, 1e-3)])
def test_inline_exp_tanh_log_are_float32_accurate(low: float, high: float) -> None:
    x = np.linspace(low, high, 4096, dtype=np.float32)
    positive = np.abs(x) * np.float32(1e3) + np.float32(1e-30)
    args = {"X": x, "P": positive, **{k: np.zeros(4096, np.float32) for k in "EHL"}}
    assert math_kernel()(args) == 0
    wide = x.astype(np.float64)
    for got, want in (
        (args["E"], np.exp(wide)),
        (args["H"], np.tanh(wide)),
        (args["L"], np.log(positive.astype(np.float64))),
    ):
        fine = (np.abs(want) > 1e-37) & (np.abs(want) < 3e38)  # normal float32 results
        ulp = np.spacing(np.abs(want[fine]).astype(np.float32)).astype(np.float64)
        error = np.abs(got[fine] - want[fine]) / ulp
        assert np.nanmax(np.where(np.isinf(want[fine]), 0, error)) <= 4


# a break in a loop of one iteration: lower-opaque-block dropped the loop, and the CPU backend
# then refused the break outside any loop (TVM's test_handle_irrgular_unit_loop)
UNIT_LOOP_BREAK = """
@T.prim_func(s_tir=True)
def main(A: T.Buffer((4,), "int32")):
    for i in range(1):
        if A[i] > 5:
            T.break_loop()
        A[i] = A[i] + 1
    for j in range(1):
        if A[j + 1] > 5:
            T.continue_loop()
        A[j + 1] = A[j + 1] + 1
"""


def test_break_and_continue_in_a_unit_loop() -> None:
    module = parse_text(UNIT_LOOP_BREAK)
    done = run_both(module, {"A": np.array([3, 9, 0, 0], np.int32)})
    np.testing.assert_array_equal(done["A"], [4, 9, 0, 0])
    done = run_both(module, {"A": np.array([7, 2, 0, 0], np.int32)})
    np.testing.assert_array_equal(done["A"], [7, 3, 0, 0])


# T.ignore_loop_partition(cond) is cond (a hint loop-partition reads): the interpreter and the
# CPU backend had no rule for it (TVM's test_ignore_loop_partition_hint)
IGNORE_LOOP_PARTITION = """
@T.prim_func(s_tir=True)
def main(A: T.Buffer((10,), "float32"), D: T.Buffer((12,), "float32")):
    for i in range(12):
        if T.ignore_loop_partition(i < 10):
            D[i] = A[i] + T.float32(1.0)
        else:
            D[i] = T.float32(0.0)
"""


def test_ignore_loop_partition_is_its_condition() -> None:
    done = run_both(parse_text(IGNORE_LOOP_PARTITION))
    np.testing.assert_array_equal(done["D"][10:], [0, 0])


# a view whose data is T.address_of an element: the CPU backend had no rule for address_of
# (TVM's test_decl_buffer_offset_preserves_storage_scope)
ADDRESS_OF_VIEW = """
@T.prim_func
def main(A: T.Buffer((8,), "float32")):
    B = T.decl_buffer((4,), data=T.address_of(A[3]))
    for i in range(4):
        B[i] = B[i] * T.float32(2.0) + T.float32(i)
"""


def test_a_view_at_the_address_of_an_element() -> None:
    a = np.arange(8, dtype=np.float32)
    done = run_both(parse_text(ADDRESS_OF_VIEW), {"A": a.copy()})
    np.testing.assert_array_equal(done["A"], [0, 1, 2, 6, 9, 12, 15, 7])


# a call of another function of the module, on pointers into buffers and a scalar: neither
# the interpreter nor the CPU backend called subroutines (TVM's test_subroutine_call,
# inline_private_functions)
SUBROUTINE = """
@I.ir_module
class Module:
    @T.prim_func(private=True)
    def scale(A_data: T.handle("float32", "global"), n: T.int32):
        A = T.decl_buffer((16,), data=A_data)
        for i in range(16):
            A[i] = A[i] * T.float32(n)

    @T.prim_func
    def main(A: T.Buffer((2, 16), "float32")):
        Module.scale(T.address_of(A[0, 0]), 2)
        Module.scale(T.address_of(A[1, 0]), -3)
"""


def test_a_subroutine_call() -> None:
    a = np.arange(32, dtype=np.float32).reshape(2, 16)
    done = run_both(parse_text(SUBROUTINE), {"A": a.copy()})
    np.testing.assert_array_equal(done["A"], a * np.array([[2], [-3]], np.float32))


# LLVM's float intrinsics by name, on scalars and on vectors: the interpreter had none of them
# (a NotImplementedError traceback when the call ran), and rounded a vector result as a scalar
# (TVM's test_vectorize_llvm_pure_intrin)
LLVM_FLOAT_INTRINSICS = """
@T.prim_func
def main(A: T.Buffer((8,), "float32"), B: T.Buffer((8, 4), "float32"), C: T.Buffer((8,), "int32")):
    for i in range(8):
        B[i, 0] = T.call_llvm_pure_intrin("float32", "llvm.sqrt", T.fabs(A[i]) * T.float32(3))
        B[i, 1] = T.call_llvm_pure_intrin("float32", "llvm.floor", A[i] * T.float32(1.5))
        B[i, 2] = T.call_llvm_pure_intrin("float32", "llvm.trunc", A[i] * T.float32(1.5))
        B[i, 3] = T.call_llvm_pure_intrin("float32", "llvm.fabs", A[i])
        C[i] = T.call_llvm_pure_intrin("int32", "llvm.lround", A[i] * T.float32(4))
    B[0, 0:4] = T.call_llvm_pure_intrin("float32x4", "llvm.sqrt", B[1, T.Ramp(0, 1, 4)] + T.Broadcast(T.float32(2), 4))
"""


def test_llvm_float_intrinsics() -> None:
    a = np.array([-1.125, -0.625, -0.375, 0, 0.125, 0.375, 0.625, 1], np.float32)
    done = run_both(
        parse_text(LLVM_FLOAT_INTRINSICS),
        {"A": a, "B": np.zeros((8, 4), np.float32), "C": np.zeros(8, np.int32)},
    )
    np.testing.assert_array_equal(done["C"], [-5, -3, -2, 0, 1, 2, 3, 4])  # halves away from 0
    np.testing.assert_array_equal(done["B"][1:, 2], np.trunc(a[1:] * np.float32(1.5)))


# a function that calls itself (TVM's inline_private_functions): the interpreter compiled the
# callee with its caller, recursing until Python's RecursionError
RECURSIVE_SUBROUTINE = """
@I.ir_module
class Module:
    @T.prim_func(private=True)
    def prefix_sum(A_data: T.handle("float32", "global"), n: T.int32):
        A = T.decl_buffer((n,), data=A_data)
        if n > 1:
            A[1] = A[0] + A[1]
            Module.prefix_sum(T.address_of(A[1]), n - 1)

    @T.prim_func
    def main(A: T.Buffer((16,), "float32")):
        Module.prefix_sum(T.address_of(A[0]), 16)
"""


def test_a_recursive_subroutine_call() -> None:
    a = np.arange(16, dtype=np.float32)
    done = run_both(parse_text(RECURSIVE_SUBROUTINE), {"A": a.copy()})
    np.testing.assert_array_equal(done["A"], np.cumsum(a))

"""A function that returns a value (`T.ret`, `return x` under `-> T.dtype`) compiles with that
value as its C result (docs/abi.md): the JIT's call gives what the interpreter's run gives,
the header declares it, and what has no C spelling is a located error."""

from __future__ import annotations

import numpy as np
import pytest

from tests.codegen.helpers import parse_text
from tests.interp.test_return import SQUARE
from tirc.codegen.header import header_text
from tirc.diagnostics import DiagnosticError
from tirc.driver.lower import lower_module
from tirc.driver.run_cpu import jit_function
from tirc.interp import run

SEARCH = """
@T.prim_func
def main(A: T.Buffer((64,), "float32"), n: T.int32) -> T.{dtype}:
    scratch = T.alloc_buffer((16384,), "float32")
    for i in range(64):
        scratch[i] = A[i]
        if scratch[i] > T.float32(0.5):
            return T.Cast("{dtype}", scratch[i] * T.float32(n))
    return T.Cast("{dtype}", T.float32(2))
"""


@pytest.mark.parametrize("dtype", ["int8", "uint16", "int64", "bool", "float32", "float64"])
def test_the_compiled_function_returns_what_the_interpreter_returns(dtype: str) -> None:
    # an early return from a loop, past a heap allocation (freed on the way out)
    module = parse_text(SEARCH.replace("{dtype}", dtype))
    call = jit_function(module, "main")
    for a in (np.linspace(0, 1, 64, dtype=np.float32), np.zeros(64, np.float32)):
        want = run(module["main"], {"A": a.copy(), "n": 3})
        got = call({"A": a.copy(), "n": 3})
        assert got == want and type(got) is type(want), (got, want)


def test_a_subroutine_call_is_the_value_the_callee_returns() -> None:
    module = parse_text(SQUARE)
    a = np.array([1.0, 2.0, -3.0], np.float32)
    assert jit_function(module, "main")({"A": a}) == 0
    np.testing.assert_array_equal(a, [2.0, 5.0, 10.0])


def test_a_failed_assert_returns_minus_one_as_the_return_type() -> None:
    module = parse_text(
        """
@T.prim_func
def main(x: T.int32) -> T.float32:
    assert x > 0, "x must be positive"
    return T.float32(1.5)
"""
    )
    call = jit_function(module, "main")
    assert call({"x": 1}) == 1.5
    assert call({"x": 0}) == -1.0


def test_the_header_declares_the_returned_type() -> None:
    module = parse_text(SEARCH.replace("{dtype}", "float64"))
    header = header_text(lower_module(module, target="cpu"), "k")
    assert "double main(float *TIRC_RESTRICT A, int64_t n);" in header


def test_a_return_type_c_cannot_spell_is_a_located_error() -> None:
    module = parse_text(
        """
@T.prim_func
def main(x: T.int32) -> T.float16:
    return T.Cast("float16", x)
"""
    )
    with pytest.raises(DiagnosticError) as error:
        jit_function(module, "main")
    message = str(error.value)
    assert "<test>:2:1" in message or "<test>:3:1" in message, message
    assert "the C ABI has no way to return a float16 value" in message


def test_a_return_inside_a_parallel_loop_is_a_located_error() -> None:
    module = parse_text(
        """
@T.prim_func
def main(A: T.Buffer((64,), "int32")) -> T.int32:
    for i in T.parallel(64):
        if A[i] == 3:
            return i
    return -1
"""
    )
    with pytest.raises(DiagnosticError) as error:
        jit_function(module, "main")
    assert "<test>:6:13" in str(error.value), str(error.value)
    assert "inside a T.parallel loop it cannot" in str(error.value)

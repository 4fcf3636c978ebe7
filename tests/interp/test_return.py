"""`T.ret(value)` (`return value` in a function `-> T.dtype`): the interpreter's run gives the
value, converted to the declared return type, from however deep in the loops; the statements
after it do not run, and a function that ends without one returns 0 of its type."""

from __future__ import annotations

import numpy as np

from tests.interp.helpers import parse_function
from tirc import interp, text


def test_a_return_inside_loops_leaves_the_function_with_its_value() -> None:
    func = parse_function(
        """
        @T.prim_func
        def main(A: T.Buffer((4, 4), "int32"), B: T.Buffer((1,), "int32")) -> T.int32:
            for i in range(4):
                for j in range(4):
                    if A[i, j] == 7:
                        return i * 4 + j
            B[0] = 1
            return -1
        """
    )
    a, b = np.zeros((4, 4), np.int32), np.zeros(1, np.int32)
    a[2, 1] = 7
    assert interp.run(func, {"A": a, "B": b}) == 9
    assert b[0] == 0  # the store after the loops never ran
    assert interp.run(func, {"A": np.zeros((4, 4), np.int32), "B": b}) == -1
    assert b[0] == 1


def test_the_value_is_converted_to_the_declared_type() -> None:
    func = parse_function(
        """
        @T.prim_func
        def main(x: T.int32) -> T.int8:
            return T.Cast("int8", x) * T.int8(100)
        """
    )
    assert interp.run(func, {"x": 3}) == 44  # 300 wraps in int8
    widened = parse_function(
        """
        @T.prim_func
        def main(x: T.float32) -> T.float64:
            return x
        """
    )
    value = interp.run(widened, {"x": 0.1})
    assert value == float(np.float32(0.1))


def test_a_function_that_ends_without_a_return_gives_zero_of_its_type() -> None:
    returns = parse_function(
        """
        @T.prim_func
        def main(x: T.int32) -> T.float32:
            if x > 0:
                return T.float32(2.5)
        """
    )
    assert interp.run(returns, {"x": 1}) == 2.5
    assert interp.run(returns, {"x": -1}) == 0.0
    status = parse_function(
        """
        @T.prim_func
        def main(A: T.Buffer((1,), "int32")):
            A[0] = 1
        """
    )
    assert interp.run(status, {"A": np.zeros(1, np.int32)}) is None


# a subroutine whose value the caller uses (tests/codegen/test_return_value.py compiles it)
SQUARE = """
@I.ir_module
class Module:
    @T.prim_func(private=True)
    def square(x: T.float32) -> T.float32:
        return x * x

    @T.prim_func
    def main(A: T.Buffer((3,), "float32")):
        for i in range(3):
            A[i] = Module.square(A[i]) + T.float32(1)
"""


def test_a_subroutine_call_is_the_value_the_callee_returns() -> None:
    module = text.parse(SQUARE, name="test.tir")
    a = np.array([1.0, 2.0, -3.0], np.float32)
    interp.run(module["main"], {"A": a}, module=module)
    np.testing.assert_array_equal(a, [2.0, 5.0, 10.0])

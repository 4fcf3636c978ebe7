"""Random integer inputs that a program divides by are drawn in [1, 4], so that a division or
remainder reaches no zero divisor; the other buffers keep their draw in [0, 3]."""

from __future__ import annotations

import numpy as np

from tirc.interp import random_inputs
from tirc.interp.inputs import divisor_data
from tirc.ir.abi import parameter_buffers
from tirc.text import parse

PROGRAM = """
@T.prim_func
def main(
    A: T.Buffer((64,), "int32"),
    B: T.Buffer((64,), "int32"),
    C: T.Buffer((64,), "int8"),
    D: T.Buffer((64,), "uint8"),
    E: T.Buffer((64,), "int32"),
    F: T.Buffer((64,), "float32"),
    Out: T.Buffer((64,), "int32"),
):
    for i in range(64):
        d: T.int32 = T.Cast("int32", C[i]) + 0
        Out[i] = A[i] // B[i] + T.truncmod(A[i], d)
        Out[i] = Out[i] + T.truncdiv(A[i], T.max(T.Cast("int32", D[i]), 1))
        Out[i] = Out[i] + E[i] + T.Cast("int32", F[i] / F[i])
"""


def test_the_buffers_read_in_a_divisor_are_found() -> None:
    func = parse(PROGRAM)["main"]
    names = {b.name for p, b in parameter_buffers(func).items() if b.data in divisor_data(func)}
    # B directly, C through the variable d, D inside T.max; F divides floats (drawn as ever)
    assert names == {"B", "C", "D", "F"}


def test_divisors_are_drawn_nonzero_and_the_rest_as_before() -> None:
    func = parse(PROGRAM)["main"]
    inputs = random_inputs(func, 0)
    for name in ("B", "C", "D"):
        values = np.asarray(inputs[name])
        assert values.min() >= 1 and values.max() <= 4, name
    for name in ("A", "E", "Out"):
        values = np.asarray(inputs[name])
        assert values.min() >= 0 and values.max() <= 3 and (values == 0).any(), name
    # the same draw, one higher: a seed gives the same values whether or not the program
    # divides by them
    plain = parse(PROGRAM.replace("A[i] // B[i]", "A[i] + B[i]"))["main"]
    np.testing.assert_array_equal(random_inputs(plain, 0)["B"] + 1, inputs["B"])


def test_a_view_of_a_parameter_counts_as_the_parameter() -> None:
    func = parse(
        """
@T.prim_func
def main(a: T.handle, b: T.handle):
    A = T.match_buffer(a, (8,), "int32")
    B = T.match_buffer(b, (8,), "int32")
    for i in range(8):
        with T.sblock("div"):
            vi = T.axis.spatial(8, i)
            Bv = T.match_buffer(B[vi : vi + 1], (1,), "int32")
            A[vi] = A[vi] % Bv[0]
"""
    )["main"]
    assert np.asarray(random_inputs(func, 0)["b"]).min() >= 1

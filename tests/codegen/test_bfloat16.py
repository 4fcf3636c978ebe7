# ruff: noqa: E501 -- the programs are written one statement per line, as TVM prints them
"""bfloat16 on the CPU backend against the interpreter, bit for bit: computed in float32 and
rounded to nearest even after each operation and on store (NaN stays NaN), as TVM computes
it; inputs include float32 values halfway between two bfloat16 values (float8: test_float8)."""

from __future__ import annotations

import ml_dtypes
import numpy as np

from tests.codegen.helpers import run_both_exactly
from tests.codegen.test_float8 import reduction

ELEMENTWISE = """
@T.prim_func(s_tir=True)
def main(A: T.Buffer((256,), "bfloat16"), B: T.Buffer((256,), "bfloat16"), W: T.Buffer((256,), "float32"), C: T.Buffer((256,), "bfloat16"), D: T.Buffer((256,), "bfloat16")):
    T.func_attr({"tirx.noalias": True})
    for io in range(16):
        for ii in T.vectorized(16):
            with T.sblock("C"):
                vi = T.axis.spatial(256, io * 16 + ii)
                C[vi] = A[vi] * B[vi] + A[vi] - T.bfloat16(0.1) / B[vi]
                D[vi] = T.bfloat16(W[vi]) + T.max(A[vi], B[vi])
    for i in range(256):
        with T.sblock("D"):
            vi = T.axis.spatial(256, i)
            D[vi] = D[vi] * T.bfloat16(W[vi] * T.float32(3))
"""

REDUCTION = reduction("bfloat16")  # the float8 tests' program, over bfloat16


def bfloat16_inputs(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    return rng.standard_normal(shape).astype(np.float32).astype(ml_dtypes.bfloat16)


def ties(rng: np.random.Generator, count: int) -> np.ndarray:
    """float32 values exactly halfway between two bfloat16 values (both parities of the
    lower one), and a few that are not, with NaN and infinities."""
    upper = rng.integers(0, 0x7F00, size=count, dtype=np.uint32) << 16
    bits = upper | np.uint32(0x8000)
    bits[::3] |= np.uint32(0x0001)  # just above the tie
    values = bits.view(np.float32).copy()
    values[::2] *= -1
    values[:4] = [np.nan, np.inf, -np.inf, 0.0]
    return values


def test_elementwise_rounds_each_operation_and_ties_to_even() -> None:
    rng = np.random.default_rng(0)
    args = {
        "A": bfloat16_inputs(rng, (256,)),
        "B": bfloat16_inputs(rng, (256,)),
        "W": ties(rng, 256),
        "C": np.zeros(256, ml_dtypes.bfloat16),
        "D": np.zeros(256, ml_dtypes.bfloat16),
    }
    out = run_both_exactly(ELEMENTWISE, args)
    # the rounding on store of a tie, against ml_dtypes (which rounds to nearest even too)
    converted = args["W"].astype(ml_dtypes.bfloat16).astype(np.float32)
    assert np.isnan(out["D"].astype(np.float32)[0]) and np.isnan(converted[0])


def test_reduction_into_float32_and_into_bfloat16() -> None:
    rng = np.random.default_rng(1)
    args = {
        "A": bfloat16_inputs(rng, (64, 128)),
        "B": bfloat16_inputs(rng, (128,)),
        "S": np.zeros(64, np.float32),
        "M": np.zeros(64, ml_dtypes.bfloat16),
    }
    out = run_both_exactly(REDUCTION, args)
    want = args["A"].astype(np.float64) @ args["B"].astype(np.float64)
    np.testing.assert_allclose(out["S"], want, rtol=1e-4, atol=1e-4)


CAST_TIES = """
@T.prim_func(s_tir=True)
def main(W: T.Buffer((512,), "float32"), C: T.Buffer((512,), "bfloat16"), R: T.Buffer((512,), "int16")):
    T.func_attr({"tirx.noalias": True})
    for io in range(32):
        for ii in T.vectorized(16):
            with T.sblock("C"):
                vi = T.axis.spatial(512, io * 16 + ii)
                C[vi] = T.bfloat16(W[vi])
                R[vi] = T.reinterpret("int16", T.bfloat16(W[vi]))
"""


def test_store_rounds_float32_to_nearest_even_as_ml_dtypes() -> None:
    rng = np.random.default_rng(2)
    args = {
        "W": ties(rng, 512),
        "C": np.zeros(512, ml_dtypes.bfloat16),
        "R": np.zeros(512, np.int16),
    }
    out = run_both_exactly(CAST_TIES, args)
    want = args["W"].astype(ml_dtypes.bfloat16)
    finite = ~np.isnan(args["W"])
    assert (out["C"].view(np.uint16)[finite] == want.view(np.uint16)[finite]).all()
    assert (out["R"].view(np.uint16) == out["C"].view(np.uint16)).all()

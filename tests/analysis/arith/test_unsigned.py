"""Unsigned integers wrap: a - b of two uint8 values is never negative, so the difference of
two operands cannot decide a min, max or comparison of unsigned values (it once made
max(A[i], B[i]) of uint8 loads A[i], and the CPU backend then computed C = A; found on TVM's
test_target_codegen_aarch64 min/max programs). Bounds still decide what they can."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tirc.analysis.arith import Analyzer
from tirc.driver.run import run_file
from tirc.ir import dtype as dt
from tirc.ir import expr as E
from tirc.ir.buffer import make_buffer
from tirc.ir.expr import IntImm, Var


def _load(name: str, dtype: dt.DataType) -> E.BufferLoad:
    buffer = make_buffer(name, (IntImm(8),), dtype)
    return E.BufferLoad(buffer, (Var("i", dt.INT32),))


@pytest.mark.parametrize("bits", [8, 16, 32, 64])
def test_min_max_and_comparisons_of_unsigned_values_stay(bits: int) -> None:
    kind = dt.make("uint", bits)
    a, b = _load("A", kind), _load("B", kind)
    analyzer = Analyzer()
    for node in (E.Max(a, b), E.Min(a, b), E.GE(a, b), E.LT(a, b)):
        assert type(analyzer.simplify(node)) is type(node), node


def test_bounds_still_decide_unsigned_extrema() -> None:
    kind = dt.make("uint", 8)
    a = _load("A", kind)
    analyzer = Analyzer()
    assert analyzer.simplify(E.Max(a, IntImm(0, kind))) == a
    assert analyzer.simplify(E.Min(a, IntImm(255, kind))) == a


@pytest.mark.parametrize("kind", ["uint8", "uint32", "int8"])
def test_compiled_max_and_min_agree_with_the_interpreter(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "extrema.tir"
    path.write_text(
        f"""
@T.prim_func
def main(A: T.Buffer((8,), "{kind}"), B: T.Buffer((8,), "{kind}"), C: T.Buffer((8,), "{kind}"),
         D: T.Buffer((8,), "{kind}"), E: T.Buffer((8,), "bool")):
    for i in range(8):
        C[i] = T.max(A[i], B[i])
        D[i] = T.min(A[i], B[i])
        E[i] = A[i] >= B[i]
"""
    )
    save = tmp_path / "out.npz"
    assert run_file(str(path), target="cpu", check=True, save=str(save)) == 0
    out = np.load(save)
    np.testing.assert_array_equal(out["C"], np.maximum(out["A"], out["B"]))
    np.testing.assert_array_equal(out["D"], np.minimum(out["A"], out["B"]))
    np.testing.assert_array_equal(out["E"], out["A"] >= out["B"])

"""Each dtype's arithmetic against numpy: integer wrap-around, floor and truncating division,
float rounding (float16, bfloat16, float32), casts, NaN and infinity."""

from __future__ import annotations

import warnings
from functools import cache

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from tests.interp.build import elementwise
from tirc import interp
from tirc.diagnostics import DiagnosticError
from tirc.interp.memory.storage import array_type
from tirc.ir import expr as E
from tirc.ir.dtype import parse_dtype

SIZE = 16
INT_TYPES = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]
FLOAT_TYPES = ["float16", "float32", "float64", "bfloat16"]
ARITH = {"add": E.Add, "sub": E.Sub, "mul": E.Mul}


@cache
def binary(op: str, dtype: str) -> object:
    return elementwise(SIZE, [dtype, dtype], dtype, lambda a, b: getattr(E, op)(a, b))


@cache
def cast(source: str, target: str) -> object:
    return elementwise(SIZE, [source], target, lambda a: E.Cast(parse_dtype(target), a))


def run_binary(op: str, dtype: str, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    out = np.zeros(SIZE, array_type(parse_dtype(dtype)))
    interp.run(binary(op, dtype), {"in0": a, "in1": b, "out": out})  # type: ignore[arg-type]
    return out


def int_arrays(dtype: str) -> st.SearchStrategy[np.ndarray]:
    return hnp.arrays(np.dtype(dtype), SIZE)


@pytest.mark.parametrize("dtype", INT_TYPES)
@pytest.mark.parametrize("op", sorted(ARITH))
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_integer_arithmetic_wraps_like_numpy(op: str, dtype: str, data: st.DataObject) -> None:
    a = data.draw(int_arrays(dtype))
    b = data.draw(int_arrays(dtype))
    expected = {"add": np.add, "sub": np.subtract, "mul": np.multiply}[op](a, b)
    np.testing.assert_array_equal(run_binary(ARITH[op].__name__, dtype, a, b), expected)


def nonzero(dtype: str) -> st.SearchStrategy[np.ndarray]:
    info = np.iinfo(dtype)
    elements = st.integers(int(info.min), int(info.max)).filter(lambda v: v != 0)
    return hnp.arrays(np.dtype(dtype), SIZE, elements=elements)


@pytest.mark.parametrize("dtype", INT_TYPES)
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_floor_and_truncating_division(dtype: str, data: st.DataObject) -> None:
    a = data.draw(int_arrays(dtype))
    b = data.draw(nonzero(dtype))
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        floor_q, floor_r = a // b, a % b  # numpy: floor division, remainder with the divisor's sign
        trunc_r = np.fmod(a, b)  # C: remainder with the dividend's sign
        trunc_q = ((a - trunc_r) // b).astype(a.dtype)
    np.testing.assert_array_equal(run_binary("FloorDiv", dtype, a, b), floor_q)
    np.testing.assert_array_equal(run_binary("FloorMod", dtype, a, b), floor_r)
    np.testing.assert_array_equal(run_binary("Div", dtype, a, b), trunc_q)
    np.testing.assert_array_equal(run_binary("Mod", dtype, a, b), trunc_r)


def test_division_signs() -> None:
    a = np.array([7, -7, 7, -7] * 4, np.int32)
    b = np.array([2, 2, -2, -2] * 4, np.int32)
    assert run_binary("FloorDiv", "int32", a, b)[:4].tolist() == [3, -4, -4, 3]
    assert run_binary("FloorMod", "int32", a, b)[:4].tolist() == [1, 1, -1, -1]
    assert run_binary("Div", "int32", a, b)[:4].tolist() == [3, -3, -3, 3]
    assert run_binary("Mod", "int32", a, b)[:4].tolist() == [1, -1, 1, -1]


@pytest.mark.parametrize("op", ["FloorDiv", "FloorMod", "Div", "Mod"])
def test_integer_division_by_zero_is_a_located_error(op: str) -> None:
    a = np.ones(SIZE, np.int32)
    b = np.ones(SIZE, np.int32)
    b[5] = 0
    with pytest.raises(DiagnosticError) as caught:
        run_binary(op, "int32", a, b)
    diagnostic = caught.value.diagnostics[0]
    what = "modulo" if "Mod" in op else "division"
    # said once: a modulo's message was followed by "(division)"
    assert diagnostic.message.startswith(f"integer {what} by zero (1 ")
    assert diagnostic.message.endswith(" 0)")
    assert diagnostic.span is not None and diagnostic.span.line == 2


def float_arrays(dtype: str) -> st.SearchStrategy[np.ndarray]:
    kind = array_type(parse_dtype(dtype))
    if kind.itemsize == 2:  # every bit pattern: subnormals, infinities and NaNs included
        return hnp.arrays(np.uint16, SIZE).map(lambda bits: bits.view(kind))
    return hnp.arrays(kind, SIZE)


@pytest.mark.parametrize("dtype", FLOAT_TYPES)
@pytest.mark.parametrize("op", ["Add", "Sub", "Mul", "Div"])
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_float_arithmetic_rounds_like_numpy(op: str, dtype: str, data: st.DataObject) -> None:
    a = data.draw(float_arrays(dtype))
    b = data.draw(float_arrays(dtype))
    function = {"Add": np.add, "Sub": np.subtract, "Mul": np.multiply, "Div": np.divide}[op]
    with np.errstate(all="ignore"):
        if dtype == "bfloat16":  # ml_dtypes computes in float32 and rounds, as TVM does
            expected = function(a.astype(np.float32), b.astype(np.float32)).astype(
                ml_dtypes.bfloat16
            )
        else:
            expected = function(a, b)
    got = run_binary(op, dtype, a, b)
    np.testing.assert_array_equal(got.astype(np.float64), expected.astype(np.float64))


def test_float_division_by_zero_gives_infinity_and_nan() -> None:
    a = np.array([1, -1, 0, 2] * 4, np.float32)
    b = np.array([0, 0, 0, -0.0] * 4, np.float32)
    got = run_binary("Div", "float32", a, b)[:4]
    assert got[0] == np.inf and got[1] == -np.inf and np.isnan(got[2]) and got[3] == -np.inf


def test_max_and_min_with_nan_follow_tvm() -> None:
    a = np.array([np.nan, 1.0] * 8, np.float32)
    b = np.array([1.0, np.nan] * 8, np.float32)
    got = run_binary("Max", "float32", a, b)[:2]
    assert got[0] == 1.0 and np.isnan(got[1])  # max(NaN, 1) = 1, max(1, NaN) = NaN


CASTS = [
    ("float64", "float32"),
    ("float32", "float16"),
    ("float32", "bfloat16"),
    ("float32", "float8_e4m3fn"),
    ("float32", "float8_e5m2"),
    ("int64", "int8"),
    ("int32", "uint16"),
    ("uint32", "int32"),
    ("int64", "float16"),
    ("int64", "float32"),
    ("int32", "bool"),
    ("float16", "float32"),
]


@pytest.mark.parametrize(("source", "target"), CASTS)
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_casts_match_numpy(source: str, target: str, data: st.DataObject) -> None:
    kind = array_type(parse_dtype(source))
    if parse_dtype(source).is_float:
        limit = 6e4 if kind.itemsize == 2 else 1e6
        values = data.draw(
            hnp.arrays(kind, SIZE, elements=st.floats(-limit, limit, width=kind.itemsize * 8))
        )
    else:
        values = data.draw(hnp.arrays(kind, SIZE))
    out = np.zeros(SIZE, array_type(parse_dtype(target)))
    interp.run(cast(source, target), {"in0": values, "out": out})  # type: ignore[arg-type]
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        expected = (
            values.astype(np.float32).astype(out.dtype)
            if target.startswith("float8")
            else values.astype(out.dtype)
        )
    np.testing.assert_array_equal(out.astype(np.float64), expected.astype(np.float64))


@settings(max_examples=25, deadline=None)
@given(hnp.arrays(np.float32, SIZE, elements=st.floats(-2e9, 2e9, width=32)))
def test_float_to_int_truncates_toward_zero(values: np.ndarray) -> None:
    out = np.zeros(SIZE, np.int32)
    interp.run(cast("float32", "int32"), {"in0": values, "out": out})  # type: ignore[arg-type]
    np.testing.assert_array_equal(out, np.trunc(values).astype(np.int32))


@pytest.mark.parametrize("bad", [np.nan, np.inf, 3e9, -3e9])
def test_float_to_int_out_of_range_is_an_error(bad: float) -> None:
    values = np.zeros(SIZE, np.float32)
    values[3] = bad
    with pytest.raises(DiagnosticError, match="out of range"):
        interp.run(cast("float32", "int32"), {"in0": values, "out": np.zeros(SIZE, np.int32)})  # type: ignore[arg-type]

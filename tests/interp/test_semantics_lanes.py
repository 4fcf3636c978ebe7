"""The rules of tirc.interp.semantics that take one lane or numpy lanes (round_to,
reinterpret) give the same values both ways, and the one-lane and lane forms of a rule that
has two (float_to_int and lanes_float_to_int) agree, including where a value is out of range:
the thread model uses one form, the lockstep model the other (issue #20)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tirc.interp.fault import Fault
from tirc.interp.memory.lanes import Lanes
from tirc.interp.semantics import arith
from tirc.interp.semantics.bits import reinterpret
from tirc.interp.semantics.cast import _EXACT_INTEGERS, _EXACT_WIDENINGS, Cast, cast_kind, is_exact
from tirc.interp.semantics.operators import EXTREMA
from tirc.interp.semantics.values import round_to, value_type
from tirc.interp.semantics.warp import split_linear
from tirc.interp.semantics.wmma import to_memory
from tirc.interp.threads.scheduler import BlockContext
from tirc.ir.dtype import parse_dtype
from tirc.ir.integer import int_range

FLOATS = ["float16", "bfloat16", "float32", "float64", "float8_e4m3fn", "float8_e5m2"]
ANY_FLOAT = st.floats(allow_nan=True, allow_infinity=True, width=64)


def _same(a: float, b: float) -> bool:
    return (math.isnan(a) and math.isnan(b)) or (
        a == b and math.copysign(1, a) == math.copysign(1, b)
    )


@pytest.mark.parametrize("kind", FLOATS)
@settings(max_examples=60, deadline=None)
@given(values=st.lists(ANY_FLOAT, min_size=1, max_size=8))
def test_round_to_one_lane_and_lanes_agree(kind: str, values: list[float]) -> None:
    dtype = parse_dtype(kind)
    with np.errstate(all="ignore"):  # as lane code runs: overflow rounds to infinity
        lanes = round_to(np.array(values, np.float64)[None, :], dtype)
    assert isinstance(lanes, np.ndarray) and lanes.dtype == value_type(dtype)
    for value, lane in zip(values, lanes[0].tolist(), strict=True):
        one = round_to(value, dtype)
        assert isinstance(one, float) and _same(one, float(lane)), (value, one, lane)


@pytest.mark.parametrize(
    ("source", "target"),
    [("float16", "int16"), ("bfloat16", "uint16"), ("float32", "int32"), ("int8x4", "int32")],
)
@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_reinterpret_one_lane_and_lanes_agree(source: str, target: str, seed: int) -> None:
    source_type, target_type = parse_dtype(source), parse_dtype(target)
    rng = np.random.default_rng(seed)
    if source_type.is_float:
        row = round_to(rng.standard_normal((1, 1)) * 100, source_type)
    else:
        low, high = int_range(source_type.element)
        row = rng.integers(low, high, (1, source_type.lanes), endpoint=True, dtype=np.int64)
        row = row.astype(value_type(source_type))
    assert isinstance(row, np.ndarray)
    lanes = reinterpret(row, source_type, target_type)
    assert isinstance(lanes, np.ndarray)
    one_lane = row[0].tolist()
    one = reinterpret(
        one_lane[0] if source_type.lanes == 1 else tuple(one_lane), source_type, target_type
    )
    assert one == lanes[0, 0].item()


@pytest.mark.parametrize("kind", ["int8", "uint8", "int32", "uint32", "int64"])
@settings(max_examples=80, deadline=None)
@given(x=ANY_FLOAT)
def test_float_to_int_one_lane_and_lanes_agree(kind: str, x: float) -> None:
    dtype = parse_dtype(kind)
    low, high = int_range(dtype)
    values, bad = arith.lanes_float_to_int(np.array([[x]]), low, high, value_type(dtype))
    try:
        one = arith.float_to_int(x, low, high, kind, site=0)
    except Fault as fault:
        assert bad[0, 0]
        assert fault.message == arith.cast_out_of_range(x, kind)
    else:
        assert not bad[0, 0] and values[0, 0] == one


@pytest.mark.parametrize("node", list(EXTREMA), ids=lambda node: node.__name__)
@settings(max_examples=60, deadline=None)
@given(x=ANY_FLOAT, y=ANY_FLOAT)
def test_min_max_one_lane_and_lanes_agree(node: type, x: float, y: float) -> None:
    """The thread model's `x if x < y else y` (its symbol) and the lanes rule keep the same
    operand, NaN and signed zeros included (min(NaN, 1) is 1, min(1, NaN) NaN, as TVM)."""
    operator = EXTREMA[node]
    one = eval(f"x if x {operator.symbol} y else y", {"x": x, "y": y})
    lanes = operator.lanes(np.array([[x]]), np.array([[y]]))
    assert _same(one, float(lanes[0, 0])), (x, y, one, lanes)


def test_a_tile_store_truncates_rounds_and_finds_what_does_not_fit() -> None:
    raw, bad = to_memory(np.array([[1.9, -1.9, 3e9, np.nan]]), parse_dtype("int32"))
    assert raw[0, :2].tolist() == [1, -1]
    assert bad is not None and bad[0].tolist() == [False, False, True, True]
    with np.errstate(all="ignore"):
        halves, none = to_memory(np.array([[1 / 3, 70000.0]]), parse_dtype("float16"))
    assert none is None
    assert halves.view(np.float16)[0].tolist() == [np.float16(1 / 3), np.inf]


def test_both_models_name_a_thread_alike() -> None:
    """A fault's thread, as the thread model's block and the lockstep model's lanes say it
    (blocks 5 to 11 of a 3x2x2 grid, 4x3x2 threads each)."""
    grid, dims = (3, 2, 2), (4, 3, 2)
    lanes = Lanes(5, 7, grid, dims)
    assert lanes.describe(lanes.count - 1) == "thread (3, 2, 1) of block (2, 1, 1)"
    for lane in range(lanes.count):
        block = BlockContext(split_linear(5 + lane // 24, grid), dims)
        assert block.describe_thread(lane % 24) == lanes.describe(lane)


@pytest.mark.parametrize(
    ("source", "target", "kind"),
    [
        ("int32", "int32", Cast.SAME),
        ("float16", "bool", Cast.TO_BOOL),
        ("bool", "int8", Cast.WRAP),
        ("int64", "uint8", Cast.WRAP),
        ("bfloat16", "int32", Cast.TRUNCATE),
        ("int32", "float16", Cast.ROUND),
        ("float32", "float8_e5m2", Cast.ROUND),
    ],
)
def test_cast_kinds(source: str, target: str, kind: Cast) -> None:
    assert cast_kind(parse_dtype(source), parse_dtype(target)) is kind


@pytest.mark.parametrize("kind", FLOATS)
def test_exact_integer_limits_are_exact_and_tight(kind: str) -> None:
    """Both models skip an int -> float rounding inside the limit: the limit is exact, the
    next integer is not (so the limit is the largest that may skip it)."""
    target, limit = parse_dtype(kind), _EXACT_INTEGERS[kind]
    assert is_exact(parse_dtype("int64"), target, (-limit, limit))
    assert not is_exact(parse_dtype("int64"), target, (0, limit + 1))
    assert round_to(float(limit), target) == limit == -round_to(float(-limit), target)
    assert round_to(float(limit + 1), target) != limit + 1


@pytest.mark.parametrize(("source", "target"), sorted(_EXACT_WIDENINGS))
@settings(max_examples=30, deadline=None)
@given(x=ANY_FLOAT)
def test_exact_widenings_change_no_value(source: str, target: str, x: float) -> None:
    with np.errstate(all="ignore"):
        value = round_to(x, parse_dtype(source))
    assert is_exact(parse_dtype(source), parse_dtype(target), (None, None))
    assert _same(round_to(value, parse_dtype(target)), value)

"""Vector lanes in the interpreter's runtime: the fast paths (one bounds check for a flat
Ramp index, slices for consecutive lanes) give what the lane-by-lane paths give, and leave
faults and masked lanes to them."""

from __future__ import annotations

import numpy as np
import pytest

from tirc.interp.fault import Fault
from tirc.interp.threads.runtime import lane_offsets, vector_load, vector_store


def test_a_flat_ramp_is_checked_once_and_offset() -> None:
    ramp = tuple(range(4, 12))
    assert lane_offsets(0, 0, ((ramp, 1, 16),), 8, 1, None) == ramp
    assert lane_offsets(0, 3, ((ramp, 2, 16),), 8, 1, None) == tuple(3 + 2 * v for v in ramp)


def test_an_out_of_bounds_lane_is_reported_by_its_index() -> None:
    with pytest.raises(Fault, match=r"index 16 is outside \[0, 16\) in dimension 0"):
        lane_offsets(7, 0, ((tuple(range(10, 18)), 1, 16),), 8, 1, None)


def test_masked_lanes_stay_none() -> None:
    mask = (True, False, True, True)
    assert lane_offsets(0, 0, ((tuple(range(4)), 1, 4),), 4, 1, mask) == (0, None, 2, 3)


@pytest.mark.parametrize("kind", ["float32", "int32", "int64", "float64"])
def test_consecutive_lanes_load_and_store_as_slices(kind: str) -> None:
    array = np.arange(16).astype(kind)
    memory = array.data
    assert vector_load(memory, tuple(range(3, 9)), None) == tuple(array[3:9].tolist())
    vector_store(memory, tuple(range(8, 12)), (1, 2, 3, 4), None)
    assert array[8:12].tolist() == [1, 2, 3, 4]
    vector_store(memory, (15, 0, None, 5), (9, 8, 7, 6), None)  # not consecutive: lane by lane
    assert (array[15], array[0], array[5]) == (9, 8, 6)


def test_float32_lanes_round_as_scalar_stores_do() -> None:
    array = np.zeros(4, np.float32)
    vector_store(array.data, (0, 1, 2, 3), (0.1, 1e300, -1e300, 1 / 3), None)
    expected = np.array([0.1, np.inf, -np.inf, 1 / 3], np.float64).astype(np.float32)
    assert array.tobytes() == expected.tobytes()


def test_a_checked_scalar_load_inside_a_vector_operand_compiles() -> None:
    """A bounds-checked load (the check binds its index with `:=`) broadcast into a vector op:
    Python forbids `:=` in a comprehension's iterable, so the lanes are bound first."""
    from tirc.interp import run
    from tirc.text import parse

    text = """
@T.prim_func
def main(a: T.handle, B: T.Buffer((8,), "float32"), j: T.int32):
    n = T.int32()
    A = T.match_buffer(a, (n,))
    B[T.Ramp(0, 1, 8)] = B[T.Ramp(0, 1, 8)] + T.Broadcast(A[j], 8) * T.Broadcast(A[j + 1], 8)
"""
    func = parse(text)["main"]
    a = np.array([1.0, 2.0, 3.0, 4.0], np.float32)
    b = np.arange(8, dtype=np.float32)
    run(func, {"a": a, "B": b, "j": 1})
    assert b.tolist() == [float(v) + 6.0 for v in range(8)]
    with pytest.raises(Exception, match="out-of-bounds load from A"):
        run(func, {"a": a, "B": np.zeros(8, np.float32), "j": 3})

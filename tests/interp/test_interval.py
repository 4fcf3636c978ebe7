"""semantics.interval: each known range holds every value the operation can give (checked
against all operand pairs of small ranges), and unbounded or zero-holding inputs stay unknown."""

from __future__ import annotations

import itertools

from tirc.interp.semantics import interval

RANGES = [(-3, -1), (-2, 2), (0, 0), (0, 3), (1, 4), (5, 5)]


def _holds(found: interval.Range, values: list[int]) -> bool:
    low, high = found
    return (low is None or low <= min(values)) and (high is None or max(values) <= high)


def test_mul_and_floordiv_hold_every_result() -> None:
    for a, b in itertools.product(RANGES, RANGES):
        xs, ys = range(a[0], a[1] + 1), range(b[0], b[1] + 1)
        products = [x * y for x in xs for y in ys]
        assert interval.mul(a, b) == (min(products), max(products))
        if b[0] <= 0 <= b[1]:
            assert interval.floordiv(a, b) == interval.UNKNOWN
        else:
            quotients = [x // y for x in xs for y in ys]
            assert interval.floordiv(a, b) == (min(quotients), max(quotients))


def test_unbounded_operands() -> None:
    assert interval.mul((None, 3), (1, 2)) == interval.UNKNOWN
    assert interval.floordiv((1, 2), (None, 3)) == interval.UNKNOWN
    assert interval.floordiv((0, None), (2, 3)) == (0, None)  # non-negative stays so
    assert interval.floordiv((-5, None), (2, 3)) == interval.UNKNOWN
    assert interval.floordiv((0, None), (-3, -2)) == interval.UNKNOWN
    assert _holds(interval.floordiv((0, None), (2, 3)), [x // 2 for x in range(100)])

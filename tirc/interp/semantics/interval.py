"""Ranges of integer values known while compiling, so that generated code can skip the
wrap-around, bounds and division checks that can never fire. None means unbounded."""

from __future__ import annotations

Bound = int | None
Range = tuple[Bound, Bound]
UNKNOWN: Range = (None, None)


def add(a: Range, b: Range) -> Range:
    low = None if a[0] is None or b[0] is None else a[0] + b[0]
    high = None if a[1] is None or b[1] is None else a[1] + b[1]
    return low, high


def sub(a: Range, b: Range) -> Range:
    return add(a, _negate(b))


def _known(r: Range) -> tuple[int, int] | None:
    """Both ends of r, or None when either is unbounded."""
    low, high = r
    return None if low is None or high is None else (low, high)


def mul(a: Range, b: Range) -> Range:
    x_range, y_range = _known(a), _known(b)
    if x_range is None or y_range is None:
        return UNKNOWN
    corners = [x * y for x in x_range for y in y_range]
    return min(corners), max(corners)


def floordiv(a: Range, b: Range) -> Range:
    """a // b for a divisor of one sign; unknown when the divisor's range holds zero."""
    divisor = _known(b)
    if divisor is None or divisor[0] <= 0 <= divisor[1]:
        return UNKNOWN
    dividend = _known(a)
    if dividend is None:
        if divisor[0] > 0 and a[0] is not None and a[0] >= 0:
            return 0, None
        return UNKNOWN
    corners = [x // y for x in dividend for y in divisor]
    return min(corners), max(corners)


def floormod(a: Range, b: Range) -> Range:
    """a % b (floor): in [0, b) for a positive divisor; a itself when already inside."""
    if b[0] is None or b[0] <= 0 or b[1] is None:
        return UNKNOWN
    if a[0] is not None and a[1] is not None and 0 <= a[0] and a[1] < b[0]:
        return a
    return 0, b[1] - 1


def truncdiv(a: Range, b: Range) -> Range:
    if a[0] is not None and a[0] >= 0 and b[0] is not None and b[0] > 0:
        return floordiv(a, b)
    return UNKNOWN


def truncmod(a: Range, b: Range) -> Range:
    if a[0] is not None and a[0] >= 0 and b[0] is not None and b[0] > 0:
        return floormod(a, b)
    return UNKNOWN


def minimum(a: Range, b: Range) -> Range:
    low = None if a[0] is None or b[0] is None else min(a[0], b[0])
    if a[1] is None:
        high = b[1]
    elif b[1] is None:
        high = a[1]
    else:
        high = min(a[1], b[1])
    return low, high


def maximum(a: Range, b: Range) -> Range:
    return _negate(minimum(_negate(a), _negate(b)))


def _negate(r: Range) -> Range:
    return (None if r[1] is None else -r[1], None if r[0] is None else -r[0])


def union(a: Range, b: Range) -> Range:
    low = None if a[0] is None or b[0] is None else min(a[0], b[0])
    high = None if a[1] is None or b[1] is None else max(a[1], b[1])
    return low, high


def within(value: Range, low: int, high: int) -> bool:
    """Whether every value of the range lies in [low, high]."""
    return value[0] is not None and value[1] is not None and low <= value[0] and value[1] <= high


def is_index_within(value: Range, extent: int | None) -> bool:
    """Whether an index of this range lies in [0, extent) for certain, so that both models
    skip its bounds check (an extent not known when compiling: never)."""
    return extent is not None and within(value, 0, extent - 1)

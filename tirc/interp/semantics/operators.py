"""The binary operators of expressions: what each means on one lane (Python's operator, or an
arith helper, in the thread model's generated code) and on many (numpy, in the lockstep
model), and the range rule by which integer results skip wrapping.

Integers wrap modulo 2**bits; floats round to their dtype after each operation; integer
division and modulo by zero are faults; min keeps a when a < b, else b (so min(NaN, x) is x
and min(x, NaN) is NaN, as TVM), max alike.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from tirc.interp.semantics import arith, interval
from tirc.ir import expr as E

Lanes = Callable[[np.ndarray, np.ndarray], np.ndarray]
Bounds = Callable[[interval.Range, interval.Range], interval.Range]


@dataclass(frozen=True)
class Operator:
    symbol: str  # Python's spelling on one lane
    lanes: Lanes
    bounds: Bounds | None = None


ARITHMETIC: dict[type, Operator] = {
    E.Add: Operator("+", np.add, interval.add),
    E.Sub: Operator("-", np.subtract, interval.sub),
    E.Mul: Operator("*", np.multiply, interval.mul),
}


def _keeping_first(compare: Lanes) -> Lanes:
    """min or max on lanes: x where compare(x, y) holds, else y (as `x if x < y else y`)."""

    def extremum(x: np.ndarray, y: np.ndarray) -> np.ndarray:
        return np.where(compare(x, y), x, y)

    return extremum


EXTREMA: dict[type, Operator] = {  # symbol: the comparison that keeps the first operand
    E.Min: Operator("<", _keeping_first(np.less), interval.minimum),
    E.Max: Operator(">", _keeping_first(np.greater), interval.maximum),
}
COMPARISONS: dict[type, Operator] = {
    E.EQ: Operator("==", np.equal),
    E.NE: Operator("!=", np.not_equal),
    E.LT: Operator("<", np.less),
    E.LE: Operator("<=", np.less_equal),
    E.GT: Operator(">", np.greater),
    E.GE: Operator(">=", np.greater_equal),
}

BITWISE: dict[str, Operator] = {  # T.bitwise_*: two's-complement values stay in range
    "bitwise_and": Operator("&", np.bitwise_and),
    "bitwise_or": Operator("|", np.bitwise_or),
    "bitwise_xor": Operator("^", np.bitwise_xor),
}
SHIFTS: dict[str, Operator] = {  # T.shift_*: an amount outside [0, bits) is a fault
    "shift_left": Operator("<<", np.left_shift),  # wraps to the dtype
    "shift_right": Operator(">>", np.right_shift),  # arithmetic on signed values
}


@dataclass(frozen=True)
class Division:
    """Integer and float division or modulo. On integers, Python's floor `symbol` is right
    when `floors`, or for a >= 0 and b > 0; `one_lane` checks for zero (a fault that shows the
    operation as `written`); `by_positive` is the numpy rule for a positive constant divisor
    (no zero to check, no overflow)."""

    symbol: str
    written: str
    floors: bool
    one_lane: Callable[[int, int, int], int]
    lanes: Lanes
    by_positive: Lanes
    bounds: Bounds
    float_one_lane: Callable[[float, float], float]
    float_lanes: Lanes


def _trunc_by_positive(x: np.ndarray, by: np.ndarray) -> np.ndarray:
    return (x - np.fmod(x, by)) // by


DIVISIONS: dict[type, Division] = {
    E.FloorDiv: Division(
        "//", "//", True, arith.floordiv, arith.lanes_floordiv, np.floor_divide,
        interval.floordiv, arith.ffloordiv, arith.lanes_ffloordiv,
    ),
    E.FloorMod: Division(
        "%", "%", True, arith.floormod, arith.lanes_floormod, np.remainder,
        interval.floormod, arith.ffloormod, arith.lanes_ffloormod,
    ),
    E.Div: Division(
        "//", "/", False, arith.truncdiv, arith.lanes_truncdiv, _trunc_by_positive,
        interval.truncdiv, arith.fdiv, np.true_divide,
    ),
    E.Mod: Division(
        "%", "%", False, arith.truncmod, arith.lanes_truncmod, np.fmod,
        interval.truncmod, arith.fmod, arith.lanes_fmod,
    ),
}  # fmt: skip

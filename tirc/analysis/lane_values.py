"""Integer expressions evaluated for every lane of a warp at once: each variable is a numpy
array (one value per lane) or a scalar, and the result is their elementwise value, with the
language's meaning of `//` and `%` (floor), `T.truncdiv`, the bitwise calls and selects.

Only the integer and boolean index arithmetic that addresses are made of is covered; a
load, a float or a variable without a value raises `NotEvaluable`, naming the reason.

    evaluate(tx % 16 * 32 + tx // 16 * 16, {tx: np.arange(32)}) -> array([0, 32, ..., 496])
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import numpy.typing as npt

from tirc.ir import expr as E
from tirc.ir.functor import Dispatch

Values = npt.NDArray[np.int64]


class NotEvaluable(Exception):
    """An expression whose lanes cannot be computed from the values given; the message
    says what is missing (a variable, a load of memory, a float)."""


def evaluate(expr: E.PrimExpr, values: Mapping[E.Var, Values | int]) -> Values:
    """The value of `expr` per lane (broadcast where it does not depend on a lane)."""
    return _RULES(values, expr)


_RULES: Dispatch[Mapping[E.Var, Values | int], [], Values] = Dispatch("lane value")


def _array(value: Values | int) -> Values:
    return np.asarray(value, dtype=np.int64)


def _nonzero_divisor(b: Values) -> Values:
    # lanes a select discards may divide by zero; their value is never used
    return np.where(b == 0, 1, b)


@_RULES.register(E.IntImm)
def _int(values: Mapping[E.Var, Values | int], node: E.IntImm) -> Values:
    return _array(node.value)


@_RULES.register(E.Var)
def _var(values: Mapping[E.Var, Values | int], node: E.Var) -> Values:
    if node not in values:
        raise NotEvaluable(f"'{node.name}' has no known value")
    return _array(values[node])


@_RULES.register(E.Cast)
def _cast(values: Mapping[E.Var, Values | int], node: E.Cast) -> Values:
    if node.dtype.is_float:
        raise NotEvaluable(f"a cast to {node.dtype}")
    inner = _RULES(values, node.value)
    return (inner != 0).astype(np.int64) if node.dtype.is_bool else inner


_BINARY = {
    E.Add: np.add,
    E.Sub: np.subtract,
    E.Mul: np.multiply,
    E.Min: np.minimum,
    E.Max: np.maximum,
    E.EQ: np.equal,
    E.NE: np.not_equal,
    E.LT: np.less,
    E.LE: np.less_equal,
    E.GT: np.greater,
    E.GE: np.greater_equal,
    E.And: np.logical_and,
    E.Or: np.logical_or,
}


@_RULES.register(E.BinaryOp, E.CompareOp, E.LogicalOp)
def _binary(
    values: Mapping[E.Var, Values | int], node: E.BinaryOp | E.CompareOp | E.LogicalOp
) -> Values:
    a, b = _RULES(values, node.a), _RULES(values, node.b)
    if isinstance(node, E.FloorDiv):
        return np.floor_divide(a, _nonzero_divisor(b))
    if isinstance(node, E.FloorMod):
        return np.mod(a, _nonzero_divisor(b))
    if isinstance(node, (E.Div, E.Mod)):
        divisor = _nonzero_divisor(b)
        quotient = np.sign(a) * np.sign(divisor) * (np.abs(a) // np.abs(divisor))
        return quotient if isinstance(node, E.Div) else a - divisor * quotient
    return _array(_BINARY[type(node)](a, b))


@_RULES.register(E.Not)
def _not(values: Mapping[E.Var, Values | int], node: E.Not) -> Values:
    return _array(_RULES(values, node.a) == 0)


@_RULES.register(E.Select)
def _select(values: Mapping[E.Var, Values | int], node: E.Select) -> Values:
    condition = _RULES(values, node.condition)
    return np.where(
        condition != 0, _RULES(values, node.true_value), _RULES(values, node.false_value)
    )


@_RULES.register(E.Let)
def _let(values: Mapping[E.Var, Values | int], node: E.Let) -> Values:
    return _RULES({**values, node.var: _RULES(values, node.value)}, node.body)


_CALLS = {
    "shift_left": np.left_shift,
    "shift_right": np.right_shift,
    "bitwise_and": np.bitwise_and,
    "bitwise_or": np.bitwise_or,
    "bitwise_xor": np.bitwise_xor,
}


@_RULES.register(E.Call)
def _call(values: Mapping[E.Var, Values | int], node: E.Call) -> Values:
    args = [arg for arg in node.args if isinstance(arg, E.PrimExpr)]
    if node.op in _CALLS and len(args) == 2:
        return _array(_CALLS[node.op](_RULES(values, args[0]), _RULES(values, args[1])))
    if node.op == "bitwise_not" and len(args) == 1:
        return np.invert(_RULES(values, args[0]))
    if node.op in ("likely", "assume") and len(args) == 1:
        return _RULES(values, args[0])
    if node.op == "if_then_else" and len(args) == 3:
        condition = _RULES(values, args[0])
        return np.where(condition != 0, _RULES(values, args[1]), _RULES(values, args[2]))
    raise NotEvaluable(f"a call of T.{node.op}")


@_RULES.register(E.PrimExpr)
def _other(values: Mapping[E.Var, Values | int], node: E.PrimExpr) -> Values:
    raise NotEvaluable(f"a {type(node).__name__}")

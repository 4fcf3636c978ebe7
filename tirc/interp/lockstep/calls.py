"""Intrinsic calls in the lockstep GPU mode, one rule per name (see expr).

Lanewise intrinsics and extern functions apply their one-lane semantics to each element, so
that results are identical; warp shuffles gather within each warp of 32 threads from the
lanes that execute the call; barriers do nothing (lockstep order is a legal schedule of a
race-free kernel); the wmma calls are in wmma. Calls not listed here (ptx, atomics,
all-reduce, pointers) make the kernel fall back to the thread model.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from tirc.interp.lockstep.expr import (
    CallRule,
    Eval,
    ExprCompiler,
    Mask,
    Unsupported,
    checked_division,
    narrow,
)
from tirc.interp.lockstep.wmma import RULES as WMMA_RULES
from tirc.interp.memory.lanes import Frame, fault_in_lane, first_lane
from tirc.interp.semantics import arith, math_functions
from tirc.interp.semantics import values as V
from tirc.interp.semantics.bits import reinterpret_bits
from tirc.interp.semantics.extensions import extern_function
from tirc.interp.semantics.operators import DIVISIONS
from tirc.interp.semantics.warp import SHUFFLES, WARP_SIZE, shuffle_source
from tirc.ir.dtype import DataType
from tirc.ir.expr import Call, Mod, PrimExpr, StringImm


def _exprs(call: Call, start: int = 0) -> list[PrimExpr]:
    """The arguments from `start` (negative: from the end), which must all be expressions."""
    args = call.args[start:]
    exprs = [arg for arg in args if isinstance(arg, PrimExpr)]
    if len(exprs) != len(args):
        raise Unsupported(f"arguments of T.{call.op}")
    return exprs


def _operands(compiler: ExprCompiler, call: Call) -> list[Eval]:
    return [compiler.compile(arg) for arg in _exprs(call)]


def _each(function: Callable[..., object], result: DataType, args: list[Eval]) -> Eval:
    apply = V.elementwise(function, V.value_type(result))
    return lambda frame, mask: apply(*[arg(frame, mask) for arg in args])


def _lanewise(compiler: ExprCompiler, call: Call) -> Eval:
    """An intrinsic of math_functions.LANEWISE: the thread model's one-lane function applied to
    each element, so that results are identical."""
    args = _operands(compiler, call)
    source = call.expr_arg(0).dtype.element
    result = call.dtype
    if call.op == "fabs" and source.is_integer:
        return lambda frame, mask: np.abs(args[0](frame, mask))
    if call.op in math_functions.FLOAT_UNARY and not source.is_float:
        raise Unsupported(f"{call.op} of {source}")
    if call.op in math_functions.FLOAT_BINARY and not result.is_float:
        raise Unsupported(f"{call.op} of {result}")
    each = _each(math_functions.lane_function(call.op, source, result.element), result, args)
    if result.is_float:
        return lambda frame, mask: V.round_array(each(frame, mask), result)
    return each


def _fmod(compiler: ExprCompiler, call: Call) -> Eval:
    a, b = _operands(compiler, call)
    source = call.expr_arg(0).dtype
    modulo = DIVISIONS[Mod]  # fmod is Mod: C's remainder, on integers and on floats
    if source.is_integer:
        return checked_division(a, b, modulo, compiler.site(call, "fmod"))
    return lambda frame, mask: V.round_array(
        modulo.float_lanes(V.wide(a(frame, mask)), V.wide(b(frame, mask))), call.dtype
    )


def _shift(left: bool) -> CallRule:
    def rule(compiler: ExprCompiler, call: Call) -> Eval:
        a, b = _operands(compiler, call)
        dtype = call.expr_arg(0).dtype.element
        if not dtype.is_integer:
            raise Unsupported(f"shift of {dtype}")
        site = compiler.site(call, "shift")
        kind = V.value_type(dtype)

        def shift(frame: Frame, mask: Mask) -> np.ndarray:
            x, amount = a(frame, mask), b(frame, mask)
            bad = (amount < 0) | (amount >= dtype.bits)
            if bad.any():
                found = first_lane(bad, frame.lanes, mask)
                if found is not None:
                    message = arith.bad_shift(dtype.bits)
                    raise fault_in_lane(site, message, frame.lanes, found[0])
                amount = np.where(bad, 0, amount)
            amount = amount.astype(kind)
            return np.left_shift(x, amount) if left else np.right_shift(x, amount)

        return shift

    return rule


def _bitwise(op: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> CallRule:
    def rule(compiler: ExprCompiler, call: Call) -> Eval:
        a, b = _operands(compiler, call)
        return lambda frame, mask: op(a(frame, mask), b(frame, mask))

    return rule


def _bitwise_not(compiler: ExprCompiler, call: Call) -> Eval:
    (a,) = _operands(compiler, call)
    return lambda frame, mask: np.invert(a(frame, mask))


def _if_then_else(compiler: ExprCompiler, call: Call) -> Eval:
    """Only the branch a lane takes is evaluated for it (as in the scalar interpreter)."""
    c, t, f = _operands(compiler, call)
    if call.expr_arg(0).dtype.lanes > 1:
        # per vector lane: both vectors evaluated whole, then picked
        return lambda frame, mask: np.where(c(frame, mask), t(frame, mask), f(frame, mask))
    kind = V.value_type(call.dtype)

    def choose(frame: Frame, mask: Mask) -> np.ndarray:
        condition = c(frame, mask)
        if condition.shape[0] == 1:
            return t(frame, mask) if condition[0, 0] else f(frame, mask)
        count = frame.lanes.count
        taken = narrow(mask, condition, count)
        skipped = narrow(mask, ~condition, count)
        yes = t(frame, taken) if taken.any() else np.zeros((1, 1), kind)
        no = f(frame, skipped) if skipped.any() else np.zeros((1, 1), kind)
        return np.where(condition, yes, no)

    return choose


def _first(compiler: ExprCompiler, call: Call) -> Eval:
    return _operands(compiler, call)[0]


def _constant(value: object) -> CallRule:
    def rule(compiler: ExprCompiler, call: Call) -> Eval:
        result = V.constant(value, call.dtype)
        return lambda frame, mask: result

    return rule


def _reinterpret(compiler: ExprCompiler, call: Call) -> Eval:
    (value_arg,) = _exprs(call, -1)
    value = compiler.compile(value_arg)
    source = value_arg.dtype
    target = call.dtype
    if source.is_handle or target.is_handle:
        raise Unsupported("pointer reinterpret")
    return lambda frame, mask: V.decode(
        reinterpret_bits(V.encode(value(frame, mask), source), target), target
    )


def _extern(compiler: ExprCompiler, call: Call) -> Eval:
    name_arg = call.args[0]
    if not isinstance(name_arg, StringImm):
        raise Unsupported("extern call")
    operands = _exprs(call, 1)
    args = [compiler.compile(a) for a in operands]
    if any(a.dtype.lanes > 1 or a.dtype.is_handle for a in operands):
        raise Unsupported("extern call on vectors or pointers")
    name = name_arg.value
    arg_types = [a.dtype for a in operands]
    function = extern_function(name, arg_types, call.dtype)
    if function is None:
        raise Unsupported(f"extern {name}")
    each = _each(function, call.dtype, args)
    if call.dtype.is_float:
        return lambda frame, mask: V.round_array(each(frame, mask), call.dtype)
    return each


def _nextafter(compiler: ExprCompiler, call: Call) -> Eval:
    a, b = _operands(compiler, call)
    kind = {"float64": np.float64, "float32": np.float32, "float16": np.float16}.get(
        str(call.dtype.element)
    )
    if kind is None:
        raise Unsupported(f"nextafter of {call.dtype}")
    held = V.value_type(call.dtype)
    return lambda frame, mask: np.nextafter(
        a(frame, mask).astype(kind), b(frame, mask).astype(kind)
    ).astype(held)


def _barrier(compiler: ExprCompiler, call: Call) -> Eval:
    nothing = np.zeros((1, 1), np.int32)
    return lambda frame, mask: nothing


def _warp_shuffle(kind: int) -> CallRule:
    """warp.shuffle_source for every lane; a source that is not executing the call (or not
    there) gives the thread its own value."""

    def rule(compiler: ExprCompiler, call: Call) -> Eval:
        _, value, amount, width, _ = _operands(compiler, call)

        def shuffle(frame: Frame, mask: Mask) -> np.ndarray:
            lanes = frame.lanes
            values = np.broadcast_to(value(frame, mask), (lanes.count, call.dtype.lanes))
            delta = np.broadcast_to(amount(frame, mask)[:, 0].astype(np.int64), (lanes.count,))
            size = np.broadcast_to(width(frame, mask)[:, 0].astype(np.int64), (lanes.count,))
            lane = lanes.tid % WARP_SIZE
            source = shuffle_source(kind, lane, delta, size)
            thread = lanes.tid - lane + source
            valid = (source >= 0) & (source < WARP_SIZE) & (thread < lanes.per_block)
            origin = np.where(valid, lanes.index - lane + source, lanes.index)
            if mask is not None:
                valid &= mask[origin]
            return np.where(valid[:, None], values[origin], values)

        return shuffle

    return rule


def _active_mask(compiler: ExprCompiler, call: Call) -> Eval:
    """Each thread's warp's executing threads, one bit per lane of the warp."""

    def active_mask(frame: Frame, mask: Mask) -> np.ndarray:
        lanes = frame.lanes
        warps_per_block = -(-lanes.per_block // WARP_SIZE)
        warp = lanes.block_row * warps_per_block + lanes.tid // WARP_SIZE
        bits = np.left_shift(np.uint64(1), (lanes.tid % WARP_SIZE).astype(np.uint64))
        if mask is not None:
            bits = np.where(mask, bits, np.uint64(0))
        totals = np.zeros(lanes.blocks * warps_per_block, dtype=np.uint64)
        np.add.at(totals, warp, bits)
        return totals[warp][:, None].astype(V.value_type(call.dtype))

    return active_mask


RULES: dict[str, CallRule] = {
    **dict.fromkeys(math_functions.LANEWISE, _lanewise),
    "fmod": _fmod,
    "nextafter": _nextafter,
    "shift_left": _shift(True),
    "shift_right": _shift(False),
    "bitwise_and": _bitwise(np.bitwise_and),
    "bitwise_or": _bitwise(np.bitwise_or),
    "bitwise_xor": _bitwise(np.bitwise_xor),
    "bitwise_not": _bitwise_not,
    "if_then_else": _if_then_else,
    "likely": _first,
    "assume": _constant(True),
    "undef": _constant(0),
    "reinterpret": _reinterpret,
    "call_extern": _extern,
    "call_pure_extern": _extern,
    "tvm_storage_sync": _barrier,
    **{name: _warp_shuffle(kind) for name, kind in SHUFFLES.items()},
    "tvm_warp_activemask": _active_mask,
    **WMMA_RULES,
}

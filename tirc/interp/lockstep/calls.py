"""Intrinsic calls in lockstep kernels, one lane rule per name (registered into expr.CALLS).

Lanewise intrinsics and extern functions apply their one-lane semantics to each element, so
that results are identical; warp shuffles gather within each warp of 32 threads from the
lanes that execute the call; barriers do nothing (lockstep order is a legal schedule of a
race-free kernel); the wmma calls are in wmma. Calls without a rule (ptx, atomics,
all-reduce, pointers) make the kernel run in the thread model.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from tirc.interp.lockstep.expr import CALLS, LaneExprCompiler, Mask, Unsupported, divide, narrow
from tirc.interp.memory.lanes import Frame, fault_first
from tirc.interp.memory.storage import array_type
from tirc.interp.semantics import arith, math_functions
from tirc.interp.semantics import values as V
from tirc.interp.semantics.bits import reinterpret
from tirc.interp.semantics.extensions import extern_function
from tirc.interp.semantics.operators import BITWISE, DIVISIONS, SHIFTS, Operator
from tirc.interp.semantics.warp import SHUFFLES, WARP_SIZE, shuffle_source
from tirc.interp.threads.context import Code
from tirc.ir.dtype import DataType
from tirc.ir.expr import Call, Mod, PrimExpr, StringImm


def _exprs(call: Call) -> list[PrimExpr]:
    return [arg for arg in call.args if isinstance(arg, PrimExpr)]


def _arrays(compiler: LaneExprCompiler, args: list[PrimExpr]) -> list[str]:
    return [compiler.array(compiler.compile(arg), arg.dtype) for arg in args]


def _each(
    compiler: LaneExprCompiler, function: Callable[..., object], call: Call, args: list[PrimExpr]
) -> Code:
    """A one-lane function applied to each element, so that results are identical."""
    apply = compiler.name(V.elementwise(function, V.value_type(call.dtype)), "each")
    text = f"{apply}({', '.join(_arrays(compiler, args))})"
    return Code(compiler.rounded(text, call.dtype, True) if call.dtype.is_float else text)


def _lanewise(compiler: LaneExprCompiler, call: Call) -> Code:
    args = _exprs(call)
    source, result = args[0].dtype.element, call.dtype
    if call.op == "fabs" and source.is_integer:
        return Code(f"_np.abs({compiler.compile(args[0]).text})")
    if call.op in math_functions.FLOAT_UNARY and not source.is_float:
        raise Unsupported(f"{call.op} of {source}")
    if call.op in math_functions.FLOAT_BINARY and not result.is_float:
        raise Unsupported(f"{call.op} of {result}")
    function = math_functions.lane_function(call.op, source, result.element)
    return _each(compiler, function, call, args)


def _extern(compiler: LaneExprCompiler, call: Call) -> Code:
    name_arg, operands = call.args[0], _exprs(call)[1:]
    if not isinstance(name_arg, StringImm):
        raise Unsupported("extern call")
    if any(a.dtype.lanes > 1 or a.dtype.is_handle for a in operands):
        raise Unsupported("extern call on vectors or pointers")
    function = extern_function(name_arg.value, [a.dtype for a in operands], call.dtype)
    if function is None:
        raise Unsupported(f"extern {name_arg.value}")
    return _each(compiler, function, call, operands)


def _fmod(compiler: LaneExprCompiler, call: Call) -> Code:
    a, b = _arrays(compiler, _exprs(call))
    modulo = DIVISIONS[Mod]  # fmod is Mod: C's remainder, on integers and on floats
    if call.expr_arg(0).dtype.is_integer:
        checked = compiler.name(divide(modulo, compiler.ctx.site(call, "fmod")), "fmod")
        return Code(f"{checked}({a}, {b}, _frame, _mask)")
    wide, function = compiler.name(V.wide, "wide"), compiler.name(modulo.float_lanes, "fmod")
    return Code(compiler.rounded(f"{function}({wide}({a}), {wide}({b}))", call.dtype, True))


def _nextafter(compiler: LaneExprCompiler, call: Call) -> Code:
    if array_type(call.dtype).type not in (np.float64, np.float32, np.float16):
        raise Unsupported(f"nextafter of {call.dtype}")  # numpy's nextafter knows these
    return _each(compiler, math_functions.nextafter(call.dtype.element), call, _exprs(call))


def _reinterpret(compiler: LaneExprCompiler, call: Call) -> Code:
    value_arg = _exprs(call)[-1]
    if value_arg.dtype.is_handle or call.dtype.is_handle:
        raise Unsupported("pointer reinterpret")
    (value,) = _arrays(compiler, [value_arg])
    source, target = compiler.dtype(value_arg.dtype), compiler.dtype(call.dtype)
    return Code(f"{compiler.name(reinterpret, 'reinterpret')}({value}, {source}, {target})")


def _shift_of(operator: Operator, dtype: DataType, site: int) -> Callable[..., np.ndarray]:
    kind = V.value_type(dtype)

    def shift(x: np.ndarray, amount: np.ndarray, frame: Frame, mask: Mask) -> np.ndarray:
        bad = (amount < 0) | (amount >= dtype.bits)
        if bad.any():
            fault_first(bad, frame, mask, site, arith.bad_shift(dtype.bits))
            amount = np.where(bad, 0, amount)
        amount = amount.astype(kind)
        return operator.lanes(x, amount)

    return shift


def _shift(operator: Operator) -> Callable[[LaneExprCompiler, Call], Code]:
    def rule(compiler: LaneExprCompiler, call: Call) -> Code:
        dtype = call.expr_arg(0).dtype.element
        if not dtype.is_integer:
            raise Unsupported(f"shift of {dtype}")
        a, b = _arrays(compiler, _exprs(call))
        shift = compiler.name(_shift_of(operator, dtype, compiler.ctx.site(call, "shift")), "shift")
        return Code(f"{shift}({a}, {b}, _frame, _mask)")

    return rule


def _bitwise(symbol: str) -> Callable[[LaneExprCompiler, Call], Code]:
    def rule(compiler: LaneExprCompiler, call: Call) -> Code:
        a, b = (compiler.operand(compiler.compile(x), x.dtype) for x in _exprs(call))
        return Code(f"({a} {symbol} {b})")

    return rule


def _choose(kind: np.dtype) -> Callable[..., np.ndarray]:
    """if_then_else with a lane-varying condition: each branch for the lanes that take it."""

    def choose(
        condition: np.ndarray,
        yes: Callable[[np.ndarray], np.ndarray],
        no: Callable[[np.ndarray], np.ndarray],
        mask: Mask,
        count: int,
    ) -> np.ndarray:
        taken, skipped = narrow(mask, condition, count), narrow(mask, ~condition, count)
        t = yes(taken) if taken.any() else np.zeros((1, 1), kind)
        f = no(skipped) if skipped.any() else np.zeros((1, 1), kind)
        return np.where(condition, t, f)

    return choose


def _if_then_else(compiler: LaneExprCompiler, call: Call) -> Code:
    """Only the branch a lane takes is evaluated for it (as in the thread model)."""
    c, t, f = _exprs(call)
    condition = compiler.compile(c)
    if not condition.varying:
        yes, no = _arrays(compiler, [t, f])
        return Code(f"({yes} if {condition.text} else {no})")
    if c.dtype.lanes > 1:  # per vector lane: both vectors evaluated whole, then picked
        yes = compiler.operand(compiler.compile(t), call.dtype)
        no = compiler.operand(compiler.compile(f), call.dtype)
        return Code(f"_np.where({condition.text}, {yes}, {no})")
    yes, no = compiler.compile(t).text, compiler.compile(f).text
    choose = compiler.name(_choose(V.value_type(call.dtype)), "choose")
    return Code(
        f"{choose}({condition.text}, lambda _mask: {yes}, lambda _mask: {no}, _mask, _lanes.count)"
    )


def _warp_shuffle(kind: int, width: int) -> Callable[..., np.ndarray]:
    """warp.shuffle_source for every lane; a source that is not executing the call (or not
    there) gives the thread its own value."""

    def shuffle(
        value: object, amount: object, size: object, frame: Frame, mask: Mask
    ) -> np.ndarray:
        lanes = frame.lanes
        values = np.broadcast_to(np.asarray(value), (lanes.count, width))
        delta = np.broadcast_to(np.asarray(amount).reshape(-1).astype(np.int64), (lanes.count,))
        segment = np.broadcast_to(np.asarray(size).reshape(-1).astype(np.int64), (lanes.count,))
        lane = lanes.tid % WARP_SIZE
        source = shuffle_source(kind, lane, delta, segment)
        thread = lanes.tid - lane + source
        valid = (source >= 0) & (source < WARP_SIZE) & (thread < lanes.per_block)
        origin = np.where(valid, lanes.index - lane + source, lanes.index)
        if mask is not None:
            valid &= mask[origin]
        return np.where(valid[:, None], values[origin], values)

    return shuffle


def _shuffle(compiler: LaneExprCompiler, call: Call) -> Code:
    _, value, amount, width, _ = (compiler.compile(a).text for a in _exprs(call))
    shuffle = compiler.name(_warp_shuffle(SHUFFLES[call.op], call.dtype.lanes), call.op)
    return Code(f"{shuffle}({value}, {amount}, {width}, _frame, _mask)")


def _active_mask_of(kind: np.dtype) -> Callable[[Frame, Mask], np.ndarray]:
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
        return totals[warp][:, None].astype(kind)

    return active_mask


def _active_mask(compiler: LaneExprCompiler, call: Call) -> Code:
    function = compiler.name(_active_mask_of(V.value_type(call.dtype)), "active_mask")
    return Code(f"{function}(_frame, _mask)")


CALLS.update(
    {
        **dict.fromkeys(math_functions.LANEWISE, _lanewise),
        "likely": lambda compiler, call: compiler.compile(call.expr_arg(0)),
        "ignore_loop_partition": lambda compiler, call: compiler.compile(call.expr_arg(0)),
        "assume": lambda compiler, call: Code("_np.ones((1, 1), bool)"),
        "undef": lambda compiler, call: Code(compiler.array(Code("0"), call.dtype)),
        "tvm_storage_sync": lambda compiler, call: Code("None"),  # lockstep order is legal
        "if_then_else": _if_then_else,
        "call_extern": _extern,
        "call_pure_extern": _extern,
        "fmod": _fmod,
        "nextafter": _nextafter,
        "reinterpret": _reinterpret,
        **{name: _shift(operator) for name, operator in SHIFTS.items()},
        **{name: _bitwise(operator.symbol) for name, operator in BITWISE.items()},
        "bitwise_not": lambda compiler, call: Code(f"(~{compiler.compile(call.expr_arg(0)).text})"),
        **dict.fromkeys(SHUFFLES, _shuffle),
        "tvm_warp_activemask": _active_mask,
    }
)

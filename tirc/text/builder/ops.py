"""The expression functions of `T`: dtype constructors, explicit node constructors (`T.Add`,
`T.Cast`, `T.Select`, `T.Ramp`...), TVM's folding helpers (`T.max`, `T.floordiv`,
`T.if_then_else`), limits (`T.max_value`), and every intrinsic of the registry as a Call.

Explicit constructors build the node as written (no folding); the lower-case helpers go
through `arith`, as TVM's do, and fold.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from tirc.diagnostics import Span
from tirc.ir import arith, intrinsics, tvm_spelling
from tirc.ir import dtype as dt
from tirc.ir import expr as ir
from tirc.ir.buffer import Buffer, BufferRegion
from tirc.ir.dtype import DataType
from tirc.ir.expr import Call, CommReducer, FloatImm, IntImm, PrimExpr, StringImm, Var
from tirc.ir.integer import int_range
from tirc.ir.intrinsics import FIXED_RESULTS, Result
from tirc.ir.node import IRError
from tirc.text.builder.args import (
    Param,
    Signature,
    dtype_of,
    expect_dtype,
    expect_expr,
    expect_int,
    expect_list,
    expect_str,
)
from tirc.text.builder.expr import CALLERS, Evaluator
from tirc.text.builder.macro import apply_lambda
from tirc.text.builder.values import (
    Arg,
    Builtin,
    DTypeValue,
    HandleType,
    Invocation,
    Lambda,
    Namespace,
)
from tirc.text.syntax import tree

SPECIAL_FLOATS = {"inf": math.inf, "-inf": -math.inf, "nan": math.nan}


# The signatures of the common builtins, made once.
CONDITIONAL = Signature("condition", "true_value", "false_value")
CAST = Signature("dtype", "value")
RAMP = Signature("base", "stride", "lanes")
BROADCAST = Signature("value", "lanes")


def located(ev: Evaluator, span: Span, build: Callable[[], Any]) -> Any:
    """Run an IR construction, turning an invariant violation into an error at `span`."""
    try:
        return build()
    except (IRError, arith.ArithError) as problem:
        raise ev.error(span, str(problem)) from None


def construct_dtype(ev: Any, callee: DTypeValue, inv: Invocation) -> Any:
    """`T.int32()` declares a variable; `T.float32(1)`, `T.float32("inf")` are constants;
    `T.int64(x)` converts an expression."""
    dtype = callee.dtype
    if inv.kwargs:
        size_var = inv.kwargs.get("is_size_var")
        unknown = [name for name in inv.kwargs if name != "is_size_var"]
        if unknown:
            raise ev.error(
                inv.kwargs[unknown[0]].span, f"{inv.name} has no parameter '{unknown[0]}'"
            )
    else:
        size_var = None
    if not inv.args:
        name = inv.targets[0] if len(inv.targets) == 1 else "v"
        return ev.declare_variable(name, dtype, bool(size_var and size_var.value), inv.span)
    if len(inv.args) > 1:
        raise ev.error(inv.args[1].span, f"{inv.name} takes one argument ({len(inv.args)} given)")
    arg = inv.args[0]
    value = ev.check_value(arg.value)
    if isinstance(value, str):
        if value not in SPECIAL_FLOATS or not dtype.is_float:
            raise ev.error(arg.span, f"{inv.name} cannot make a constant from {value!r}")
        return FloatImm(SPECIAL_FLOATS[value], dtype)
    if isinstance(value, (bool, int, float)):
        return located(ev, arg.span, lambda: arith.checked_const(value, dtype))
    expr = ev.as_expr(value, arg.span)
    return located(ev, inv.span, lambda: arith.cast(dtype, expr))


def _literal_like(value: Any, other: Any) -> Any:
    """A Python number next to an expression takes the expression's dtype (friendlier than
    TVM's constructors, which insist on one dtype)."""
    if isinstance(value, (bool, int, float)) and isinstance(other, PrimExpr):
        return arith.make_const(value, other.dtype)
    return value


def _explicit_binary(node: Any) -> Callable[[Any, Invocation], PrimExpr]:
    signature = Signature("a", "b")

    def build(ev: Any, inv: Invocation) -> PrimExpr:
        bound = signature.bind(ev, inv)
        a, b = ev.check_value(bound.value("a")), ev.check_value(bound.value("b"))
        a, b = _literal_like(a, b), _literal_like(b, a)
        left, right = ev.as_expr(a, bound["a"].span), ev.as_expr(b, bound["b"].span)
        return located(ev, inv.span, lambda: node(left, right, span=inv.span))

    return build


def _explicit_not(ev: Any, inv: Invocation) -> PrimExpr:
    bound = Signature("a").bind(ev, inv)
    operand = expect_expr(ev, bound["a"])
    return located(ev, inv.span, lambda: ir.Not(operand, span=inv.span))


def _cast(ev: Any, inv: Invocation) -> PrimExpr:
    bound = CAST.bind(ev, inv)
    dtype = expect_dtype(ev, bound["dtype"])
    value = expect_expr(ev, bound["value"])
    return located(ev, inv.span, lambda: ir.Cast(dtype, value, span=inv.span))


def _select(ev: Any, inv: Invocation) -> PrimExpr:
    bound = CONDITIONAL.bind(ev, inv)
    condition = ev.as_expr(bound.value("condition"), bound["condition"].span)
    t, f = ev.check_value(bound.value("true_value")), ev.check_value(bound.value("false_value"))
    t, f = _literal_like(t, f), _literal_like(f, t)
    true_value = ev.as_expr(t, bound["true_value"].span)
    false_value = ev.as_expr(f, bound["false_value"].span)
    return located(
        ev, inv.span, lambda: ir.Select(condition, true_value, false_value, span=inv.span)
    )


def _ramp(ev: Any, inv: Invocation) -> PrimExpr:
    bound = RAMP.bind(ev, inv)
    base, stride = ev.check_value(bound.value("base")), ev.check_value(bound.value("stride"))
    base, stride = _literal_like(base, stride), _literal_like(stride, base)
    base_expr = ev.as_expr(base, bound["base"].span)
    stride_expr = ev.as_expr(stride, bound["stride"].span)
    lanes, scalable = vector_lanes(ev, bound["lanes"])
    return located(
        ev, inv.span, lambda: ir.Ramp(base_expr, stride_expr, lanes, scalable, span=inv.span)
    )


def _broadcast(ev: Any, inv: Invocation) -> PrimExpr:
    bound = BROADCAST.bind(ev, inv)
    value = expect_expr(ev, bound["value"])
    lanes, scalable = vector_lanes(ev, bound["lanes"])
    return located(ev, inv.span, lambda: ir.Broadcast(value, lanes, scalable, span=inv.span))


def vector_lanes(ev: Any, arg: Arg) -> tuple[int, bool]:
    """A vector's lanes: a constant, or `T.vscale() * k` (k lanes a 128 bits: scalable)."""
    value = ev.check_value(arg.value)
    if isinstance(value, PrimExpr) and not isinstance(value, IntImm):
        multiple = ir.vscale_multiple(value)
        if multiple is not None:
            return multiple, True
    return expect_int(ev, arg), False


def _shuffle(ev: Any, inv: Invocation) -> PrimExpr:
    bound = Signature("vectors", "indices").bind(ev, inv)
    vectors = tuple(ev.as_expr(v, bound["vectors"].span) for v in expect_list(ev, bound["vectors"]))
    indices = tuple(ev.as_expr(i, bound["indices"].span) for i in expect_list(ev, bound["indices"]))
    return located(ev, inv.span, lambda: ir.Shuffle(vectors, indices, span=inv.span))


def _let(ev: Any, inv: Invocation) -> PrimExpr:
    bound = Signature("body", Param("where", None)).bind(ev, inv)
    where = ev.check_value(bound.value("where"))
    if not isinstance(where, dict) or len(where) != 1:
        raise ev.error(bound["where"].span, "T.Let needs where={variable: value} with one entry")
    var, value = next(iter(where.items()))
    if not isinstance(var, Var):
        raise ev.error(bound["where"].span, f"T.Let binds a variable, not {arith.describe(var)}")
    value_expr = ev.as_expr(_literal_like(value, var), bound["where"].span)
    body = expect_expr(ev, bound["body"])
    return located(ev, inv.span, lambda: ir.Let(var, value_expr, body, span=inv.span))


def _folding_binary(op: str) -> Callable[[Any, Invocation], PrimExpr]:
    """`T.max(a, b)`, `T.floordiv(a, b)`: TVM's helpers, which match types and fold."""
    signature = Signature("a", "b")

    def build(ev: Any, inv: Invocation) -> PrimExpr:
        bound = signature.bind(ev, inv)
        a, b = bound.value("a"), bound.value("b")
        return located(
            ev,
            inv.span,
            lambda: arith.arithmetic(op, ev.check_value(a), ev.check_value(b), inv.span),
        )

    return build


def _ceildiv(ev: Any, inv: Invocation) -> PrimExpr:
    bound = Signature("a", "b").bind(ev, inv)
    a, b = ev.check_value(bound.value("a")), ev.check_value(bound.value("b"))

    def build() -> PrimExpr:
        total = arith.arithmetic("-", arith.arithmetic("+", a, b, inv.span), 1, inv.span)
        return arith.arithmetic("floordiv", total, b, inv.span)

    return located(ev, inv.span, build)


def _abs(ev: Any, inv: Invocation) -> PrimExpr:
    bound = Signature("value").bind(ev, inv)
    value = expect_expr(ev, bound["value"])
    dtype: DataType = value.dtype
    if dtype.is_float:
        return Call(dtype, "fabs", (value,), span=inv.span)
    if dtype.is_uint or dtype.is_bool:
        return value
    if isinstance(value, IntImm):
        return IntImm(abs(value.value), dtype)
    zero = arith.make_const(0, dtype)
    return ir.Select(
        arith.arithmetic(">=", value, zero),
        value,
        arith.arithmetic("-", zero, value),
        span=inv.span,
    )


def _limit(which: str) -> Callable[[Any, Invocation], PrimExpr]:
    def build(ev: Any, inv: Invocation) -> PrimExpr:
        bound = Signature("dtype").bind(ev, inv)
        dtype = expect_dtype(ev, bound["dtype"])
        return located(ev, inv.span, lambda: limit(which, dtype))

    return build


def limit(which: str, dtype: DataType) -> PrimExpr:
    """The largest or smallest value of a type, or its infinity."""
    if which == "infinity":
        if not dtype.is_float:
            raise arith.ArithError(f"{dtype} has no infinity")
        return FloatImm(math.inf, dtype)
    if dtype.is_bool or dtype.is_integer:
        low, high = int_range(dtype)
        return IntImm(high if which == "max" else low, dtype)
    if dtype.is_float:
        largest = {16: 65504.0, 32: 3.4028234663852886e38, 64: 1.7976931348623157e308}.get(
            dtype.bits, 65504.0
        )
        if dtype.kind == "bfloat":
            largest = 3.3895313892515355e38
        return FloatImm(largest if which == "max" else -largest, dtype)
    raise arith.ArithError(f"{dtype} has no {which} value")


def _if_then_else(ev: Any, inv: Invocation) -> PrimExpr:
    bound = CONDITIONAL.bind(ev, inv)
    condition = ev.check_value(bound.value("condition"))
    t, f = ev.check_value(bound.value("true_value")), ev.check_value(bound.value("false_value"))
    if isinstance(condition, bool) or isinstance(condition, IntImm):
        chosen = t if bool(condition.value if isinstance(condition, IntImm) else condition) else f
        return ev.as_expr(chosen, inv.span)
    cond = ev.as_expr(condition, bound["condition"].span)

    def build() -> PrimExpr:
        a, b = arith.match_types(arith.as_expr(t), arith.as_expr(f))
        return Call(a.dtype, "if_then_else", (arith.to_bool(cond), a, b), span=inv.span)

    return located(ev, inv.span, build)


def call_argument(ev: Any, arg: Arg, callee: str) -> object:
    """An intrinsic's argument: an expression, a string, a buffer (for a few builtins)."""
    value = ev.check_value(arg.value)
    if isinstance(value, str):
        return StringImm(value, span=arg.span)
    if isinstance(value, BufferRegion):
        # No intrinsic reads a region, and none prints as one (`A[0:2]` as an argument).
        raise ev.error(arg.span, f"{callee} takes expressions, not a BufferRegion")
    if isinstance(value, Buffer):
        return value
    if isinstance(value, (DTypeValue, HandleType)):
        return StringImm(str(dtype_of(ev, value, arg.span)), span=arg.span)
    return ev.as_expr(value, arg.span)


def _arity_error(ev: Any, inv: Invocation, intrinsic: intrinsics.Intrinsic, given: int) -> Any:
    low, high = intrinsic.min_args, intrinsic.max_args
    if high is None:
        wanted = f"at least {low}"
    elif low == high:
        wanted = str(low)
    else:
        wanted = f"{low} to {high}"
    plural = "" if wanted == "1" else "s"
    return ev.error(inv.span, f"{inv.name} takes {wanted} argument{plural} ({given} given)")


# Defaults TVM fills in, so the call always has its full argument list.
DEFAULT_ARGUMENTS: dict[str, tuple[Callable[[], PrimExpr], ...]] = {
    "tvm_storage_sync": (lambda: IntImm(0, dt.BOOL), lambda: IntImm(-1, dt.INT32)),
}
# Intrinsics whose operands meet at one type first, as the arithmetic operators' do.
INTEGER_ONLY = frozenset(
    "shift_left shift_right bitwise_and bitwise_or bitwise_xor bitwise_not".split()
)
MATCHED = frozenset(
    "atan2 pow fmod hypot copysign nextafter shift_left shift_right bitwise_and bitwise_or "
    "bitwise_xor".split()
)


def intrinsic_call(name: str) -> Callable[[Any, Invocation], PrimExpr]:
    """A generic builtin for registry intrinsic `name`: arity checked, result typed."""
    intrinsic = intrinsics.lookup(name)
    assert intrinsic is not None, name

    def build(ev: Any, inv: Invocation) -> PrimExpr:
        if inv.kwargs:
            key = next(iter(inv.kwargs))
            raise ev.error(inv.kwargs[key].span, f"{inv.name} takes no keyword arguments")
        args = list(inv.args)
        defaults = DEFAULT_ARGUMENTS.get(name, ())
        full = intrinsic.min_args + len(defaults)
        if intrinsic.min_args <= len(args) < full:
            args += [Arg(make(), inv.span) for make in defaults[len(args) - intrinsic.min_args :]]
        given = len(args)
        explicit = intrinsic.result is Result.EXPLICIT and name not in FIXED_RESULTS
        if given < intrinsic.min_args or (
            intrinsic.max_args is not None and given > intrinsic.max_args
        ):
            raise _arity_error(ev, inv, intrinsic, len(inv.args))
        dtype: DataType
        if explicit and name in intrinsics.DTYPE_LAST:
            dtype = expect_dtype(ev, args[-1])
            args = args[:-1]
        elif explicit:
            dtype = expect_dtype(ev, args[0])
            args = args[1:]
        values = [call_argument(ev, arg, inv.name) for arg in args]
        if name in INTEGER_ONLY:  # as its operator (`|`, `~`) does: the printer writes that
            for value, arg in zip(values, args, strict=True):
                if isinstance(value, PrimExpr) and not (
                    value.dtype.is_integer or value.dtype.is_bool
                ):
                    message = f"{inv.name} needs integer operands, not {value.dtype}"
                    raise ev.error(arg.span, message)
        if name in MATCHED and len(values) == 2:
            for value, arg in zip(values, args, strict=True):
                if not isinstance(value, PrimExpr):
                    what = arith.describe(value)
                    raise ev.error(arg.span, f"{inv.name} takes expressions, not {what}")
            a, b = (value for value in values if isinstance(value, PrimExpr))
            values = list(located(ev, inv.span, lambda: arith.match_types(a, b)))
        if not explicit:
            dtype = result_type(ev, inv, intrinsic, values)
        return located(ev, inv.span, lambda: Call(dtype, name, tuple(values), span=inv.span))

    return build


def result_type(
    ev: Any, inv: Invocation, intrinsic: intrinsics.Intrinsic, values: list[object]
) -> DataType:
    result = intrinsic.result
    if intrinsic.name in FIXED_RESULTS:
        return FIXED_RESULTS[intrinsic.name]
    if result is Result.INT32:
        return dt.INT32
    if result is Result.HANDLE:
        return dt.HANDLE
    position = 1 if result is Result.SECOND_ARG else 0
    operand = values[position] if len(values) > position else None
    if not isinstance(operand, PrimExpr):
        raise ev.error(inv.span, f"{inv.name} needs an expression as argument {position + 1}")
    dtype: DataType = operand.dtype
    if result is Result.BOOL:
        return dt.BOOL.with_lanes(dtype.lanes)
    return dtype


def _comm_reducer(ev: Any, inv: Invocation) -> CommReducer:
    """`T.comm_reducer(lambda x, y: x + y, [T.float32(0)])`: a combiner over (lhs, rhs) and
    the identity of each value it reduces."""
    bound = Signature("combiner", "identity").bind(ev, inv)
    combiner = ev.check_value(bound.value("combiner"))
    identity = [ev.as_expr(v, bound["identity"].span) for v in expect_list(ev, bound["identity"])]
    if not isinstance(combiner, Lambda) or len(combiner.node.params) != 2 * len(identity):
        raise ev.error(
            bound["combiner"].span,
            f"T.comm_reducer needs a lambda of {2 * len(identity)} parameters (lhs..., rhs...)",
        )
    names = combiner.node.params
    dtypes = [value.dtype for value in identity] * 2
    variables = [Var(name, dtype, span=inv.span) for name, dtype in zip(names, dtypes, strict=True)]
    arguments = [Arg(var, inv.span) for var in variables]
    result = apply_lambda(ev, combiner, Invocation("combiner", arguments, {}, inv.span))
    results = result if isinstance(result, (tuple, list)) else (result,)
    count = len(identity)
    return located(
        ev,
        inv.span,
        lambda: CommReducer(
            tuple(variables[:count]),
            tuple(variables[count:]),
            tuple(ev.as_expr(r, inv.span) for r in results),
            tuple(identity),
            span=inv.span,
        ),
    )


def _call_intrin(ev: Any, inv: Invocation) -> PrimExpr:
    """`T.call_intrin(dtype, "tirx.name", *args)`: a call of a named intrinsic."""
    if len(inv.args) < 2:
        raise ev.error(inv.span, f"{inv.name} takes a dtype, an intrinsic name and its arguments")
    dtype = expect_dtype(ev, inv.args[0])
    name = expect_str(ev, inv.args[1]).removeprefix("tirx.").removeprefix("tir.")
    values = tuple(call_argument(ev, arg, inv.name) for arg in inv.args[2:])
    return Call(dtype, name, values, span=inv.span)


def _ptx_legacy_mma(ev: Any, inv: Invocation) -> PrimExpr:
    """`T.ptx_legacy.mma(shape, layouts, types, a, a_off, b, b_off, c, c_off, saturate)`,
    TVM 0.27's spelling of `T.ptx_mma`: void unless `dtype=` names the accumulator's type."""
    return _legacy_call(ev, inv, "ptx_mma", 13, 14, dt.VOID, extra=("operator",))


def _ptx_legacy_ldmatrix(ev: Any, inv: Invocation) -> PrimExpr:
    """`T.ptx_legacy.ldmatrix(trans, num, type, local, local_off, shared, shared_off,
    dtype=...)`: `T.ptx_ldmatrix`, its element type int8 unless `dtype=` says (as TVM's)."""
    return _legacy_call(ev, inv, "ptx_ldmatrix", 7, 7, dt.INT8)


def _legacy_call(
    ev: Any,
    inv: Invocation,
    name: str,
    low: int,
    high: int,
    dtype: DataType | None,
    extra: tuple[str, ...] = (),
) -> PrimExpr:
    args = list(inv.args)
    for key, arg in inv.kwargs.items():
        if key == "dtype":
            dtype = expect_dtype(ev, arg)
        elif key in extra and len(args) < high:
            args.append(arg)
        else:
            raise ev.error(arg.span, f"{inv.name} has no parameter '{key}'")
    if dtype is None:
        raise ev.error(inv.span, f'{inv.name} needs its result type: dtype="..."')
    result = dtype
    if not low <= len(args) <= high:
        wanted = str(low) if low == high else f"{low} or {high}"
        raise ev.error(inv.span, f"{inv.name} takes {wanted} arguments ({len(args)} given)")
    values = tuple(call_argument(ev, arg, inv.name) for arg in args)
    return located(ev, inv.span, lambda: Call(result, name, values, span=inv.span))


def _cp_async_raw(ev: Any, inv: Invocation) -> PrimExpr:
    """`T.s_tir.cp_async_raw(dtype, dst, dst_off, src, src_off, bytes)`: what TVM 0.27's
    InjectPTXAsyncCopy writes for `T.ptx_cp_async`."""
    if inv.kwargs or len(inv.args) != 6:
        raise ev.error(inv.span, f"{inv.name} takes 6 arguments: dtype, dst, dst_off, src, ...")
    dtype = expect_dtype(ev, inv.args[0])
    values = tuple(call_argument(ev, arg, inv.name) for arg in inv.args[1:])
    return located(ev, inv.span, lambda: Call(dtype, "ptx_cp_async", values, span=inv.span))


EXPLICIT_NODES: dict[str, type[PrimExpr]] = {
    "Add": ir.Add,
    "Sub": ir.Sub,
    "Mul": ir.Mul,
    "Div": ir.Div,
    "Mod": ir.Mod,
    "FloorDiv": ir.FloorDiv,
    "FloorMod": ir.FloorMod,
    "Min": ir.Min,
    "Max": ir.Max,
    "EQ": ir.EQ,
    "NE": ir.NE,
    "LT": ir.LT,
    "LE": ir.LE,
    "GT": ir.GT,
    "GE": ir.GE,
    "And": ir.And,
    "Or": ir.Or,
}
FOLDING: dict[str, str] = {
    "max": "max",
    "min": "min",
    "truncdiv": "truncdiv",
    "truncmod": "truncmod",
    "floordiv": "floordiv",
    "floormod": "floormod",
    "indexdiv": "floordiv",
    "indexmod": "floormod",
    "div": "div",
}


def _tvm_spelled(name: str) -> Callable[[Any, Invocation], PrimExpr]:
    """A member of TVM's `T.ptx` or `T.cuda`: tirc's own intrinsic where the call is one in
    TVM's spelling (`T.ptx.cp("async", "commit_group", "")` is T.ptx_commit_group()), else
    the call as written."""
    build = intrinsic_call(name)

    def read(ev: Any, inv: Invocation) -> PrimExpr:
        call = build(ev, inv)
        found = tvm_spelling.from_tvm(call) if isinstance(call, Call) else None
        return call if found is None else found

    return read


def _cuda_legacy(name: str) -> Callable[[Any, Invocation], PrimExpr]:
    """`T.cuda.mma_fill_legacy(local_size, local, offset, dtype=...)` and its mma_store: TVM
    0.27's spelling of T.mma_fill and T.mma_store, with the dtype as a keyword."""
    low = high = 6 if name == "mma_store" else 3

    def read(ev: Any, inv: Invocation) -> PrimExpr:
        return _legacy_call(ev, inv, name, low, high, None)

    return read


NAMESPACES = {
    "ptx": "TVM's PTX instructions",
    "ptx_legacy": "TVM's legacy PTX intrinsics",
    "s_tir": "the nodes TVM's s_tir passes write",
    "cuda": "TVM's CUDA helpers",
    "metal": "TVM's Metal intrinsics",
}


def builtins() -> dict[str, Builtin | Namespace]:
    table: dict[str, Builtin | Namespace] = {}
    spaces: dict[str, dict[str, Any]] = {name: {} for name in NAMESPACES}
    for name in intrinsics.all_names():
        space, dot, member = name.partition(".")
        if dot:  # `T.ptx.add`: a member of a namespace of T
            spaces[space][member] = Builtin(f"T.{name}", _tvm_spelled(name))
        else:
            table[name] = Builtin(f"T.{name}", intrinsic_call(name))
    for op in ("mma_fill", "mma_store"):
        member = tvm_spelling.KEYWORD_DTYPE[op][0].removeprefix("cuda.")
        spaces["cuda"][member] = Builtin(f"T.cuda.{member}", _cuda_legacy(op))
    spaces["ptx_legacy"]["mma"] = Builtin("T.ptx_legacy.mma", _ptx_legacy_mma)
    spaces["ptx_legacy"]["ldmatrix"] = Builtin("T.ptx_legacy.ldmatrix", _ptx_legacy_ldmatrix)
    spaces["s_tir"]["cp_async_raw"] = Builtin("T.s_tir.cp_async_raw", _cp_async_raw)
    for space, members in spaces.items():
        table[space] = Namespace(f"T.{space}", members, NAMESPACES[space])
    for name, node in EXPLICIT_NODES.items():
        table[name] = Builtin(f"T.{name}", _explicit_binary(node))
    for name, op in FOLDING.items():
        table[name] = Builtin(f"T.{name}", _folding_binary(op))
    table.update(
        {
            "Not": Builtin("T.Not", _explicit_not),
            "Cast": Builtin("T.Cast", _cast),
            "Select": Builtin("T.Select", _select),
            "Ramp": Builtin("T.Ramp", _ramp),
            "Broadcast": Builtin("T.Broadcast", _broadcast),
            "Shuffle": Builtin("T.Shuffle", _shuffle),
            "Let": Builtin("T.Let", _let),
            "ceildiv": Builtin("T.ceildiv", _ceildiv),
            "abs": Builtin("T.abs", _abs),
            "max_value": Builtin("T.max_value", _limit("max")),
            "min_value": Builtin("T.min_value", _limit("min")),
            "infinity": Builtin("T.infinity", _limit("infinity")),
            "if_then_else": Builtin("T.if_then_else", _if_then_else),
            "call_intrin": Builtin("T.call_intrin", _call_intrin),
            "comm_reducer": Builtin("T.comm_reducer", _comm_reducer),
        }
    )
    return table


@CALLERS.register(DTypeValue)
def _call_dtype(ev: Evaluator, callee: DTypeValue, inv: Invocation, node: tree.Call | None) -> Any:
    return construct_dtype(ev, callee, inv)

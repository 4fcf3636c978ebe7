"""Loops: `range`, `T.serial`, `T.parallel`, `T.vectorized`, `T.unroll`, `T.thread_binding`
and `T.grid` are loop ranges; a `for` statement over one builds nested For nodes.

The loop variable's dtype follows the bounds (int64 bounds make an int64 loop; Python
numbers take the other bound's type); the extent is `stop - start`, simplified.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tirc.diagnostics import Span
from tirc.ir import arith
from tirc.ir import dtype as dt
from tirc.ir.buffer import Range
from tirc.ir.dtype import DataType
from tirc.ir.expr import PrimExpr, Var
from tirc.ir.node import IRError
from tirc.ir.stmt import EMPTY_ATTRS, Attrs, For, ForKind, IterType, IterVar, Stmt
from tirc.text.builder.args import Bound, Param, Signature, expect_attrs, expect_dtype, expect_str
from tirc.text.builder.frames import LoopFrame
from tirc.text.builder.stmt import STATEMENTS, Builder
from tirc.text.builder.values import Arg, Builtin, Invocation
from tirc.text.syntax import tree


@dataclass(frozen=True, slots=True)
class LoopSpec:
    kind: ForKind
    min: PrimExpr
    extent: PrimExpr
    dtype: DataType
    annotations: Attrs = EMPTY_ATTRS
    thread: str | None = None
    step: PrimExpr | None = None


@dataclass(frozen=True, slots=True)
class Loops:
    """What a `for` statement iterates over: one loop, or several nested (`T.grid`)."""

    loops: tuple[LoopSpec, ...]
    span: Span
    description: str = "a loop range"


def index_type(ev: Builder, values: list[Any], dtype_arg: Arg | None, span: Span) -> DataType:
    """The loop variable's dtype: as given, else the common type of the expression bounds;
    a scalar integer type either way."""
    result: DataType | None = None
    if dtype_arg is not None and ev.check_value(dtype_arg.value) is not None:
        result = expect_dtype(ev, dtype_arg)
    else:
        for value in values:
            if isinstance(value, PrimExpr):
                dtype: DataType = value.dtype
                result = dtype if result is None else arith.common_type(result, dtype)
    if result is None:
        return dt.INT32
    if not (result.is_integer and result.is_scalar):
        raise ev.error(span, f"a loop variable must be an integer, not {result}")
    return result


def convert_bound(ev: Builder, value: Any, dtype: DataType, span: Span) -> PrimExpr:
    value = ev.check_value(value)
    if isinstance(value, (bool, int, float)) and not isinstance(value, PrimExpr):
        return arith.make_const(value, dtype)
    expr = ev.as_expr(value, span)
    try:
        return arith.cast(dtype, expr)
    except arith.ArithError as problem:
        raise ev.error(span, str(problem)) from None


def loop_bounds(ev: Builder, bound: Bound, kind: ForKind, span: Span) -> LoopSpec:
    start, stop = ev.check_value(bound.value("start")), ev.check_value(bound.value("stop"))
    start_span = bound["start"].span
    stop_span = bound["stop"].span
    if stop is None:
        start, stop, stop_span = 0, start, start_span
    dtype_arg = bound["dtype"] if "dtype" in bound.values else None
    dtype = index_type(ev, [start, stop], dtype_arg, span)
    low = convert_bound(ev, start, dtype, start_span)
    high = convert_bound(ev, stop, dtype, stop_span)
    extent = arith.difference(high, low)
    step_value = ev.check_value(bound.value("step")) if "step" in bound.values else None
    step = None if step_value is None else convert_bound(ev, step_value, dtype, bound["step"].span)
    annotations = (
        expect_attrs(ev, bound["annotations"]) if "annotations" in bound.values else EMPTY_ATTRS
    )
    return LoopSpec(kind, low, extent, dtype, annotations, None, step)


LOOP = Signature(
    Param("start"),
    Param("stop", None),
    Param("annotations", None, keyword_only=True),
    Param("step", None, keyword_only=True),
    Param("dtype", None, keyword_only=True),
)


def _loop(kind: ForKind) -> Any:
    def build(ev: Builder, inv: Invocation) -> Loops:
        bound = LOOP.bind(ev, inv)
        return Loops((loop_bounds(ev, bound, kind, inv.span),), inv.span)

    return build


RANGE = Signature(Param("start"), Param("stop", None), Param("step", None))


def python_range(ev: Builder, inv: Invocation) -> Loops:
    """`range(stop)`, `range(start, stop)`, `range(start, stop, step)`: a serial loop."""
    bound = RANGE.bind(ev, inv)
    return Loops((loop_bounds(ev, bound, ForKind.SERIAL, inv.span),), inv.span)


THREAD_BINDING = Signature(
    Param("start"),
    Param("stop", None),
    Param("thread", None),
    Param("annotations", None, keyword_only=True),
)


def thread_binding(ev: Builder, inv: Invocation) -> Loops:
    """`T.thread_binding(32, thread="threadIdx.x")`, also `T.thread_binding(0, 32, "...")`."""
    bound = THREAD_BINDING.bind(ev, inv)
    thread_arg = bound["thread"]
    if ev.check_value(thread_arg.value) is None:
        if not isinstance(bound.value("stop"), str):
            raise ev.error(inv.span, 'T.thread_binding needs thread="..."')
        thread_arg = bound["stop"]
        bound.values["stop"] = Arg(None, inv.span)
    thread = expect_str(ev, thread_arg)
    spec = loop_bounds(ev, bound, ForKind.THREAD_BINDING, inv.span)
    return Loops(
        (LoopSpec(spec.kind, spec.min, spec.extent, spec.dtype, spec.annotations, thread),),
        inv.span,
    )


def grid(ev: Builder, inv: Invocation) -> Loops:
    """`T.grid(4, n, 8)`: serial loops from 0, each variable of its extent's type."""
    dtype_arg = inv.kwargs.get("dtype")
    for name, arg in inv.kwargs.items():
        if name != "dtype":
            raise ev.error(arg.span, f"T.grid has no parameter '{name}'")
    if not inv.args:
        raise ev.error(inv.span, "T.grid needs at least one extent")
    loops: list[LoopSpec] = []
    for arg in inv.args:
        value = ev.check_value(arg.value)
        start: Any = 0
        if isinstance(value, tuple) and len(value) == 2:
            start, value = value
        dtype = index_type(ev, [start, value], dtype_arg, arg.span)
        low = convert_bound(ev, start, dtype, arg.span)
        extent = convert_bound(ev, value, dtype, arg.span)
        loops.append(LoopSpec(ForKind.SERIAL, low, extent, dtype))
    return Loops(tuple(loops), inv.span)


def loop_variable_names(ev: Builder, target: tree.Expr, count: int) -> list[tuple[str, Span]]:
    if isinstance(target, tree.Name):
        if count == 1:
            return [(target.id, ev.span(target))]
        return [(f"{target.id}_{k}", ev.span(target)) for k in range(count)]
    if isinstance(target, (tree.Tuple, tree.List)):
        names = []
        for item in target.items:
            if not isinstance(item, tree.Name):
                raise ev.error(item, "a loop variable must be a name")
            names.append((item.id, ev.span(item)))
        if len(names) != count:
            raise ev.error(
                target, f"{len(names)} loop variables for {count} loop{'s' if count != 1 else ''}"
            )
        return names
    raise ev.error(target, "a loop variable must be a name")


@STATEMENTS.register(tree.For)
def build_for(ev: Builder, node: tree.For) -> None:
    loops = ev.check_value(ev.evaluate(node.iter))
    if not isinstance(loops, Loops):
        raise ev.error(
            node.iter,
            f"a for loop runs over range(...), T.serial, T.parallel, T.vectorized, T.unroll, "
            f"T.thread_binding or T.grid, not {arith.describe(loops)}",
        )
    names = loop_variable_names(ev, node.target, len(loops.loops))
    scope = ev.scope.child()
    variables = []
    for (name, span), spec in zip(names, loops.loops, strict=True):
        var = Var(name, spec.dtype, span=span)
        scope.bind(name, var)
        variables.append(var)
    if isinstance(node.target, tree.Name) and len(variables) > 1:
        scope.bind(node.target.id, tuple(variables))
    span = ev.span(node)
    frames = [
        LoopFrame(var, Range(spec.min, spec.extent, span=span))
        for var, spec in zip(variables, loops.loops, strict=True)
    ]
    ev.frames.extend(frames)
    try:
        body: Stmt = ev.build_body(node.body, scope)
    finally:
        del ev.frames[len(ev.frames) - len(frames) :]
    for var, spec in reversed(list(zip(variables, loops.loops, strict=True))):
        binding = None
        if spec.thread is not None:
            binding = IterVar(
                Var("iter", spec.dtype), None, IterType.THREAD, spec.thread, span=span
            )
        try:
            body = For(
                var,
                spec.min,
                spec.extent,
                spec.kind,
                body,
                binding,
                spec.annotations,
                spec.step,
                span=span,
            )
        except IRError as problem:
            raise ev.error(span, str(problem)) from None
    ev.emit(body)


BUILTINS = {
    "serial": Builtin("T.serial", _loop(ForKind.SERIAL)),
    "parallel": Builtin("T.parallel", _loop(ForKind.PARALLEL)),
    "vectorized": Builtin("T.vectorized", _loop(ForKind.VECTORIZED)),
    "unroll": Builtin("T.unroll", _loop(ForKind.UNROLLED)),
    "thread_binding": Builtin("T.thread_binding", thread_binding),
    "grid": Builtin("T.grid", grid),
}
RANGE_BUILTIN = Builtin("range", python_range)

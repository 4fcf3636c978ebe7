"""loop-partition: a loop whose body tests `T.likely(cond)` on its variable is cut into the
ranges where `cond` provably holds or fails for every value of the loops inside, and each
piece gets the test resolved, so the steady-state middle runs without the guard.

A condition takes part when it is a comparison (<, <=, >, >=) linear in the loop variable
with a constant coefficient, whose other variables are bound outside the loop or by inner
loops with bounds fixed outside it, or an equality `i * c + rest == 0` whose rest is fixed
outside the loop: it holds at one point, which becomes a piece of its own (as TVM 0.27, the
pieces around it keep the test); anything else (`and`, `!=`, `i * i`, loads, lets) is left
as it is. The middle is where every such condition holds; the piece before and the one after
get a condition replaced only where it provably holds or fails on the whole piece. Pieces are
normalized to start at 0, a piece of one iteration is inlined (unless
`no_unroll_loop_with_extent_one`), an empty one is dropped. Loops with constant bounds are
partitioned only with `partition_const_loop` (as in TVM 0.27, whose default is off); thread
bindings and stepped loops are left alone. Like TVM, every `likely` tag is removed at the end.
TVM 0.27 shows no effect of a `pragma_loop_partition_hint` annotation, so neither does this.

Expects tir; leaves tir (`partition_const_loop=true`):

    for i in range(20):                        for i in range(16):
        if T.likely(i < 16):        ->             B[i] = A[i]
            B[i] = A[i]                        for i in range(4):
                                                   T.evaluate(0)
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TypeGuard

from tirc.analysis.arith.analyzer import Analyzer
from tirc.analysis.arith.int_set import relax
from tirc.ir import dtype as dt
from tirc.ir import expr as E
from tirc.ir import stmt as S
from tirc.ir.buffer import Range
from tirc.ir.function import PrimFunc
from tirc.ir.functor import Mutator, vars_in, walk
from tirc.ir.node import Node
from tirc.ir.substitute import substitute
from tirc.transform.fresh_copy import fresh_copy
from tirc.transform.pass_base import Dialect, FunctionPass

Bound = E.PrimExpr | None  # None: unbounded on that side


@dataclass(frozen=True)
class Interval:
    """The loop-variable values `low <= v <= high` (inclusive; None is infinite)."""

    low: Bound
    high: Bound


@dataclass(frozen=True)
class Deduction:
    """Where a `likely` condition holds and where it fails, for all inner-loop values."""

    call: E.Call
    holds: Interval
    fails: Interval | None  # None: nowhere provably (an equality fails on two sides)


def _is_likely(node: object) -> TypeGuard[E.Call]:
    return isinstance(node, E.Call) and node.op == "likely"


def _inner_domains(body: S.Stmt, var: E.Var) -> tuple[dict[E.Var, Range], set[E.Var]]:
    """The ranges of inner loops with bounds fixed outside the loop, and every variable the
    body defines (inner loops included)."""
    loops: list[S.For] = []
    defined: set[E.Var] = set()

    def visit(node: object) -> None:
        if isinstance(node, S.For):
            loops.append(node)
            defined.add(node.loop_var)
        elif isinstance(node, S.Bind | E.Let):
            defined.add(node.var)

    walk(body, visit)
    domains: dict[E.Var, Range] = {}
    for loop in loops:
        used = vars_in(loop.min) | vars_in(loop.extent)
        if loop.step is None and var not in used and not used & defined:
            domains[loop.loop_var] = Range(loop.min, loop.extent)
    return domains, defined


def _is_plain(expr: E.PrimExpr) -> bool:
    """Arithmetic on variables and constants only: no loads, calls or lets."""
    plain = True

    def visit(node: object) -> None:
        nonlocal plain
        if isinstance(node, E.BufferLoad | E.Call | E.Let | E.Select | E.Ramp | E.Broadcast):
            plain = False

    walk(expr, visit)
    return plain


def _as_non_positive(condition: E.PrimExpr) -> E.PrimExpr | None:
    """`e` with `condition` equivalent to `e <= 0` over the integers, or None."""
    if not isinstance(condition, E.LT | E.LE | E.GT | E.GE):
        return None
    a, b = condition.a, condition.b
    if not (a.dtype.is_integer and a.dtype.is_scalar):
        return None
    one = E.const(1, a.dtype)
    if isinstance(condition, E.LT):
        return E.Add(E.Sub(a, b), one)
    if isinstance(condition, E.LE):
        return E.Sub(a, b)
    if isinstance(condition, E.GT):
        return E.Add(E.Sub(b, a), one)
    return E.Sub(b, a)


def _deduce(
    call: E.Call,
    var: E.Var,
    domains: dict[E.Var, Range],
    defined: set[E.Var],
    analyzer: Analyzer,
) -> Deduction | None:
    condition = call.args[0]
    assert isinstance(condition, E.PrimExpr)
    used = vars_in(condition)
    if var not in used or not _is_plain(condition):
        return None
    if any(other in defined and other not in domains for other in used - {var}):
        return None
    if isinstance(condition, E.EQ):
        return _deduce_point(call, condition, var, used, domains, analyzer)
    expr = _as_non_positive(condition)
    if expr is None:
        return None
    dtype = var.dtype
    rest = analyzer.simplify(_substituted(expr, var, E.const(0, dtype)))
    coefficient = analyzer.simplify(E.Sub(_substituted(expr, var, E.const(1, dtype)), rest))
    if not isinstance(coefficient, E.IntImm) or coefficient.value == 0:
        return None
    linear = E.Add(E.Mul(coefficient, var), rest)
    if not analyzer.can_prove_equal(expr, linear):
        return None
    relaxed = relax(rest, {v: r for v, r in domains.items() if v in used}, analyzer)
    scale = coefficient.value
    holds, fails = _solve(scale, relaxed.max, relaxed.min, dtype)
    return Deduction(call, _simplified(holds, analyzer), _simplified(fails, analyzer))


def _deduce_point(
    call: E.Call,
    condition: E.EQ,
    var: E.Var,
    used: set[E.Var],
    domains: dict[E.Var, Range],
    analyzer: Analyzer,
) -> Deduction | None:
    """`i * c + rest == 0` with c of 1 or -1 and rest fixed outside the loop holds at
    `i == -rest / c` alone."""
    if any(other in domains for other in used - {var}):
        return None  # an inner loop moves the point
    a, b = condition.a, condition.b
    if not (a.dtype.is_integer and a.dtype.is_scalar):
        return None
    dtype = var.dtype
    expr = E.Sub(a, b)
    rest = analyzer.simplify(_substituted(expr, var, E.const(0, dtype)))
    coefficient = analyzer.simplify(E.Sub(_substituted(expr, var, E.const(1, dtype)), rest))
    if not isinstance(coefficient, E.IntImm) or coefficient.value not in (1, -1):
        return None
    if not analyzer.can_prove_equal(expr, E.Add(E.Mul(coefficient, var), rest)):
        return None
    point = analyzer.simplify(E.Mul(rest, E.const(-coefficient.value, dtype)))
    return Deduction(call, Interval(point, point), None)


def _solve(
    scale: int, rest_max: Bound, rest_min: Bound, dtype: dt.DataType
) -> tuple[Interval, Interval]:
    """`scale * v + rest <= 0`: where it holds for the largest rest, and where it fails for
    the smallest."""

    def c(value: int) -> E.PrimExpr:
        return E.const(value, dtype)

    if scale > 0:  # v <= floor(-rest / scale)
        holds_high = None if rest_max is None else E.FloorDiv(E.Sub(c(0), rest_max), c(scale))
        fails_low = (
            None if rest_min is None else E.Add(E.FloorDiv(E.Sub(c(0), rest_min), c(scale)), c(1))
        )
        return Interval(None, holds_high), Interval(fails_low, None)
    size = -scale  # v >= ceil(rest / size)
    holds_low = None if rest_max is None else E.FloorDiv(E.Add(rest_max, c(size - 1)), c(size))
    fails_high = (
        None if rest_min is None else E.Sub(E.FloorDiv(E.Add(rest_min, c(size - 1)), c(size)), c(1))
    )
    return Interval(holds_low, None), Interval(None, fails_high)


def _simplified(interval: Interval, analyzer: Analyzer) -> Interval:
    def simplify(bound: Bound) -> Bound:
        return None if bound is None else analyzer.simplify(bound)

    return Interval(simplify(interval.low), simplify(interval.high))


def _substituted(expr: E.PrimExpr, var: E.Var, value: E.PrimExpr) -> E.PrimExpr:
    return substitute(expr, {var: value})


def _within(start: E.PrimExpr, end: E.PrimExpr, interval: Interval, analyzer: Analyzer) -> bool:
    """Whether `[start, end)` lies inside `interval` (an empty piece does, trivially)."""
    last = E.Sub(end, E.const(1, end.dtype))
    low_ok = interval.low is None or analyzer.can_prove(E.GE(start, interval.low), symbolic=True)
    high_ok = interval.high is None or analyzer.can_prove(E.LE(last, interval.high), symbolic=True)
    return low_ok and high_ok


class _Resolver(Mutator):
    """Replaces the given `likely` calls by constants and folds the branches they decide."""

    def __init__(self, values: dict[int, bool]):
        self.values = values

    def visit_Call(self, node: E.Call) -> E.PrimExpr:
        if id(node) in self.values:
            return E.const(self.values[id(node)], dt.BOOL)
        call: E.PrimExpr = self.generic_visit(node)
        if isinstance(call, E.Call) and call.op == "if_then_else":
            condition = call.args[0]
            if isinstance(condition, E.IntImm) and call is not node:
                chosen = call.args[1] if condition.value else call.args[2]
                assert isinstance(chosen, E.PrimExpr)
                return chosen
        return call

    def visit_IfThenElse(self, node: S.IfThenElse) -> S.Stmt:
        branch: S.Stmt = self.generic_visit(node)
        if branch is node or not isinstance(branch, S.IfThenElse):
            return branch
        if not isinstance(branch.condition, E.IntImm):
            return branch
        if branch.condition.value:
            return branch.then_case
        return branch.else_case or S.Evaluate(E.const(0))


class _LikelyRemover(Mutator):
    def visit_Call(self, node: E.Call) -> E.PrimExpr:
        call: E.PrimExpr = self.generic_visit(node)
        if _is_likely(call):
            argument = call.args[0]
            assert isinstance(argument, E.PrimExpr)
            return argument
        return call


class _Partitioner(Mutator):
    def __init__(self, options: LoopPartition, analyzer: Analyzer):
        self.options = options
        self.analyzer = analyzer

    def visit_For(self, node: S.For) -> S.Stmt:
        self.analyzer.bind(node.loop_var, Range(node.min, node.extent))
        if self._is_candidate(node):
            pieces = self._partition(node)
            if pieces is not None:
                return pieces
        result: S.Stmt = self.generic_visit(node)
        return result

    def _is_candidate(self, loop: S.For) -> bool:
        if loop.kind is S.ForKind.THREAD_BINDING or loop.step is not None:
            return False
        constant = E.is_const_int(loop.min) and E.is_const_int(loop.extent)
        return self.options.partition_const_loop or not constant

    def _partition(self, loop: S.For) -> S.Stmt | None:
        var = loop.loop_var
        domains, defined = _inner_domains(loop.body, var)
        calls: dict[int, E.Call] = {}

        def note(node: Node) -> None:
            if _is_likely(node):
                calls.setdefault(id(node), node)

        walk(loop.body, note)
        deductions = [
            found
            for call in calls.values()
            if (found := _deduce(call, var, domains, defined, self.analyzer)) is not None
        ]
        if not deductions:
            return None
        begin, end = loop.min, self.analyzer.simplify(E.Add(loop.min, loop.extent))
        middle_low, middle_high = begin, end
        for deduction in deductions:
            if deduction.holds.low is not None:
                middle_low = E.Max(middle_low, deduction.holds.low)
            if deduction.holds.high is not None:
                one = E.const(1, var.dtype)
                middle_high = E.Min(middle_high, E.Add(deduction.holds.high, one))
        middle_low = self.analyzer.simplify(E.Min(middle_low, end))
        middle_high = self.analyzer.simplify(E.Max(middle_high, middle_low))
        if self.analyzer.can_prove(E.LE(middle_high, middle_low), symbolic=True):
            return None  # no iteration where every condition holds
        pieces: list[S.Stmt] = []
        ranges = (
            (begin, middle_low, False),
            (middle_low, middle_high, True),
            (middle_high, end, False),
        )
        for start, stop, is_middle in ranges:
            values = {
                id(d.call): value
                for d in deductions
                if (value := self._value(d, start, stop, is_middle)) is not None
            }
            piece = self._piece(loop, start, stop, values)
            if piece is not None:
                pieces.append(piece)
        return pieces[0] if len(pieces) == 1 else S.SeqStmt(tuple(pieces))

    def _value(
        self, deduction: Deduction, start: E.PrimExpr, stop: E.PrimExpr, is_middle: bool
    ) -> bool | None:
        if is_middle or _within(start, stop, deduction.holds, self.analyzer):
            return True
        if deduction.fails is not None and _within(start, stop, deduction.fails, self.analyzer):
            return False
        return None

    def _piece(
        self, loop: S.For, start: E.PrimExpr, stop: E.PrimExpr, values: dict[int, bool]
    ) -> S.Stmt | None:
        extent = self.analyzer.simplify(E.Sub(stop, start))
        if self.analyzer.can_prove(E.LE(extent, E.const(0, extent.dtype)), symbolic=True):
            return None
        body = _Resolver(values).visit(loop.body)
        var = loop.loop_var
        if E.is_const_int(extent, 1) and not self.options.no_unroll_loop_with_extent_one:
            # the piece's one iteration, `0 + start` as TVM 0.27 writes it
            return self.visit(fresh_copy(body, {var: E.Add(E.const(0, var.dtype), start)}))
        fresh = E.Var(var.name, var.dtype, var.pointer, var.is_size_var, span=var.span)
        shifted = fresh if E.is_const_int(start, 0) else E.Add(fresh, start)
        zero = E.const(0, var.dtype)
        piece = S.For(
            fresh,
            zero,
            extent,
            loop.kind,
            fresh_copy(body, {var: shifted}),
            loop.thread_binding,
            loop.annotations,
            loop.step,
            span=loop.span,
        )
        self.analyzer.bind(fresh, Range(zero, extent))
        inner: S.Stmt = self.generic_visit(piece)
        return inner


@dataclass(frozen=True)
class LoopPartition(FunctionPass):
    name = "loop-partition"
    expects = Dialect.TIR
    leaves = Dialect.TIR

    partition_const_loop: bool = False
    no_unroll_loop_with_extent_one: bool = False

    def run_function(self, func: PrimFunc) -> PrimFunc:
        analyzer = Analyzer()
        body = _Partitioner(self, analyzer).visit(func.body)
        body = _LikelyRemover().visit(body)
        return func if body is func.body else dataclasses.replace(func, body=body)

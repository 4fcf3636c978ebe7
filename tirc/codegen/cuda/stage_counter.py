"""A loop's `floormod(k + c, s)` as a counter the loop carries, for a divisor s that is not a
power of two: the stage of a 3-deep software pipeline, which nvcc would otherwise compute by a
multiply-high division in every iteration (about ten instructions on sm_90; a power of two is
one AND, and is left alone). The counter starts at `floormod(min + c, s)` and steps by one,
wrapping at s, at the end of each iteration, so it equals the expression in every iteration of
a loop of step 1 whose body never skips its end (no `continue`):

    for (int k = 0; k < 126; ++k) {            int k_stage = 2;
        int v = (k + 2) % 3 * 4096;       ->   for (int k = 0; k < 126; ++k) {
        ...                                        int v = k_stage * 4096;
    }                                              ...
                                                   k_stage = k_stage == 2 ? 0 : k_stage + 1;
                                               }
"""

from __future__ import annotations

from dataclasses import dataclass

from tirc.ir import expr as E
from tirc.ir import stmt as S
from tirc.ir.functor import Mutator, walk


@dataclass(frozen=True)
class StageCounter:
    """The counter standing for `floormod(loop_var + offset, divisor)` in one loop."""

    var: E.Var
    offset: int
    divisor: int

    def start(self, loop_min: E.PrimExpr) -> E.PrimExpr:
        """Its value in the first iteration."""
        if isinstance(loop_min, E.IntImm):
            return E.IntImm((loop_min.value + self.offset) % self.divisor, self.var.dtype)
        first = E.Add(loop_min, E.IntImm(self.offset, loop_min.dtype))
        return E.FloorMod(first, E.IntImm(self.divisor, loop_min.dtype))


def stage_counters(loop: S.For) -> tuple[list[StageCounter], S.Stmt]:
    """The counters `loop` carries and its body reading them, or no counter and the body as it
    is where the loop does not step by one, runs on threads or lanes, or may `continue`."""
    if (
        loop.kind is not S.ForKind.SERIAL
        or not (loop.step is None or E.is_const_int(loop.step, 1))
        or _continues(loop.body)
    ):
        return [], loop.body
    rewriter = _Counters(loop.loop_var)
    body = rewriter.visit(loop.body)
    return list(rewriter.counters.values()), body


def _continues(body: S.Stmt) -> bool:
    found = False

    def visit(node: object) -> None:
        nonlocal found
        found = found or isinstance(node, S.Continue)

    walk(body, visit)
    return found


def _offset(value: E.PrimExpr, var: E.Var) -> int | None:
    """c where `value` is `var + c`, `c + var`, `var - (-c)` or `var` itself (c = 0)."""
    if value is var:
        return 0
    if isinstance(value, E.Sub) and value.a is var and isinstance(value.b, E.IntImm):
        return -value.b.value
    if isinstance(value, E.Add):
        if value.a is var and isinstance(value.b, E.IntImm):
            return value.b.value
        if value.b is var and isinstance(value.a, E.IntImm):
            return value.a.value
    return None


class _Counters(Mutator):
    def __init__(self, var: E.Var) -> None:
        self.var = var
        self.counters: dict[tuple[int, int], StageCounter] = {}  # (offset mod s, s)

    def visit_FloorMod(self, node: E.FloorMod) -> E.PrimExpr:
        offset = _offset(node.a, self.var)
        divisor = node.b.value if isinstance(node.b, E.IntImm) else 0
        if offset is None or divisor < 3 or divisor & (divisor - 1) == 0:
            return self.generic_visit(node)
        key = (offset % divisor, divisor)
        if key not in self.counters:
            name = f"{self.var.name}_stage" + (f"_{key[0]}" if key[0] else "")
            var = E.Var(name, self.var.dtype)
            self.counters[key] = StageCounter(var, key[0], divisor)
        return self.counters[key].var

"""unroll-loop: loops marked `T.unroll`, and small loop nests under
`pragma_auto_unroll_max_step`, are replaced by one copy of their body per iteration.

Expects tir; leaves tir without `pragma_auto_unroll_max_step` / `pragma_unroll_explicit`
(as loop annotations, or as `T.attr` around a loop as TVM writes them). A serial loop is
unrolled automatically when its constant extent times the statements its body runs is at
most `auto_max_step` (or its extent at most `auto_max_extent`), no loop inside it stays a
loop, and at most `auto_max_depth` unrolled loops are nested; with `unroll_local_access`, also
a loop whose variable indexes a local or warp buffer (so that its accesses become registers).
With `auto_max_extent = 1` a loop of one iteration is unrolled whatever its body holds. With
`explicit_unroll = false` the loops chosen are only marked `T.unroll`:

    for j in T.unroll(2):          A[0] = B[0]
        A[j] = B[j]          ->    A[1] = B[1]
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from tirc.ir import expr as E
from tirc.ir import stmt as S
from tirc.ir.function import PrimFunc
from tirc.ir.functor import uses_var, walk
from tirc.transform.fresh_copy import fresh_copy
from tirc.transform.pass_base import Dialect, FunctionPass

MAX_STEP_KEY = "pragma_auto_unroll_max_step"
EXPLICIT_KEY = "pragma_unroll_explicit"


@dataclass
class _Count:
    steps: int = 0  # statements one execution runs
    unrolled_depth: int = 0
    loop_depth: int = 0  # loops that stay loops


class _Unroller:
    def __init__(self, options: UnrollLoop):
        self.max_step = options.auto_max_step
        self.max_depth = options.auto_max_depth
        self.max_extent = options.auto_max_extent
        self.explicit = options.explicit_unroll
        self.local_access = options.unroll_local_access

    def visit(self, stmt: S.Stmt) -> tuple[S.Stmt, _Count]:
        method = getattr(self, f"visit_{type(stmt).__name__}", None)
        if method is not None:
            return method(stmt)
        return stmt, _Count(steps=1)

    def visit_SeqStmt(self, node: S.SeqStmt) -> tuple[S.Stmt, _Count]:
        total = _Count()
        stmts = []
        for stmt in node.stmts:
            new, count = self.visit(stmt)
            stmts.append(new)
            total.steps += count.steps
            total.unrolled_depth = max(total.unrolled_depth, count.unrolled_depth)
            total.loop_depth = max(total.loop_depth, count.loop_depth)
        if all(a is b for a, b in zip(stmts, node.stmts, strict=False)):
            return node, total
        return S.seq(*stmts), total

    def visit_IfThenElse(self, node: S.IfThenElse) -> tuple[S.Stmt, _Count]:
        then, count = self.visit(node.then_case)
        other, other_count = (
            (None, _Count()) if node.else_case is None else self.visit(node.else_case)
        )
        count = _Count(
            count.steps + other_count.steps,
            max(count.unrolled_depth, other_count.unrolled_depth),
            max(count.loop_depth, other_count.loop_depth),
        )
        if then is node.then_case and other is node.else_case:
            return node, count
        return dataclasses.replace(node, then_case=then, else_case=other), count

    def visit_AttrStmt(self, node: S.AttrStmt) -> tuple[S.Stmt, _Count]:
        if node.key in (MAX_STEP_KEY, EXPLICIT_KEY) and isinstance(node.value, E.IntImm):
            saved = self.max_step, self.explicit
            if node.key == MAX_STEP_KEY:
                self.max_step = node.value.value
            else:
                self.explicit = bool(node.value.value)
            body, count = self.visit(node.body)
            self.max_step, self.explicit = saved
            return body, count
        body, count = self.visit(node.body)
        return (node if body is node.body else dataclasses.replace(node, body=body)), count

    def visit_While(self, node: S.While) -> tuple[S.Stmt, _Count]:
        body, count = self.visit(node.body)
        count.loop_depth += 1
        return (node if body is node.body else dataclasses.replace(node, body=body)), count

    def visit_For(self, node: S.For) -> tuple[S.Stmt, _Count]:
        pragmas = {k: v for k, v in node.annotations.items if k in (MAX_STEP_KEY, EXPLICIT_KEY)}
        if not pragmas:
            return self.decide(node)
        # a loop's own pragmas govern it and the loops inside it, as TVM's T.attr around it
        saved = self.max_step, self.explicit
        self.max_step = _int(pragmas.get(MAX_STEP_KEY), self.max_step)
        self.explicit = bool(_int(pragmas.get(EXPLICIT_KEY), int(self.explicit)))
        kept = node.annotations.remove(MAX_STEP_KEY).remove(EXPLICIT_KEY)
        try:
            return self.decide(dataclasses.replace(node, annotations=kept))
        finally:
            self.max_step, self.explicit = saved

    def decide(self, node: S.For) -> tuple[S.Stmt, _Count]:
        body, count = self.visit(node.body)
        loop = node if body is node.body else dataclasses.replace(node, body=body)
        extent = node.extent.value if isinstance(node.extent, E.IntImm) else -1
        unroll = (
            node.kind is S.ForKind.SERIAL
            and extent >= 0
            and count.loop_depth == 0
            and count.unrolled_depth <= self.max_depth
            and (extent * count.steps <= self.max_step or extent <= self.max_extent)
        )
        if node.kind is S.ForKind.UNROLLED and extent >= 0:
            unroll = True
        if self.local_access and extent > 0 and indexes_local(body, node.loop_var):
            unroll = True
        # a loop of one iteration goes whatever its body holds, where the extent limit is 1
        single = 0 <= extent <= self.max_extent == 1
        if not unroll:
            count.loop_depth += 1
            return (unrolled(loop, extent) if single else loop), count
        count.steps *= extent
        count.unrolled_depth += 1
        if not self.explicit and not single:
            return dataclasses.replace(loop, kind=S.ForKind.UNROLLED), count
        return unrolled(loop, extent), count


def _int(value: object, default: int) -> int:
    if isinstance(value, E.IntImm):
        return value.value
    if isinstance(value, int):
        return int(value)
    return default


def indexes_local(body: S.Stmt, var: E.Var) -> bool:
    """Whether `var` appears in an index of a local or warp buffer's load or store."""
    found: list[bool] = []

    def check(node: object) -> None:
        if isinstance(node, (E.BufferLoad, S.BufferStore)) and _is_local(node.buffer.scope):
            if any(uses_var(index, var) for index in node.indices):
                found.append(True)

    walk(body, check)
    return bool(found)


def _is_local(scope: str) -> bool:
    rank = scope.split(".", 1)[0]
    return rank in ("local", "warp")


def unrolled(loop: S.For, extent: int) -> S.Stmt:
    """The iterations of `loop` one after another; the first reads `min` itself, as TVM's
    `min + 0` folds."""
    if extent == 0:
        return S.Evaluate(E.IntImm(0))
    copies = []
    for k in range(extent):
        value: E.PrimExpr
        if isinstance(loop.min, E.IntImm):
            value = E.IntImm(loop.min.value + k, loop.loop_var.dtype)
        elif k == 0:
            value = loop.min
        else:
            value = E.Add(loop.min, E.IntImm(k, loop.loop_var.dtype))
        copies.append(fresh_copy(loop.body, {loop.loop_var: value}))
    return S.seq(*copies)


@dataclass(frozen=True)
class UnrollLoop(FunctionPass):
    name = "unroll-loop"
    expects = Dialect.TIR
    leaves = Dialect.TIR
    auto_max_step: int = 0
    auto_max_depth: int = 8
    auto_max_extent: int = 0
    explicit_unroll: bool = True
    unroll_local_access: bool = False

    def run_function(self, func: PrimFunc) -> PrimFunc:
        body, _ = _Unroller(self).visit(func.body)
        return func if body is func.body else dataclasses.replace(func, body=body)

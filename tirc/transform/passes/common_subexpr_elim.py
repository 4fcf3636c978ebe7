"""common-subexpr-elim: an integer computation written more than once is computed once, into
a `cse_vN` variable bound just before the first statement that needs it, at the innermost
statement enclosing all its uses (above an `if` whose branches both use it; out of a loop when
it does not depend on the loop).

Eligible are scalar integer computations (`+ - * / % // min max`) made of variables and
constants only: no loads, calls, vectors or `Let`-bound variables. The largest repeated one
is taken first and the count redone, so that a part repeated only inside it is not taken
unless it is also used elsewhere; variables are numbered from the smallest computation up,
first appearance breaking ties, as TVM 0.27 numbers them. Expects tir; leaves the same:

    for i, j in T.grid(8, 8):                       for i, j in T.grid(8, 8):
        A[i * 64 + j] = B[i * 64 + j]       ->          cse_v1: T.let[T.int32] = i * 64 + j
                                                        A[cse_v1] = B[cse_v1]
"""

from __future__ import annotations

import dataclasses
from collections.abc import Hashable
from dataclasses import dataclass

from tirc.ir import expr as E
from tirc.ir import stmt as S
from tirc.ir.function import PrimFunc
from tirc.ir.functor import Mutator, Visitor, child_fields
from tirc.ir.structural import expr_key
from tirc.transform.pass_base import Dialect, FunctionPass

_ARITHMETIC = (E.Add, E.Sub, E.Mul, E.Div, E.Mod, E.FloorDiv, E.FloorMod, E.Min, E.Max)


def _size(expr: E.PrimExpr) -> int:
    """Nodes in `expr`, or 0 when it is not an eligible computation."""
    if isinstance(expr, (E.Var, E.IntImm)):
        return 1
    if isinstance(expr, _ARITHMETIC) and expr.dtype.is_scalar and expr.dtype.is_integer:  # type: ignore[attr-defined]
        a, b = _size(expr.a), _size(expr.b)  # type: ignore[attr-defined]
        return 0 if a == 0 or b == 0 else 1 + a + b
    return 0


@dataclass
class _Uses:
    expr: E.PrimExpr
    size: int
    first: int  # order of first appearance
    paths: list[tuple[S.Stmt, ...]]  # the statements from the root to each use


class _Collector(Visitor):
    """Every eligible computation with the statement path of each of its uses."""

    def __init__(self, banned: set[E.Var]):
        self.path: list[S.Stmt] = []
        self.uses: dict[Hashable, _Uses] = {}
        self.banned = banned
        self.seen = 0

    def visit(self, node: object) -> None:
        if isinstance(node, S.Stmt):
            self.path.append(node)
            super().visit(node)
            self.path.pop()
            return
        if isinstance(node, E.PrimExpr) and not isinstance(node, (E.Var, E.IntImm)):
            self.seen += 1
            size = _size(node)
            if size and not self.uses_banned(node):
                key = expr_key(node)
                entry = self.uses.setdefault(key, _Uses(node, size, self.seen, []))
                entry.paths.append(tuple(self.path))
        super().visit(node)

    def uses_banned(self, expr: E.PrimExpr) -> bool:
        if isinstance(expr, E.Var):
            return expr in self.banned
        return any(
            self.uses_banned(getattr(expr, name))
            for name in child_fields(type(expr))
            if isinstance(getattr(expr, name), E.PrimExpr)
        )


def _let_vars(body: S.Stmt) -> set[E.Var]:
    found: set[E.Var] = set()

    class _Lets(Visitor):
        def visit_Let(self, node: E.Let) -> None:
            found.add(node.var)
            self.generic_visit(node)

    _Lets().visit(body)
    return found


class _Replace(Mutator):
    def __init__(self, key: Hashable, var: E.Var):
        self.key, self.var = key, var

    def visit_Bind(self, node: S.Bind) -> S.Bind:
        return node if node.var is self.var else self.generic_visit(node)  # type: ignore[return-value]

    def visit(self, node: object) -> object:
        if isinstance(node, E.PrimExpr) and _size(node) > 1 and expr_key(node) == self.key:
            return self.var
        return super().visit(node)


class _Insert(Mutator):
    """Puts `bind` before the child of `home` that holds the first use, or before `home`
    itself when it is not a sequence (spliced into the sequence around it, if any)."""

    def __init__(self, home: S.Stmt, first_child: S.Stmt | None, bind: S.Bind):
        self.home, self.first_child, self.bind = home, first_child, bind

    def visit(self, node: object) -> object:
        if isinstance(node, S.SeqStmt) and not isinstance(self.home, S.SeqStmt):
            at = next((i for i, s in enumerate(node.stmts) if s is self.home), None)
            if at is not None:
                return S.SeqStmt(node.stmts[:at] + (self.bind,) + node.stmts[at:])
        if node is self.home:
            if isinstance(node, S.SeqStmt):
                at = next(i for i, s in enumerate(node.stmts) if s is self.first_child)
                return S.SeqStmt(node.stmts[:at] + (self.bind,) + node.stmts[at:])
            return S.SeqStmt((self.bind, node))  # type: ignore[arg-type]
        return super().visit(node)


def _eliminate_once(
    body: S.Stmt, banned: set[E.Var], order: dict[Hashable, int], made: list[tuple[int, int, E.Var]]
) -> S.Stmt | None:
    """`body` with its largest repeated computation bound once, or None when none repeats."""
    collector = _Collector(banned)
    collector.visit(body)
    repeated = [u for u in collector.uses.values() if len(u.paths) > 1]
    if not repeated:
        return None
    chosen = max(repeated, key=lambda u: (u.size, -order.get(expr_key(u.expr), u.first)))
    common = list(chosen.paths[0])
    for path in chosen.paths[1:]:
        length = 0
        for a, b in zip(common, path, strict=False):
            if a is not b:
                break
            length += 1
        del common[length:]
    home = common[-1]
    first_child = chosen.paths[0][len(common)] if len(chosen.paths[0]) > len(common) else None
    var = E.Var("cse_v", chosen.expr.dtype)  # type: ignore[attr-defined]
    made.append((chosen.size, order.get(expr_key(chosen.expr), len(order)), var))
    inserted = _Insert(home, first_child, S.Bind(var, chosen.expr)).visit(body)
    return _Replace(expr_key(chosen.expr), var).visit(inserted)  # type: ignore[no-any-return]


@dataclass(frozen=True)
class CommonSubexprElim(FunctionPass):
    name = "common-subexpr-elim"
    expects = Dialect.TIR
    leaves = Dialect.TIR

    def run_function(self, func: PrimFunc) -> PrimFunc:
        banned = _let_vars(func.body)
        original = _Collector(banned)
        original.visit(func.body)
        order = {key: uses.first for key, uses in original.uses.items()}
        body: S.Stmt = func.body
        made: list[tuple[int, int, E.Var]] = []  # (size, first appearance, variable)
        while (new := _eliminate_once(body, banned, order, made)) is not None:
            body = new
        if not made:
            return func
        renames = {
            var: E.Var(f"cse_v{number}", var.dtype)
            for number, (_, _, var) in enumerate(sorted(made, key=lambda m: m[:2]), start=1)
        }
        body = _Rename(renames).visit(body)
        return dataclasses.replace(func, body=body)


class _Rename(Mutator):
    def __init__(self, renames: dict[E.Var, E.Var]):
        self.renames = renames

    def visit_Var(self, node: E.Var) -> E.Var:
        return self.renames.get(node, node)

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

A thread launch's extent counts once (its iteration variable's domain repeats it). A
computation used in a launch extent is bound above the outermost launch around it, where the
host computes it, and not at all when it needs a variable defined inside that launch:

    by = T.launch_thread("blockIdx.y", 4)            cse_v1: T.let[T.int32] = (n + 31) // 32
    bx = T.launch_thread("blockIdx.x",       ->      by = T.launch_thread("blockIdx.y", 4)
                         (n + 31) // 32)             bx = T.launch_thread("blockIdx.x", cse_v1)
    A[bx] = (n + 31) // 32 * 2                       A[bx] = cse_v1 * 2

One walk records every use and every statement position; the choices are then made on that
record (the statement tree grows by the new bindings, the uses inside a replaced computation
drop out) and one rewrite applies them all, so the pass is linear in the program times its
depth rather than in the program times the number of variables made.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any

from tirc.ir import expr as E
from tirc.ir import stmt as S
from tirc.ir.function import PrimFunc
from tirc.ir.functor import Mutator, Visitor, child_fields
from tirc.ir.structural import expr_key
from tirc.transform.pass_base import Dialect, FunctionPass

_ARITHMETIC = (E.Add, E.Sub, E.Mul, E.Div, E.Mod, E.FloorDiv, E.FloorMod, E.Min, E.Max)
_LAUNCH_KEYS = ("thread_extent", "virtual_thread")
_TWO_OPERANDS = (E.BinaryOp, E.CompareOp, E.LogicalOp)  # fields a and b, nothing else to walk


def _is_launch(stmt: S.Stmt) -> bool:
    return isinstance(stmt, S.AttrStmt) and stmt.key in _LAUNCH_KEYS


class _Facts:
    """Per expression object, computed once from its operands' (so a collection is linear in
    the program, not in the program times its depth): its size in nodes (0 when it is not an
    eligible computation), its key (an integer, the same for computations `expr_key` finds
    equal: hashing it does not walk the computation), and whether a banned variable occurs
    in it."""

    def __init__(self, banned: set[E.Var]):
        self.banned = banned  # `Let`-bound variables
        self.memo: dict[int, tuple[object, tuple[int, Hashable, bool]]] = {}
        self.keys: dict[Hashable, int] = {}  # (class, operand keys) or a leaf's key -> key

    def _key(self, parts: Hashable) -> int:
        return self.keys.setdefault(parts, len(self.keys))

    def of(self, expr: object) -> tuple[int, Hashable, bool]:
        known = self.memo.get(id(expr))
        if known is not None:
            return known[1]
        facts: tuple[int, Hashable, bool]
        if isinstance(expr, E.Var):
            facts = (1, self._key(expr_key(expr)), expr in self.banned)
        elif isinstance(expr, E.IntImm):
            facts = (1, self._key(expr_key(expr)), False)
        elif isinstance(expr, _ARITHMETIC) and expr.dtype.is_scalar and expr.dtype.is_integer:
            size_a, key_a, banned_a = self.of(expr.a)
            size_b, key_b, banned_b = self.of(expr.b)
            size = 0 if size_a == 0 or size_b == 0 else 1 + size_a + size_b
            key = self._key((type(expr).__name__, key_a, key_b))
            facts = (size, key, banned_a or banned_b)
        else:
            facts = (0, None, False)
        self.memo[id(expr)] = (expr, facts)  # the entry keeps `expr` alive: ids stay unique
        return facts


def _holds_exprs(value: object) -> bool:
    """Whether a statement's field is walked for expressions (not a name, kind or None)."""
    return isinstance(value, (E.PrimExpr, tuple)) or dataclasses.is_dataclass(value)


class _Slot:
    """A statement position: `kids` are the statements under it, in order (a sequence's
    items, or a For's body, an if's branches...). Bindings become slots of their own, and a
    statement that is not in a sequence gets one around it (a `wrapper`) to take them."""

    __slots__ = ("bind", "kids", "parent", "stmt")

    def __init__(self, stmt: S.Stmt | None, parent: _Slot | None):
        self.stmt = stmt  # None: a new sequence (a wrapper) or the root holder
        self.parent = parent
        self.kids: list[_Slot] = []
        self.bind: tuple[Hashable, E.PrimExpr] | None = None  # (key, value): a new binding

    @property
    def is_seq(self) -> bool:
        if self.stmt is None:  # a wrapper; not the root holder, not a binding
            return self.parent is not None and self.bind is None
        return isinstance(self.stmt, S.SeqStmt)


@dataclass(slots=True)
class _Use:
    key: Hashable
    slot: _Slot
    kids: list[int]  # the uses directly inside this one
    in_extent: bool  # in a launch extent
    live: bool = True


class _Record(Visitor):
    """One walk: the statement slots, and every eligible computation's uses in order of
    appearance, each under its statement and nested in the use it is part of."""

    def __init__(self, facts: _Facts):
        self.facts = facts
        self.uses: list[_Use] = []
        self.by_key: dict[Hashable, list[int]] = {}
        self.first: dict[Hashable, tuple[int, int, E.PrimExpr]] = {}  # key: (size, first, expr)
        self.seen = 0
        self.slot: _Slot | None = None
        self.enclosing: list[int] = []  # the uses being walked, innermost last
        self.in_extent = False

    def record(self, stmt: S.Stmt, parent: _Slot) -> _Slot:
        slot = _Slot(stmt, parent)
        saved = self.slot
        for name in child_fields(type(stmt)):
            value = getattr(stmt, name)
            if _is_launch(stmt) and name == "node":
                continue  # the iteration variable's domain repeats the extent
            if isinstance(value, S.Stmt):
                slot.kids.append(self.record(value, slot))
            elif isinstance(stmt, S.SeqStmt):
                slot.kids.extend(self.record(item, slot) for item in value)
            elif _holds_exprs(value):
                self.slot, self.in_extent = slot, _is_launch(stmt) and name == "value"
                self.visit(value)
                self.slot, self.in_extent = saved, False
        return slot

    def add(self, key: Hashable, slot: _Slot, in_extent: bool) -> int:
        index = len(self.uses)
        self.uses.append(_Use(key, slot, [], in_extent))
        self.by_key.setdefault(key, []).append(index)
        if self.enclosing:
            self.uses[self.enclosing[-1]].kids.append(index)
        return index

    def visit(self, node: object) -> None:
        if not isinstance(node, E.PrimExpr):
            super().visit(node)
            return
        if isinstance(node, (E.Var, E.IntImm)):
            return
        self.seen += 1
        if isinstance(node, E.Let):  # its variable is defined here, before any use of it
            self.facts.banned.add(node.var)
        size, key, banned = self.facts.of(node)
        if size and not banned:
            self.first.setdefault(key, (size, self.seen, node))
            assert self.slot is not None
            self.enclosing.append(self.add(key, self.slot, self.in_extent))
            self._operands(node)
            self.enclosing.pop()
        else:
            self._operands(node)

    def _operands(self, node: E.PrimExpr) -> None:
        if isinstance(node, _TWO_OPERANDS):  # the most common nodes, without the generic walk
            self.visit(node.a)
            self.visit(node.b)
        else:
            self.generic_visit(node)

    def copy_parts(self, expr: E.PrimExpr, slot: _Slot) -> None:
        """Records the computations inside `expr` (not itself) as uses at `slot`."""
        assert isinstance(expr, E.BinaryOp)  # a computation of size > 1 is arithmetic
        for operand in (expr.a, expr.b):
            size, key, _ = self.facts.of(operand)
            if size > 1:
                self.enclosing.append(self.add(key, slot, False))
                self.copy_parts(operand, slot)
                self.enclosing.pop()


def _ancestors(slot: _Slot) -> list[_Slot]:
    chain = []
    node: _Slot | None = slot
    while node is not None:
        chain.append(node)
        node = node.parent
    chain.reverse()
    return chain  # root first


def _common(slots: list[_Slot]) -> list[_Slot]:
    """The path from the root to the innermost slot enclosing all of `slots`."""
    path = _ancestors(slots[0])
    depth = {id(s): i for i, s in enumerate(path)}
    keep = len(path)
    for slot in slots[1:]:
        node: _Slot | None = slot
        while node is not None and id(node) not in depth:
            node = node.parent
        assert node is not None
        keep = min(keep, depth[id(node)] + 1)
    return path[:keep]


def _defined_in(stmt: S.Stmt) -> set[E.Var]:
    found: set[E.Var] = set()

    class _Defs(Visitor):
        def visit(self, node: object) -> None:
            if isinstance(node, S.For):
                found.add(node.loop_var)
            elif isinstance(node, S.Bind):
                found.add(node.var)
            elif isinstance(node, S.IterVar):
                found.add(node.var)
            elif isinstance(node, S.AllocBuffer):
                found.add(node.buffer.data)
            elif isinstance(node, E.Let):
                found.add(node.var)
            super().visit(node)

    _Defs().visit(stmt)
    return found


def _free_vars(expr: object, out: set[E.Var]) -> set[E.Var]:
    if isinstance(expr, E.Var):
        out.add(expr)
    elif isinstance(expr, _ARITHMETIC):
        _free_vars(expr.a, out)
        _free_vars(expr.b, out)
    return out


def _insert_before(target: _Slot, bind: _Slot) -> None:
    parent = target.parent
    assert parent is not None
    if not parent.is_seq:  # give the statement a sequence of its own to take the binding
        wrapper = _Slot(None, parent)
        parent.kids[parent.kids.index(target)] = wrapper
        wrapper.kids.append(target)
        target.parent = parent = wrapper
    bind.parent = parent
    parent.kids.insert(parent.kids.index(target), bind)


class _Plan:
    """Decides every binding on the record of one walk."""

    def __init__(self, body: S.Stmt, facts: _Facts):
        self.record = _Record(facts)
        self.root = _Slot(None, None)  # holds the body
        self.root.kids.append(self.record.record(body, self.root))
        self.defined: dict[int, set[E.Var]] = {}
        self.made: list[tuple[int, int, Hashable]] = []  # (size, first appearance, key)

    def decide(self) -> list[tuple[int, int, Hashable]]:
        record = self.record
        for key, (size, first, expr) in sorted(
            record.first.items(), key=lambda item: (-item[1][0], item[1][1])
        ):
            live = [i for i in record.by_key[key] if record.uses[i].live]
            if len(live) < 2:
                continue
            path = _common([record.uses[i].slot for i in live])
            target = self._target(path, live, expr)
            if target is None:
                continue
            bind = _Slot(None, None)
            bind.bind = (key, expr)
            _insert_before(target, bind)
            for index in live:
                self._drop(index)
            record.copy_parts(expr, bind)
            self.made.append((size, first, key))
        return self.made

    def _target(self, path: list[_Slot], live: list[int], expr: E.PrimExpr) -> _Slot | None:
        """The slot the binding goes before, or None when it cannot be made."""
        uses = self.record.uses
        if any(uses[i].in_extent for i in live):
            launch = next((s for s in path if s.stmt is not None and _is_launch(s.stmt)), None)
            if launch is not None:  # the host computes launch extents: bind above the kernel
                assert launch.stmt is not None
                inside = self.defined.get(id(launch))
                if inside is None:
                    inside = self.defined[id(launch)] = _defined_in(launch.stmt)
                if _free_vars(expr, set()) & inside:
                    return None
                return launch
        home = path[-1]
        if not home.is_seq:
            return home
        below = len(path)
        firsts = {}
        for index in live:
            chain = _ancestors(uses[index].slot)
            firsts[id(chain[below])] = chain[below]
        return next(kid for kid in home.kids if id(kid) in firsts)

    def _drop(self, index: int) -> None:
        """The use is replaced: it and the uses inside it are gone."""
        pending = [index]
        while pending:
            use = self.record.uses[pending.pop()]
            if use.live:
                use.live = False
                pending.extend(use.kids)


class _Rewrite(Mutator):
    """Every computation bound replaced by its variable, outermost first."""

    def __init__(self, facts: _Facts, variables: dict[Hashable, E.Var]):
        self.facts, self.variables = facts, variables

    def visit(self, node: Any) -> Any:
        if isinstance(node, E.PrimExpr) and not isinstance(node, (E.Var, E.IntImm)):
            size, key, _ = self.facts.of(node)
            if size > 1:
                var = self.variables.get(key)
                if var is not None:
                    return var
        return super().visit(node)

    def emit(self, slot: _Slot) -> S.Stmt:
        if slot.bind is not None:
            key, value = slot.bind
            return S.Bind(self.variables[key], self.generic_visit(value))
        kids = [self.emit(kid) for kid in slot.kids]
        stmt = slot.stmt
        if stmt is None:
            return S.SeqStmt(tuple(kids))
        if isinstance(stmt, S.SeqStmt):  # its items, with the bindings put among them
            same = len(kids) == len(stmt.stmts) and all(
                a is b for a, b in zip(kids, stmt.stmts, strict=True)
            )
            return stmt if same else dataclasses.replace(stmt, stmts=tuple(kids))
        changes: dict[str, Any] = {}  # field name -> new value, fields found by name
        at = 0
        for name in child_fields(type(stmt)):
            value = getattr(stmt, name)
            if isinstance(value, S.Stmt):  # a statement under it: its slot, in field order
                new: object = kids[at]
                at += 1
            elif _holds_exprs(value):
                new = self.visit(value)
            else:
                continue
            if new is not value:
                changes[name] = new
        return dataclasses.replace(stmt, **changes) if changes else stmt


@dataclass(frozen=True)
class CommonSubexprElim(FunctionPass):
    name = "common-subexpr-elim"
    expects = Dialect.TIR
    leaves = Dialect.TIR

    def run_function(self, func: PrimFunc) -> PrimFunc:
        facts = _Facts(set())  # the walk adds each `Let`'s variable as it meets it
        plan = _Plan(func.body, facts)
        made = plan.decide()
        if not made:
            return func
        variables = {
            key: E.Var(f"cse_v{number}", plan.record.first[key][2].dtype)
            for number, (_, _, key) in enumerate(sorted(made, key=lambda m: m[:2]), start=1)
        }
        body = _Rewrite(facts, variables).emit(plan.root.kids[0])
        return dataclasses.replace(func, body=body)

"""A lean LALR(1) driver over the tables Lark computes from grammar/tir.lark.

Lark analyzes the grammar (tirc.text.syntax.tables ships the result); this loop only runs
the tables. Each state maps a symbol to a shift target (an int) or a Reduction, so a step is
one dict lookup and no rule hashing; reductions shape the children as Lark would and call
the builder's method for the rule.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from tirc.text.syntax.lexer import Token

END = "$END"


@dataclass(frozen=True, slots=True)
class Reduction:
    size: int
    build: Callable[[list[Any]], Any] | None  # None: the value is the one child's (`?rule`)
    origin: str


Build = Callable[[list[Any]], Any]


def rule_callback(shape: list[Any], builder: object) -> Build | None:
    """What reducing a rule calls on its children, shaped as Lark shapes them: the children
    kept (punctuation dropped, `_rule` children spliced in, None for an absent `[part]`),
    then for a `?rule` the one child itself, else the builder's method for the rule.
    None when the value is the one child's, unchanged (a `?rule: item`)."""
    _, name, size, expand_single, include, append_none = shape
    if expand_single and include is None and size == 1:
        return None
    build: Build = getattr(builder, name, None) or Spliced
    if expand_single:
        build = single_child_or(build)
    if include is not None:
        build = keeping(build, [tuple(item) for item in include], append_none)
    return build


def single_child_or(build: Build) -> Build:
    def expand(children: list[Any]) -> Any:
        return children[0] if len(children) == 1 else build(children)

    return expand


def keeping(build: Build, include: list[tuple[int, bool, int]], append_none: int) -> Build:
    """`build` of the children listed in `include`: [(index, splice, nones before)]."""
    nones_after = [None] * append_none

    def keep(children: list[Any]) -> Any:
        kept: list[Any] = []
        for index, splice, nones in include:
            if nones:
                kept += [None] * nones
            if not splice:
                kept.append(children[index])
            elif kept:
                kept += children[index].children
            else:  # a left-recursive repetition grows its own list: no copy
                kept = children[index].children
        if nones_after:
            kept += nones_after
        return build(kept)

    return keep


class Spliced:
    """The value of a rule without a builder method: a `_rule` or a `x*` repetition, whose
    children the rule that contains it splices into its own."""

    __slots__ = ("children",)

    def __init__(self, children: list[Any]):
        self.children = children


class UnexpectedToken(Exception):
    def __init__(self, token: Token, expected: set[str]):
        super().__init__(f"unexpected {token.type}")
        self.token = token
        self.expected = expected


class Driver:
    def __init__(self, states: dict[int, dict[str, Any]], start: int, end: int):
        self.states = states
        self.start = start
        self.end = end
        # (state below, rule reduced, token kind) -> the top state after the goto and the
        # chain of `?rule: item` reductions the token causes there (an expression operand
        # passes through a dozen precedence levels): the chain depends on nothing else, since
        # a unit reduction only replaces the top state by the goto of the one below it.
        self.gotos: dict[tuple[int, str, str], int] = {}

    def goto(self, below: int, origin: str, kind: str) -> int:
        """The top state after reducing to `origin` above `below`, with `kind` next."""
        return self.unit_chain(below, self.states[below][origin], kind)

    def unit_chain(self, below: int, top: int, kind: str) -> int:
        """The top state once the `?rule: item` reductions `kind` causes are done."""
        states = self.states
        entry = states[top].get(kind)
        while entry is not None and entry.__class__ is not int and entry.build is None:
            top = states[below][entry.origin]
            entry = states[top].get(kind)
        return top

    @staticmethod
    def from_tables(tables: Mapping[str, Any], builder: object) -> Driver:
        """The driver of `tirc.text.syntax.tables`, reducing through `builder`'s methods."""
        reductions = [
            Reduction(shape[2], rule_callback(shape, builder), shape[0])
            for shape in tables["rules"]
        ]
        states = {
            state: {
                symbol: action if action >= 0 else reductions[~action]
                for symbol, action in row.items()
            }
            for state, row in enumerate(tables["states"])
        }
        return Driver(states, tables["start"], tables["end"])

    def accepts(self, state_stack: list[int], kind: str) -> bool:
        """Whether the token kind would be shifted, after the reductions it causes. LALR
        tables list lookaheads merged from every context a state is used in; this narrows
        them to those valid here."""
        stack = list(state_stack)
        states = self.states
        while True:
            entry = states[stack[-1]].get(kind)
            if entry is None:
                return False
            if entry.__class__ is int:
                return True
            del stack[len(stack) - entry.size :]
            goto = states[stack[-1]].get(entry.origin)
            if goto is None:
                return False
            stack.append(goto)
            if kind == END and stack[-1] == self.end:
                return True

    def expected(self, state_stack: list[int]) -> set[str]:
        candidates = [
            name for name in self.states[state_stack[-1]] if name.isupper() or name == END
        ]
        return {name for name in candidates if self.accepts(state_stack, name)}

    def parse(self, tokens: Iterable[Token]) -> Any:
        """The value of the start rule for a token stream that ends with `$END`."""
        states = self.states
        gotos = self.gotos
        goto = self.goto
        state_stack = [self.start]
        value_stack: list[Any] = []
        for token in tokens:
            kind = token.type
            if kind == END:
                return self.finish(token, state_stack, value_stack)
            while True:
                entry = states[state_stack[-1]].get(kind)
                if entry is None:
                    raise UnexpectedToken(token, self.expected(state_stack))
                if entry.__class__ is int:
                    state_stack.append(entry)
                    value_stack.append(token)
                    break
                build = entry.build
                if build is None:  # `?rule: item` right after a shift (gotos do the rest)
                    state_stack[-1] = self.unit_chain(state_stack[-2], state_stack[-1], kind)
                    continue
                size = entry.size
                if size == 1:  # most reductions (a name, a number, a list's first item)
                    value_stack[-1] = build([value_stack[-1]])
                    below = state_stack[-2]
                    goto_key = (below, entry.origin, kind)
                    top = gotos.get(goto_key)
                    if top is None:
                        top = gotos[goto_key] = goto(*goto_key)
                    state_stack[-1] = top
                    continue
                if size:
                    children = value_stack[-size:]
                    del state_stack[-size:]
                    del value_stack[-size:]
                else:
                    children = []
                value_stack.append(build(children))
                below = state_stack[-1]
                goto_key = (below, entry.origin, kind)
                top = gotos.get(goto_key)
                if top is None:
                    top = gotos[goto_key] = goto(*goto_key)
                state_stack.append(top)
        raise AssertionError("the token stream ended without $END")  # pragma: no cover

    def finish(self, token: Token, state_stack: list[int], value_stack: list[Any]) -> Any:
        """Reduce what is left at the end of the input, up to the start rule."""
        states = self.states
        while True:
            entry = states[state_stack[-1]].get(END)
            if entry is None or entry.__class__ is int:
                raise UnexpectedToken(token, self.expected(state_stack))
            size = entry.size
            if size:
                children = value_stack[-size:]
                del state_stack[-size:]
                del value_stack[-size:]
            else:
                children = []
            value = children[0] if entry.build is None else entry.build(children)
            value_stack.append(value)
            state_stack.append(states[state_stack[-1]][entry.origin])
            if state_stack[-1] == self.end:
                return value_stack[-1]

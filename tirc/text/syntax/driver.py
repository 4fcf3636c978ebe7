"""A lean LALR(1) driver over the tables Lark computes from grammar/tir.lark.

Lark analyzes the grammar (and caches the result); this loop only runs the tables. Each
state maps a symbol to a shift target (an int) or a Reduction, so a step is one dict lookup
and no rule hashing; reductions call Lark's tree-shaping callbacks, which call ours.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from tirc.text.syntax.lexer import Token

END = "$END"


@dataclass(frozen=True, slots=True)
class Reduction:
    size: int
    build: Callable[[list[Any]], Any] | None  # None: the value is the one child's (`?rule`)
    origin: str


def is_passthrough(rule: Any, callback: Callable[[list[Any]], Any]) -> bool:
    """Whether reducing `rule` hands its single child up unchanged (a `?rule: item`)."""
    if not rule.options.expand1 or rule.alias is not None or len(rule.expansion) != 1:
        return False
    if rule.expansion[0].name.startswith("_"):
        return False  # an inlined `_rule` child is spliced into its parent, not handed up
    probe = Token("PROBE", "", 0, 0)
    try:
        return callback([probe]) is probe
    except Exception:
        return False


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

    @staticmethod
    def from_lark(lark_parser: Any) -> Driver:
        """Tables and callbacks of a Lark(parser="lalr", transformer=...) instance."""
        from lark.parsers.lalr_analysis import Shift

        inner = lark_parser.parser.parser.parser
        table = inner.parse_table
        callbacks = inner.callbacks
        reductions: dict[int, Reduction] = {}
        states: dict[int, dict[str, Any]] = {}
        for state, actions in table.states.items():
            row: dict[str, Any] = {}
            for symbol, (action, argument) in actions.items():
                if action is Shift:
                    row[symbol] = argument
                else:
                    key = id(argument)
                    if key not in reductions:
                        callback = callbacks[argument]
                        build = None if is_passthrough(argument, callback) else callback
                        reductions[key] = Reduction(
                            len(argument.expansion), build, argument.origin.name
                        )
                    row[symbol] = reductions[key]
            states[state] = row
        return Driver(states, table.start_states["start"], table.end_states["start"])

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
                if build is None:  # `?rule: item`: the value stays, the state moves
                    state_stack[-1] = states[state_stack[-2]][entry.origin]
                    continue
                size = entry.size
                if size:
                    children = value_stack[-size:]
                    del state_stack[-size:]
                    del value_stack[-size:]
                else:
                    children = []
                value_stack.append(build(children))
                state_stack.append(states[state_stack[-1]][entry.origin])
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

"""Python's operator precedence, which decides the parentheses: a child is wrapped when it
binds more loosely than its parent, or equally loosely on the right: `a - (b - c)`."""

from __future__ import annotations

ATOM = 100  # names, literals, calls, subscripts
UNARY = 14  # -x, ~x
MULTIPLY = 13  # * / // %
ADD = 12  # + -
SHIFT = 11  # << >>
BIT_AND = 10
BIT_XOR = 9
BIT_OR = 8
COMPARE = 7  # < <= > >= == !=
NOT = 6
AND = 5
OR = 4
LOWEST = 0


def wrap(text: str, precedence: int, needed: int) -> str:
    """`text` in parentheses when its precedence is below `needed`."""
    return f"({text})" if precedence < needed else text


INFIX_PRECEDENCE: dict[str, int] = {
    "+": ADD,
    "-": ADD,
    "*": MULTIPLY,
    "/": MULTIPLY,
    "//": MULTIPLY,
    "%": MULTIPLY,
    "<<": SHIFT,
    ">>": SHIFT,
    "&": BIT_AND,
    "^": BIT_XOR,
    "|": BIT_OR,
    "<": COMPARE,
    "<=": COMPARE,
    ">": COMPARE,
    ">=": COMPARE,
    "==": COMPARE,
    "!=": COMPARE,
    "and": AND,
    "or": OR,
}
